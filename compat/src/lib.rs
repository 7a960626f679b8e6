//! The RocketMQ remoting protocol, sans I/O: bytes in, typed values out.
//!
//! ```text
//! frame := length:i32 | (serializeType:u8 << 24 | headerLength:u24) | header | body
//! ```
//! `length` counts everything after itself. The header is JSON (serializeType 0) or the
//! ROCKETMQ binary form (1); see [`header`]. [`command::RemotingCommand`] is the decoded
//! header plus body; typed request/response headers live in [`request`], message records
//! and batch bodies in [`message`], tag and SQL92 filters in [`filter`].
#![warn(missing_docs)]

pub mod code;
pub mod command;
pub mod error;
pub mod filter;
pub mod frame;
pub mod header;
pub mod limits;
pub mod message;
pub mod request;
pub mod types;

#[cfg(feature = "client")]
pub mod client;

pub use code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
pub use command::RemotingCommand;
pub use error::{FrameError, HeaderError};
pub use limits::FrameLimits;
