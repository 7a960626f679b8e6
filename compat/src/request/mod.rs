//! Typed request and response headers and JSON bodies, one file per request family.
//!
//! Every header has `from_command(&RemotingCommand) -> Result<Self, HeaderError>` (lenient:
//! values may have arrived as JSON numbers or booleans, booleans may be `"1"`/`"0"`) and
//! `write_to(&self, &mut RemotingCommand)`. This module is the only code that reads or writes
//! `ext_fields`.

pub mod admin;
pub mod auth;
pub mod consumer;
pub mod group;
pub mod heartbeat;
pub mod lock;
pub mod offset;
pub mod pull;
pub mod query;
pub mod relay;
pub mod route;
pub mod send;
pub mod stats;
pub mod transaction;

use crate::command::RemotingCommand;
use crate::error::HeaderError;

/// `bname` of 5.x RPC request headers (`RpcRequestHeader`): the broker (shard) a broker
/// request is for; absent in 4.x clients' requests.
pub fn broker_name(cmd: &RemotingCommand) -> Option<String> {
    opt_str(cmd, "bname").filter(|b| !b.is_empty())
}

/// A required string field.
pub(crate) fn req_str(cmd: &RemotingCommand, field: &'static str) -> Result<String, HeaderError> {
    cmd.ext_fields
        .get(field)
        .cloned()
        .ok_or(HeaderError::Missing(field))
}

/// An optional string field.
pub(crate) fn opt_str(cmd: &RemotingCommand, field: &str) -> Option<String> {
    cmd.ext_fields.get(field).cloned()
}

/// A required integer field (decimal text, surrounding whitespace ignored).
pub(crate) fn req_num<T: std::str::FromStr>(
    cmd: &RemotingCommand,
    field: &'static str,
) -> Result<T, HeaderError> {
    let raw = cmd
        .ext_fields
        .get(field)
        .ok_or(HeaderError::Missing(field))?;
    raw.trim().parse().map_err(|_| HeaderError::Invalid {
        field,
        value: raw.clone(),
    })
}

/// An optional integer field; present but unparsable is an error.
pub(crate) fn opt_num<T: std::str::FromStr>(
    cmd: &RemotingCommand,
    field: &'static str,
) -> Result<Option<T>, HeaderError> {
    match cmd.ext_fields.get(field) {
        None => Ok(None),
        Some(raw) if raw.trim().is_empty() => Ok(None),
        Some(raw) => raw
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| HeaderError::Invalid {
                field,
                value: raw.clone(),
            }),
    }
}

/// An optional boolean field: `true`/`1` (any case) are true, anything else false.
pub(crate) fn opt_bool(cmd: &RemotingCommand, field: &str) -> Option<bool> {
    cmd.ext_fields.get(field).map(|v| parse_bool(v))
}

/// Lenient boolean: `true` (any case) or `1`.
pub fn parse_bool(v: &str) -> bool {
    let v = v.trim();
    v.eq_ignore_ascii_case("true") || v == "1"
}
