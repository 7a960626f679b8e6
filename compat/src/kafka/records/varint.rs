//! Kafka's variable-length integers: zigzag-encoded, then base-128 little-endian groups with
//! the high bit set on every byte but the last (protobuf's `sint32` / `sint64`).
//!
//! A varint takes at most 5 bytes and a varlong at most 10; a longer run of continuation
//! bytes is an error. Bits past the 32nd (64th) in the last byte are dropped, as the Java
//! client's `ByteUtils.readVarint` drops them.

use super::RecordError;
use crate::wire::Reader;

/// Reads a zigzag varint (an `i32`).
pub(super) fn read_varint(r: &mut Reader<'_>, what: &'static str) -> Result<i32, RecordError> {
    let raw = read_unsigned(r, what, 5)?;
    // At most 35 bits were gathered; keep the low 32 as Java does.
    let raw = raw as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zigzag varlong (an `i64`).
pub(super) fn read_varlong(r: &mut Reader<'_>, what: &'static str) -> Result<i64, RecordError> {
    let raw = read_unsigned(r, what, 10)?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

fn read_unsigned(r: &mut Reader<'_>, what: &'static str, max: u32) -> Result<u64, RecordError> {
    let mut value = 0u64;
    for i in 0..max {
        let b = r.u8(what)?;
        // Shifts of at most 63; bits shifted past the top are dropped, never a panic.
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(RecordError::BadVarint {
        what,
        max_bytes: max,
    })
}

/// Appends `v` as a zigzag varint.
pub(super) fn put_varint(out: &mut Vec<u8>, v: i32) {
    put_unsigned(out, u64::from(((v << 1) ^ (v >> 31)) as u32));
}

/// Appends `v` as a zigzag varlong.
pub(super) fn put_varlong(out: &mut Vec<u8>, v: i64) {
    put_unsigned(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: i32) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    #[test]
    fn known_encodings() {
        assert_eq!(varint(0), [0x00]);
        assert_eq!(varint(-1), [0x01]);
        assert_eq!(varint(1), [0x02]);
        assert_eq!(varint(63), [0x7e]);
        assert_eq!(varint(-64), [0x7f]);
        assert_eq!(varint(64), [0x80, 0x01]);
        assert_eq!(varint(i32::MAX), [0xfe, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(varint(i32::MIN), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    #[test]
    fn round_trips_at_the_edges() {
        for v in [0, 1, -1, 300, -300, i32::MAX, i32::MIN] {
            let bytes = varint(v);
            assert_eq!(
                read_varint(&mut Reader::new(&bytes), "v").expect("varint"),
                v
            );
        }
        for v in [0, 1, -1, 1 << 40, -(1 << 40), i64::MAX, i64::MIN] {
            let mut bytes = Vec::new();
            put_varlong(&mut bytes, v);
            assert!(bytes.len() <= 10);
            let mut r = Reader::new(&bytes);
            assert_eq!(read_varlong(&mut r, "v").expect("varlong"), v);
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn overlong_and_truncated_varints_are_errors() {
        let six = [0x80u8, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert!(matches!(
            read_varint(&mut Reader::new(&six), "v"),
            Err(RecordError::BadVarint { max_bytes: 5, .. })
        ));
        let eleven = [0xffu8; 11];
        assert!(matches!(
            read_varlong(&mut Reader::new(&eleven), "v"),
            Err(RecordError::BadVarint { max_bytes: 10, .. })
        ));
        assert!(matches!(
            read_varint(&mut Reader::new(&[0x80, 0x80]), "v"),
            Err(RecordError::Truncated { .. })
        ));
        // High bits in the fifth byte are dropped, as in Java.
        let wide = [0xfeu8, 0xff, 0xff, 0xff, 0x7f];
        assert_eq!(
            read_varint(&mut Reader::new(&wide), "v").expect("varint"),
            i32::MAX
        );
    }
}
