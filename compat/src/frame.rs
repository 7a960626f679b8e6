//! Length-prefixed frames: split a byte stream into frames, with limits.

use bytes::{Bytes, BytesMut};

use crate::code::SerializeType;
use crate::error::FrameError;
use crate::limits::FrameLimits;

/// One frame: serialize type, raw header bytes and body bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Header encoding (high byte of the second int).
    pub serialize_type: SerializeType,
    /// Raw header bytes.
    pub header: Bytes,
    /// Raw body bytes.
    pub body: Bytes,
}

/// Takes one complete frame off the front of `src`, or `Ok(None)` if more bytes are needed.
///
/// # Errors
/// [`FrameError`] when the length fields are invalid or exceed `limits`; the stream cannot be
/// resynchronised afterwards, so the connection must be closed.
pub fn decode(src: &mut BytesMut, limits: &FrameLimits) -> Result<Option<Frame>, FrameError> {
    let _ = (src, limits);
    todo!()
}
