//! Length-prefixed frames: split a byte stream into frames, with limits.
//!
//! ```text
//! 0       4                5              8               8+H            4+L
//! +-------+----------------+--------------+---------------+--------------+
//! | L i32 | serializeType  | H (u24)      | header        | body         |
//! |       | u8             |              | (H bytes)     | (L-4-H bytes)|
//! +-------+----------------+--------------+---------------+--------------+
//! ```
//!
//! `L` (frameLength) counts every byte after itself. The second word packs the header
//! encoding in its high byte and the header length in its low 24 bits. The C++ client
//! writes the plain header length there, which reads as type 0 (JSON) and so needs nothing
//! special.
//!
//! Invariants: [`decode`] never panics and never buffers more than `limits.max_frame() + 4`
//! bytes for one frame; a frame it rejects leaves the stream unusable (there is no way to find
//! the next frame boundary), so the caller closes the connection.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::code::SerializeType;
use crate::error::FrameError;
use crate::limits::FrameLimits;

/// Size of the `frameLength` prefix.
pub const LENGTH_FIELD_LEN: usize = 4;
/// Size of the serialize-type/header-length word.
pub const HEADER_WORD_LEN: usize = 4;
/// Largest header length the 24-bit field can carry.
pub const MAX_HEADER_FIELD: usize = 0x00FF_FFFF;

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
/// The length fields are checked as soon as they have arrived, before the rest of the frame,
/// so an oversized frame is refused without buffering it.
///
/// # Errors
/// [`FrameError`] when the length fields are invalid or exceed `limits`; the stream cannot be
/// resynchronised afterwards, so the connection must be closed.
pub fn decode(src: &mut BytesMut, limits: &FrameLimits) -> Result<Option<Frame>, FrameError> {
    let Some(len_bytes) = src.first_chunk::<LENGTH_FIELD_LEN>() else {
        return Ok(None);
    };
    let frame_len = i32::from_be_bytes(*len_bytes);
    let Ok(frame_len) = usize::try_from(frame_len) else {
        return Err(FrameError::BadLength(i64::from(frame_len)));
    };
    if frame_len < HEADER_WORD_LEN {
        return Err(FrameError::BadLength(frame_len as i64));
    }
    if frame_len > limits.max_frame() {
        return Err(FrameError::TooLarge {
            len: frame_len,
            max: limits.max_frame(),
        });
    }
    let Some(word) = src.get(LENGTH_FIELD_LEN..LENGTH_FIELD_LEN + HEADER_WORD_LEN) else {
        return Ok(None);
    };
    let [type_byte, h0, h1, h2] = [word[0], word[1], word[2], word[3]];
    let serialize_type =
        SerializeType::from_byte(type_byte).ok_or(FrameError::UnknownSerializeType(type_byte))?;
    let header_len = usize::from(h0) << 16 | usize::from(h1) << 8 | usize::from(h2);
    if header_len > limits.max_header() {
        return Err(FrameError::HeaderTooLarge {
            len: header_len,
            max: limits.max_header(),
        });
    }
    // frame_len >= HEADER_WORD_LEN was checked above.
    let room = frame_len - HEADER_WORD_LEN;
    if header_len > room {
        return Err(FrameError::HeaderTooLarge {
            len: header_len,
            max: room,
        });
    }
    // frame_len <= max_frame <= 16 MiB, so this cannot overflow.
    let total = LENGTH_FIELD_LEN + frame_len;
    if src.len() < total {
        src.reserve(total - src.len());
        return Ok(None);
    }
    let mut frame = src.split_to(total);
    frame.advance(LENGTH_FIELD_LEN + HEADER_WORD_LEN);
    let header = frame.split_to(header_len).freeze();
    let body = frame.freeze();
    Ok(Some(Frame {
        serialize_type,
        header,
        body,
    }))
}

/// Appends one frame (length prefix, type/length word, header, body) to `dst`.
///
/// Nothing is written when the frame cannot be represented.
///
/// # Errors
/// [`FrameError::HeaderTooLarge`] when the header does not fit the 24-bit length field;
/// [`FrameError::TooLarge`] when the frame length does not fit an `i32`.
pub fn encode_frame(
    serialize_type: SerializeType,
    header: &[u8],
    body: &[u8],
    dst: &mut BytesMut,
) -> Result<(), FrameError> {
    if header.len() > MAX_HEADER_FIELD {
        return Err(FrameError::HeaderTooLarge {
            len: header.len(),
            max: MAX_HEADER_FIELD,
        });
    }
    let frame_len = HEADER_WORD_LEN
        .checked_add(header.len())
        .and_then(|n| n.checked_add(body.len()))
        .and_then(|n| i32::try_from(n).ok())
        .ok_or(FrameError::TooLarge {
            len: header
                .len()
                .saturating_add(body.len())
                .saturating_add(HEADER_WORD_LEN),
            max: i32::MAX as usize,
        })?;
    // header.len() <= 0xFF_FFFF, so it fits the low 24 bits.
    let word = u32::from(serialize_type.to_byte()) << 24 | header.len() as u32;
    dst.reserve(LENGTH_FIELD_LEN + HEADER_WORD_LEN + header.len() + body.len());
    dst.put_i32(frame_len);
    dst.put_u32(word);
    dst.put_slice(header);
    dst.put_slice(body);
    Ok(())
}

#[cfg(test)]
mod tests;
