//! Batch bodies of SEND_BATCH_MESSAGE / the batch flag (`docs/remoting-protocol.md#batch-bodies`).
//!
//! ```text
//! entry := TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | FLAG i32 | BODYLEN i32 | BODY | PROPLEN i16 | PROPERTIES
//! ```

//!
//! TOTALSIZE must equal `20 + BODYLEN + 2 + PROPLEN`; MAGICCODE and BODYCRC are read and
//! ignored (clients write 0; the server computes the stored CRC).

use bytes::{BufMut, Bytes, BytesMut};

use super::MessageError;
use crate::wire::Reader;

/// Size of an entry with an empty body and no properties.
pub const MIN_ENTRY_LEN: usize = 22;

/// One message of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry {
    /// User flag.
    pub flag: i32,
    /// Body.
    pub body: Bytes,
    /// Properties string.
    pub properties: String,
}

impl BatchEntry {
    /// Size of this entry in a batch body.
    pub fn encoded_len(&self) -> usize {
        MIN_ENTRY_LEN
            .saturating_add(self.body.len())
            .saturating_add(self.properties.len())
    }
}

/// Splits a batch body into its entries. An empty body is an empty batch.
///
/// # Errors
/// [`MessageError`] when an entry is truncated or its lengths disagree.
pub fn decode_batch(body: &Bytes) -> Result<Vec<BatchEntry>, MessageError> {
    let mut r = Reader::new(body);
    let mut out = Vec::new();
    while r.remaining() > 0 {
        let start = r.position();
        let total = r.i32("batch TOTALSIZE")?;
        let _magic = r.i32("batch MAGICCODE")?;
        let _crc = r.i32("batch BODYCRC")?;
        let flag = r.i32("batch FLAG")?;
        let body_len = r.i32("batch BODYLEN")?;
        let body_len = usize::try_from(body_len).map_err(|_| MessageError::BadLength {
            what: "batch BODY",
            len: body_len.into(),
        })?;
        let body_start = r.position();
        r.take(body_len, "batch BODY")?;
        let prop_len = r.i16("batch PROPERTIESLEN")?;
        let prop_len = usize::try_from(prop_len).map_err(|_| MessageError::BadLength {
            what: "batch PROPERTIES",
            len: prop_len.into(),
        })?;
        let properties = r.take(prop_len, "batch PROPERTIES")?;
        let properties = String::from_utf8(properties.to_vec())
            .map_err(|_| MessageError::BadUtf8("batch PROPERTIES"))?;
        if i64::from(total) != (r.position() - start) as i64 {
            return Err(MessageError::BadLength {
                what: "batch TOTALSIZE",
                len: total.into(),
            });
        }
        out.push(BatchEntry {
            flag,
            body: body.slice(body_start..body_start + body_len),
            properties,
        });
    }
    Ok(out)
}

/// Encodes entries as a batch body (as clients do: magic and CRC written as 0). Nothing is
/// written on error.
///
/// # Errors
/// [`MessageError::TooLong`] when a properties string exceeds `i16::MAX` bytes or an entry
/// `i32::MAX` bytes.
pub fn try_encode_batch(entries: &[BatchEntry], dst: &mut BytesMut) -> Result<(), MessageError> {
    let mut total = 0usize;
    for e in entries {
        let max16 = i16::MAX as usize;
        if e.properties.len() > max16 {
            let len = e.properties.len();
            return Err(MessageError::TooLong {
                what: "batch properties",
                len,
                max: max16,
            });
        }
        let len = e.encoded_len();
        if len > i32::MAX as usize {
            return Err(MessageError::TooLong {
                what: "batch entry",
                len,
                max: i32::MAX as usize,
            });
        }
        total = total.saturating_add(len);
    }
    dst.reserve(total);
    for e in entries {
        // Lengths checked above.
        dst.put_i32(e.encoded_len() as i32);
        dst.put_i32(0);
        dst.put_i32(0);
        dst.put_i32(e.flag);
        dst.put_i32(e.body.len() as i32);
        dst.put_slice(&e.body);
        dst.put_i16(e.properties.len() as i16);
        dst.put_slice(e.properties.as_bytes());
    }
    Ok(())
}

/// Encodes entries as a batch body (as clients do: magic and CRC written as 0).
///
/// # Panics
/// When [`try_encode_batch`] fails (a properties string over 32767 bytes).
pub fn encode_batch(entries: &[BatchEntry], dst: &mut BytesMut) {
    if let Err(e) = try_encode_batch(entries, dst) {
        panic!("cannot encode batch: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_batch_of_two_round_trips_with_exact_sizes() {
        let entries = vec![
            BatchEntry {
                flag: 1,
                body: Bytes::from_static(b"a"),
                properties: "K\u{1}v\u{2}".into(),
            },
            BatchEntry {
                flag: 0,
                body: Bytes::new(),
                properties: String::new(),
            },
        ];
        let mut out = BytesMut::new();
        encode_batch(&entries, &mut out);
        assert_eq!(out.len(), 22 + 1 + entries[0].properties.len() + 22);
        assert_eq!(
            &out[..4],
            &(23 + entries[0].properties.len() as i32).to_be_bytes()
        );
        assert_eq!(decode_batch(&out.freeze()).unwrap(), entries);
    }

    #[test]
    fn inconsistent_total_size_is_rejected() {
        let entries = [BatchEntry {
            flag: 0,
            body: Bytes::from_static(b"xy"),
            properties: String::new(),
        }];
        let mut out = BytesMut::new();
        encode_batch(&entries, &mut out);
        out[3] = out[3].wrapping_add(1);
        assert!(matches!(
            decode_batch(&out.freeze()),
            Err(MessageError::BadLength { .. })
        ));
    }

    #[test]
    fn truncated_and_negative_lengths_are_rejected() {
        let mut out = BytesMut::new();
        encode_batch(
            &[BatchEntry {
                flag: 0,
                body: Bytes::from_static(b"xyz"),
                properties: "p".into(),
            }],
            &mut out,
        );
        let full = out.freeze();
        for cut in 1..full.len() {
            assert!(decode_batch(&full.slice(..cut)).is_err(), "cut at {cut}");
        }
        let mut neg = BytesMut::from(&full[..]);
        neg[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(matches!(
            decode_batch(&neg.freeze()),
            Err(MessageError::BadLength { .. })
        ));
        assert_eq!(decode_batch(&Bytes::new()).unwrap(), vec![]);
    }

    fn arb_entry() -> impl Strategy<Value = BatchEntry> {
        (
            any::<i32>(),
            proptest::collection::vec(any::<u8>(), 0..64),
            ".{0,40}",
        )
            .prop_map(|(flag, body, properties)| BatchEntry {
                flag,
                body: body.into(),
                properties,
            })
    }

    proptest! {
        #[test]
        fn batch_round_trips(entries in proptest::collection::vec(arb_entry(), 0..5)) {
            let mut out = BytesMut::new();
            encode_batch(&entries, &mut out);
            prop_assert_eq!(out.len(), entries.iter().map(BatchEntry::encoded_len).sum::<usize>());
            prop_assert_eq!(decode_batch(&out.freeze()).unwrap(), entries);
        }

        #[test]
        fn batch_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = decode_batch(&Bytes::from(bytes));
        }
    }
}
