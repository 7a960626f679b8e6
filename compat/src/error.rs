//! Protocol errors: [`FrameError`] is fatal to a connection, [`HeaderError`] to one request.

use thiserror::Error;

/// A frame could not be cut from the stream or its header could not be decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The length prefix is negative or smaller than the 4-byte header-length word.
    #[error("invalid frame length {0}")]
    BadLength(i64),
    /// The frame is larger than the configured maximum.
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Announced frame length.
        len: usize,
        /// Configured limit.
        max: usize,
    },
    /// The header length is larger than the frame or the configured maximum.
    #[error("header of {len} bytes exceeds the frame or the limit of {max}")]
    HeaderTooLarge {
        /// Announced header length.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// The serialize-type byte is neither 0 (JSON) nor 1 (ROCKETMQ).
    #[error("unknown serialize type {0}")]
    UnknownSerializeType(u8),
    /// The header bytes are not a valid header in their encoding.
    #[error("malformed header: {0}")]
    BadHeader(String),
    /// Inconsistent limits given to [`crate::FrameLimits::try_new`].
    #[error("invalid frame limits: max_frame {max_frame}, max_header {max_header}")]
    InvalidLimits {
        /// Requested max frame.
        max_frame: usize,
        /// Requested max header.
        max_header: usize,
    },
}

/// A request's custom header or body is missing a field or has an invalid value.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HeaderError {
    /// A mandatory field is absent.
    #[error("the custom field <{0}> is null")]
    Missing(&'static str),
    /// A field is present but cannot be parsed into its type.
    #[error("the custom field <{field}> has an invalid value {value:?}")]
    Invalid {
        /// Field name.
        field: &'static str,
        /// Offending value.
        value: String,
    },
    /// A JSON body could not be decoded.
    #[error("malformed body: {0}")]
    BadBody(String),
}
