//! Message encodings: the stored/pulled record (§15.1), batch bodies (§15.5), the
//! properties string (§15.4), offset message ids (§16.1) and MessageSysFlag bits (§18.1).

pub mod batch;
pub mod id;
pub mod properties;
pub mod record;
pub mod sysflag;

use thiserror::Error;

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
}
