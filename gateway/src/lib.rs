//! Stratus gateway: a RocketMQ- and Kafka-compatible name server and broker whose messages
//! live in object storage.
//!
//! Read top-down: [`app`] composes a node — the protocol-neutral core in [`node`] (storage,
//! meta, topics, shards), the RocketMQ front end in `remoting` (connections, dispatch,
//! processors, RocketMQ's re-stores), the Kafka front end in `kafka` (connections answered
//! in order, one module per API family, record conversion), and the background services in
//! `services` (membership and leases, delay levels, timers, transaction checks, retention,
//! housekeeping, metrics). Data flows one way: `app` → `services` → `remoting` | `kafka` →
//! `node`; the two front ends do not import each other.
//! `main.rs` is thin.

pub mod app;
pub mod cli;
pub mod config;
mod error;
mod kafka;
mod metrics;
pub mod node;
mod remoting;
mod services;
mod tls;
