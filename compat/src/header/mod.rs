//! Header encodings: [`json`] (serializeType 0) and [`rocketmq`] (serializeType 1).
//!
//! Both decode into a [`CommandHeader`], the logical header every encoding carries, and encode
//! from a [`RemotingCommand`]. Decoders are lenient where real clients differ and never panic
//! on hostile bytes; encoders produce what every client can read
//! (`docs/remoting-protocol.md#json-header`, `docs/remoting-protocol.md#binary-header`).

pub mod json;
pub mod rocketmq;

use thiserror::Error;

use crate::code::LanguageCode;
use crate::command::{ExtFields, RemotingCommand};
use crate::error::FrameError;
use crate::wire::Truncated;

/// The logical header: everything of a command except its body and encoding.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandHeader {
    /// Request or response code.
    pub code: i32,
    /// Sender's language.
    pub language: LanguageCode,
    /// Sender's version ordinal.
    pub version: i32,
    /// Request id.
    pub opaque: i32,
    /// Bit 0 response, bit 1 one-way.
    pub flag: i32,
    /// Free text.
    pub remark: Option<String>,
    /// Custom header fields, all as text.
    pub ext_fields: ExtFields,
}

impl CommandHeader {
    /// The header part of a command (copies remark and ext fields).
    pub fn of(cmd: &RemotingCommand) -> Self {
        Self {
            code: cmd.code,
            language: cmd.language,
            version: cmd.version,
            opaque: cmd.opaque,
            flag: cmd.flag,
            remark: cmd.remark.clone(),
            ext_fields: cmd.ext_fields.clone(),
        }
    }
}

/// Header bytes that are not a valid header in their encoding.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HeaderDecodeError {
    /// The JSON text is malformed or has a field of the wrong type.
    #[error("invalid JSON header: {0}")]
    Json(String),
    /// A binary field runs past the end of the header.
    #[error("truncated {what}: need {need} bytes, have {have}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A binary length field is negative.
    #[error("invalid {what} length {len}")]
    BadLength {
        /// Which length.
        what: &'static str,
        /// Its value.
        len: i64,
    },
    /// A binary string is not UTF-8.
    #[error("{0} is not valid UTF-8")]
    BadUtf8(&'static str),
    /// Bytes are left after the last binary field.
    #[error("{0} bytes after the end of the header")]
    TrailingBytes(usize),
}

impl From<Truncated> for HeaderDecodeError {
    fn from(t: Truncated) -> Self {
        Self::Truncated {
            what: t.what,
            need: t.need,
            have: t.have,
        }
    }
}

impl From<HeaderDecodeError> for FrameError {
    fn from(e: HeaderDecodeError) -> Self {
        Self::BadHeader(e.to_string())
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use proptest::prelude::*;

    use super::CommandHeader;
    use crate::code::LanguageCode;

    pub(crate) fn arb_language() -> impl Strategy<Value = LanguageCode> {
        (0u8..14).prop_map(LanguageCode::from_byte)
    }

    pub(crate) fn arb_header() -> impl Strategy<Value = CommandHeader> {
        (
            any::<i32>(),
            arb_language(),
            any::<i32>(),
            any::<i32>(),
            any::<i32>(),
            proptest::option::of(".{0,20}"),
            proptest::collection::btree_map("[a-zA-Z_]{0,8}", ".{0,16}", 0..6),
        )
            .prop_map(
                |(code, language, version, opaque, flag, remark, ext_fields)| CommandHeader {
                    code,
                    language,
                    version,
                    opaque,
                    flag,
                    remark,
                    ext_fields,
                },
            )
    }
}
