//! The RocketMQ remoting protocol, sans I/O: bytes in, typed values out.
//!
//! ```text
//! frame := length:i32 | (serializeType:u8 << 24 | headerLength:u24) | header | body
//! ```
//! `length` counts everything after itself. The header is JSON (serializeType 0) or the
//! ROCKETMQ binary form (1); see [`header`]. [`command::RemotingCommand`] is the decoded
//! header plus body; typed request/response headers live in [`request`], message records
//! and batch bodies in [`message`], tag and SQL92 filters in [`filter`].
//!
//! | module | contents |
//! | --- | --- |
//! | [`frame`] | cutting a byte stream into frames, with [`FrameLimits`]; writing frames |
//! | [`header`] | the JSON and ROCKETMQ header encodings |
//! | [`command`] | [`RemotingCommand`]: decode a frame, encode a frame |
//! | [`code`] | request, response and language codes |
//! | [`request`] | typed custom headers and JSON bodies, one module per request family |
//! | [`message`] | stored message records, batch bodies, properties, message ids |
//! | [`filter`] | tag filters and the SQL92 parser and evaluator |
//! | [`topic`] | topic names: system topics, retry and dead-letter prefixes, permission bits, validation |
//! | [`acl`] | the content an ACL `Signature` is computed over |
//! | [`kafka`] | the Kafka protocol: record batches (magic v2) and their compression codecs |
//! | `codec` (feature `codec`, part of `client`) | `RemotingCodec`, a tokio-util codec over [`frame`] and [`command`] |
//! | `client` (feature `client`) | `RemotingClient`, a small async client for tests and tools |
//!
//! Nothing here does I/O except `client`, and no decoder panics on hostile bytes.
#![warn(missing_docs)]

pub mod acl;
pub mod code;
pub mod command;
pub mod error;
pub mod filter;
pub mod frame;
pub mod header;
pub mod kafka;
pub mod limits;
pub mod message;
pub mod request;
pub mod topic;
pub mod types;

mod wire;

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "codec")]
pub mod codec;

pub use code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
pub use command::RemotingCommand;
pub use error::{FrameError, HeaderError};
pub use limits::FrameLimits;
