//! The ROCKETMQ binary header encoding (`docs/remoting-protocol.md#binary-header`).
//!
//! ```text
//! 0        2         3          5          9        13           17
//! +--------+---------+----------+----------+--------+------------+--------+-----------+---------+
//! | code   | language| version  | opaque   | flag   | remarkLen  | remark | extLen    | entries |
//! | i16    | u8      | i16      | i32      | i32    | i32        |        | i32       |         |
//! +--------+---------+----------+----------+--------+------------+--------+-----------+---------+
//! entry := keyLen i16 | key | valLen i32 | value
//! ```
//!
//! A zero-length remark is no remark, and an entry whose key or value is empty is dropped
//! (Java reads an empty string as null, which makes the field absent), so the encoder leaves
//! such entries out too. Every length is checked against
//! the bytes present before it is used; negative lengths and bytes after the map are errors.
//! `code` and `version` are only 16 bits here: a command whose numbers do not fit cannot be
//! encoded in this form (send it as JSON).

use thiserror::Error;

use super::{CommandHeader, HeaderDecodeError};
use crate::code::LanguageCode;
use crate::command::{ExtFields, RemotingCommand};
use crate::wire::Reader;

/// Size of the fixed part (code … remarkLen).
pub const FIXED_LEN: usize = 17;

/// A command that cannot be written as a binary header.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{what} {value} does not fit the binary header")]
pub struct BinaryEncodeError {
    /// Which field.
    pub what: &'static str,
    /// Its value or length.
    pub value: i64,
}

/// Decodes a binary header.
///
/// # Errors
/// [`HeaderDecodeError`] when a field is truncated, a length is negative, text is not UTF-8
/// or bytes follow the ext-fields map.
pub fn decode(src: &[u8]) -> Result<CommandHeader, HeaderDecodeError> {
    let mut r = Reader::new(src);
    let code = i32::from(r.i16("code")?);
    let language = LanguageCode::from_byte(r.u8("language")?);
    let version = i32::from(r.i16("version")?);
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark_len = r.i32("remark length")?;
    let remark = match text(&mut r, i64::from(remark_len), "remark")? {
        s if s.is_empty() => None,
        s => Some(s),
    };
    let ext_len = r.i32("ext fields length")?;
    let ext_len = usize::try_from(ext_len).map_err(|_| HeaderDecodeError::BadLength {
        what: "ext fields",
        len: ext_len.into(),
    })?;
    let ext_fields = decode_map(r.take(ext_len, "ext fields")?)?;
    if r.remaining() > 0 {
        return Err(HeaderDecodeError::TrailingBytes(r.remaining()));
    }
    Ok(CommandHeader {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
    })
}

fn text(r: &mut Reader<'_>, len: i64, what: &'static str) -> Result<String, HeaderDecodeError> {
    let n = usize::try_from(len).map_err(|_| HeaderDecodeError::BadLength { what, len })?;
    let bytes = r.take(n, what)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| HeaderDecodeError::BadUtf8(what))
}

fn decode_map(area: &[u8]) -> Result<ExtFields, HeaderDecodeError> {
    let mut r = Reader::new(area);
    let mut map = ExtFields::new();
    while r.remaining() > 0 {
        let key_len = r.i16("ext key length")?;
        let key = text(&mut r, i64::from(key_len), "ext key")?;
        let val_len = r.i32("ext value length")?;
        let value = text(&mut r, i64::from(val_len), "ext value")?;
        if !key.is_empty() && !value.is_empty() {
            map.insert(key, value);
        }
    }
    Ok(map)
}

/// Checks that `cmd` can be written as a binary header and returns the header's length.
///
/// # Errors
/// [`BinaryEncodeError`] when `code` or `version` is outside `i16`, a key is longer than
/// `i16::MAX` bytes, or the header would exceed the 24-bit frame field.
pub fn encoded_len(cmd: &RemotingCommand) -> Result<usize, BinaryEncodeError> {
    let fail = |what, value: i64| BinaryEncodeError { what, value };
    if i16::try_from(cmd.code).is_err() {
        return Err(fail("code", cmd.code.into()));
    }
    if i16::try_from(cmd.version).is_err() {
        return Err(fail("version", cmd.version.into()));
    }
    let remark = cmd.remark.as_deref().map_or(0, str::len);
    let mut ext = 0usize;
    for (k, v) in entries(&cmd.ext_fields) {
        if i16::try_from(k.len()).is_err() {
            return Err(fail("ext key length", k.len() as i64));
        }
        ext = ext
            .saturating_add(2 + k.len())
            .saturating_add(4)
            .saturating_add(v.len());
    }
    let total = FIXED_LEN
        .saturating_add(remark)
        .saturating_add(4)
        .saturating_add(ext);
    if total > crate::frame::MAX_HEADER_FIELD {
        return Err(fail("header length", total as i64));
    }
    Ok(total)
}

fn entries(map: &ExtFields) -> impl Iterator<Item = (&String, &String)> {
    map.iter().filter(|(k, v)| !k.is_empty() && !v.is_empty())
}

/// Appends the binary header of `cmd` (body and serialize type ignored) to `dst`. Nothing is
/// written on error.
///
/// # Errors
/// As [`encoded_len`].
pub fn encode(cmd: &RemotingCommand, dst: &mut Vec<u8>) -> Result<(), BinaryEncodeError> {
    let len = encoded_len(cmd)?;
    // encoded_len checked every narrowing below: code/version fit i16, keys fit i16, and the
    // whole header (so each string and the map) is under 2^24 bytes.
    let as_i32 = |n: usize| n as i32;
    dst.reserve(len);
    dst.extend_from_slice(&(cmd.code as i16).to_be_bytes());
    dst.push(cmd.language.to_byte());
    dst.extend_from_slice(&(cmd.version as i16).to_be_bytes());
    dst.extend_from_slice(&cmd.opaque.to_be_bytes());
    dst.extend_from_slice(&cmd.flag.to_be_bytes());
    let remark = cmd.remark.as_deref().unwrap_or("");
    dst.extend_from_slice(&as_i32(remark.len()).to_be_bytes());
    dst.extend_from_slice(remark.as_bytes());
    let ext_len = len - FIXED_LEN - remark.len() - 4;
    dst.extend_from_slice(&as_i32(ext_len).to_be_bytes());
    for (k, v) in entries(&cmd.ext_fields) {
        dst.extend_from_slice(&(k.len() as i16).to_be_bytes());
        dst.extend_from_slice(k.as_bytes());
        dst.extend_from_slice(&as_i32(v.len()).to_be_bytes());
        dst.extend_from_slice(v.as_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::tests_support::arb_header;
    use crate::{RemotingCommand, SerializeType};
    use bytes::Bytes;
    use proptest::prelude::*;

    fn cmd_of(h: CommandHeader) -> RemotingCommand {
        RemotingCommand::from_header(h, SerializeType::RocketMq, Bytes::new())
    }

    #[test]
    fn encoding_matches_the_documented_get_consumer_list_bytes() {
        // docs/remoting-protocol.md#worked-examples, without the two frame words.
        let mut cmd = RemotingCommand::request(38, 8);
        cmd.version = 401;
        cmd.put_ext("consumerGroup", "g1");
        let mut out = Vec::new();
        encode(&cmd, &mut out).unwrap();
        let mut want = vec![
            0x00, 0x26, 0x00, 0x01, 0x91, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        want.extend_from_slice(&[0, 0, 0, 0x15, 0x00, 0x0d]);
        want.extend_from_slice(b"consumerGroup");
        want.extend_from_slice(&[0, 0, 0, 2]);
        want.extend_from_slice(b"g1");
        assert_eq!(out, want);
        assert_eq!(out.len(), 42);
        assert_eq!(decode(&out).unwrap(), CommandHeader::of(&cmd));
    }

    #[test]
    fn empty_strings_decode_as_absent() {
        let mut cmd = RemotingCommand::request(34, 7);
        cmd.remark = Some(String::new());
        cmd.put_ext("empty", "");
        cmd.put_ext("k", "v");
        let mut out = Vec::new();
        encode(&cmd, &mut out).unwrap();
        let h = decode(&out).unwrap();
        assert_eq!(h.remark, None);
        assert_eq!(h.ext_fields.len(), 1);
        // A hand-made entry with an empty value is dropped too.
        let mut raw = vec![
            0, 34, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7,
        ];
        raw.extend_from_slice(&[0, 1, b'x', 0, 0, 0, 0]);
        assert!(decode(&raw).unwrap().ext_fields.is_empty());
    }

    #[test]
    fn hostile_lengths_are_errors_not_panics() {
        let base = [0u8, 34, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0];
        let with = |tail: &[u8]| [&base[..], tail].concat();
        assert!(matches!(
            decode(&with(&[0xff, 0xff, 0xff, 0xff])),
            Err(HeaderDecodeError::BadLength { .. })
        ));
        assert!(matches!(
            decode(&with(&[0x7f, 0xff, 0xff, 0xff])),
            Err(HeaderDecodeError::Truncated { .. })
        ));
        assert!(matches!(
            decode(&with(&[0, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0])),
            Err(HeaderDecodeError::BadLength { .. })
        ));
        assert!(matches!(
            decode(&with(&[0, 0, 0, 0, 0, 0, 0, 0, 9])),
            Err(HeaderDecodeError::TrailingBytes(1))
        ));
        assert!(decode(&[0, 1]).is_err());
    }

    #[test]
    fn codes_beyond_i16_cannot_be_encoded() {
        let cmd = RemotingCommand::request(200_050, 1);
        let mut out = Vec::new();
        assert_eq!(
            encode(&cmd, &mut out),
            Err(BinaryEncodeError {
                what: "code",
                value: 200_050
            })
        );
        assert!(out.is_empty());
    }

    /// What a header becomes after a binary round trip: empty strings vanish.
    fn normalised(mut h: CommandHeader) -> CommandHeader {
        h.remark = h.remark.filter(|r| !r.is_empty());
        h.ext_fields.retain(|k, v| !k.is_empty() && !v.is_empty());
        h
    }

    proptest! {
        #[test]
        fn binary_header_round_trips(mut h in arb_header()) {
            h.code = i32::from(h.code as i16);
            h.version = i32::from(h.version as i16);
            let mut out = Vec::new();
            encode(&cmd_of(h.clone()), &mut out).unwrap();
            prop_assert_eq!(out.len(), encoded_len(&cmd_of(h.clone())).unwrap());
            prop_assert_eq!(decode(&out).unwrap(), normalised(h));
        }

        #[test]
        fn binary_header_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = decode(&bytes);
        }
    }
}
