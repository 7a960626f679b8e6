//! Request processors, one module per request family. Each returns a response command (or
//! an error that `dispatch` maps to a code); none touches the socket.

pub(crate) mod admin;
pub(crate) mod auth;
pub(crate) mod broker_config;
pub(crate) mod client;
pub(crate) mod group;
pub(crate) mod offset;
pub(crate) mod pull;
pub(crate) mod query;
pub(crate) mod relay;
pub(crate) mod reply;
pub(crate) mod reset;
pub(crate) mod route;
pub(crate) mod send;
pub(crate) mod stats;
#[cfg(test)]
mod tests;
pub(crate) mod topic_admin;

use bytes::Bytes;
use serde::Serialize;

use crate::error::GatewayError;

/// Serialises a JSON body.
pub(crate) fn json_body<T: Serialize>(v: &T) -> Result<Bytes, GatewayError> {
    serde_json::to_vec(v)
        .map(Bytes::from)
        .map_err(|e| GatewayError::EncodeBody(e.to_string()))
}
