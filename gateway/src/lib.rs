//! Stratus gateway: a RocketMQ-compatible name server and broker whose messages live in
//! object storage. `main.rs` is thin; [`app::App`] composes everything.

pub mod app;
pub mod bench;
pub mod cli;
pub mod config;
mod dispatch;
mod error;
mod filter;
mod housekeeping;
mod lease;
mod locks;
mod metrics;
mod metrics_http;
mod net;
mod objects;
mod processor;
mod registry;
mod restore;
mod retention;
mod schedule;
mod shard;
mod topics;
mod transaction;
