//! Processor tests against the test core (`remoting::testing`): one file per request
//! family.

mod auth;
mod client;
mod groups;
mod offset;
mod pull;
mod query;
mod relay;
mod retry;
mod route;
mod send;
mod stats;
mod transaction;
