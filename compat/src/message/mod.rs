//! Message encodings: stored records, batch bodies, properties, message ids and sysflag bits.
//!
//! * the stored/pulled record: `docs/remoting-protocol.md#message-records`;
//! * batch bodies: `docs/remoting-protocol.md#batch-bodies`;
//! * the properties string: `docs/remoting-protocol.md#properties`;
//! * offset message ids: `docs/remoting-protocol.md#offset-message-ids`;
//! * client unique ids: `docs/remoting-protocol.md#unique-ids`;
//! * MessageSysFlag bits: `docs/remoting-protocol.md#message-sysflag`.
//!
//! Decoders check every length against the bytes present and never panic on hostile input.

pub mod batch;
pub mod id;
pub mod properties;
pub mod record;
pub mod sysflag;
pub mod uniq;

pub use batch::{BatchEntry, decode_batch, encode_batch};
pub use id::{create_offset_msg_id, decode_offset_msg_id};
pub use properties::Properties;
pub use record::{MessageExt, RecordView};
pub use uniq::new_uniq_id;

use thiserror::Error;

use crate::wire::Truncated;

/// A message record, batch body, properties string or message id could not be decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MessageError {
    /// Fewer bytes than a field needs.
    #[error("truncated {what}: need {need} bytes, have {have}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A length field is negative or inconsistent.
    #[error("invalid {what} length {len}")]
    BadLength {
        /// Which length.
        what: &'static str,
        /// Its value.
        len: i64,
    },
    /// The record's magic code is not V1 or V2.
    #[error("unknown magic code {0:#x}")]
    BadMagic(i32),
    /// Text that must be UTF-8 is not.
    #[error("{0} is not valid UTF-8")]
    BadUtf8(&'static str),
    /// An offset message id is not 32 or 56 hex characters.
    #[error("invalid message id {0:?}")]
    BadMessageId(String),
    /// A host field's port is outside 0..=65535.
    #[error("invalid port {0} in {1}")]
    BadPort(i32, &'static str),
    /// A field is too long for its length prefix (encoding only).
    #[error("{what} of {len} bytes exceeds the maximum of {max}")]
    TooLong {
        /// Which field.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The largest length its prefix can carry.
        max: usize,
    },
}

impl From<Truncated> for MessageError {
    fn from(t: Truncated) -> Self {
        Self::Truncated {
            what: t.what,
            need: t.need,
            have: t.have,
        }
    }
}
