//! Processor tests against the test core (`remoting::testing`): one file per request
//! family.

mod auth;
mod client;
mod offset;
mod pull;
mod retry;
mod route;
mod send;
mod transaction;
