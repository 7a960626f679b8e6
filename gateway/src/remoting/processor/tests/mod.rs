//! Processor tests against the test core (`remoting::testing`): one file per request
//! family.

mod client;
mod offset;
mod pull;
mod query;
mod retry;
mod route;
mod send;
mod transaction;
