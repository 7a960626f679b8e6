//! Stratus gateway: a RocketMQ-compatible name server and broker whose messages live in
//! object storage.
//!
//! Read top-down: [`app`] composes a node — the protocol-neutral core in [`node`] (storage,
//! meta, topics, shards), the RocketMQ front end in `remoting` (connections, dispatch,
//! processors, RocketMQ's re-stores), and the background services in `services`
//! (membership and leases, delay levels, timers, transaction checks, retention,
//! housekeeping, metrics). Data flows one way: `app` → `services` → `remoting` → `node`.
//! `main.rs` is thin.

pub mod app;
pub mod cli;
pub mod config;
mod error;
mod metrics;
pub mod node;
mod remoting;
mod services;
mod tls;
