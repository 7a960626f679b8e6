use std::io::Write;

use super::*;

const ALL: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

fn header(key: &[u8], value: Option<&[u8]>) -> Header {
    Header {
        key: Bytes::copy_from_slice(key),
        value: value.map(Bytes::copy_from_slice),
    }
}

/// A batch exercising nulls, empty headers, duplicate and non-UTF-8 header keys, negative
/// and large timestamp deltas, and an offset gap.
fn sample(compression: Compression) -> Bytes {
    let mut b = BatchBuilder::new(1000, 1_700_000_000_000, compression)
        .producer(77, 3, 12)
        .partition_leader_epoch(9);
    let dup = [
        header(b"h", Some(b"1")),
        header(b"h", Some(b"2")),
        header(b"\xff\xfe", None),
        header(b"", Some(b"")),
    ];
    b.push(1000, 1_700_000_000_000, Some(b"k"), Some(b"v"), &dup)
        .expect("push");
    b.push(1001, 1_600_000_000_000, None, Some(b"no key"), &[])
        .expect("push");
    b.push(1005, i64::MAX, Some(b"tomb"), None, &[])
        .expect("push");
    b.push(1006, i64::MIN + 1_700_000_000_000, None, None, &[])
        .expect("push");
    b.finish().expect("finish")
}

fn decode_one(bytes: &[u8]) -> Batch {
    let mut batches = decode_batches(bytes, 1 << 20).expect("decode");
    assert_eq!(batches.len(), 1);
    batches.remove(0)
}

#[test]
fn every_compression_round_trips_the_sample() {
    for codec in ALL {
        let bytes = sample(codec);
        let batch = decode_one(&bytes);
        assert_eq!(batch.compression(), codec);
        assert_eq!(batch.base_offset, 1000);
        assert_eq!(batch.last_offset_delta, 6);
        assert_eq!(batch.last_offset(), 1006);
        assert_eq!(batch.base_timestamp, 1_700_000_000_000);
        assert_eq!(batch.max_timestamp, i64::MAX);
        assert_eq!(
            (batch.producer_id, batch.producer_epoch, batch.base_sequence),
            (77, 3, 12)
        );
        assert_eq!(batch.partition_leader_epoch, 9);
        assert!(!batch.is_transactional() && !batch.is_control());
        assert!(!batch.timestamp_type_log_append());
        let r = &batch.records;
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(r[0].value.as_deref(), Some(&b"v"[..]));
        let keys: Vec<&[u8]> = r[0].headers.iter().map(|h| &h.key[..]).collect();
        assert_eq!(keys, [&b"h"[..], b"h", b"\xff\xfe", b""]);
        assert_eq!(r[0].headers[1].value.as_deref(), Some(&b"2"[..]));
        assert_eq!(r[0].headers[2].value, None);
        assert_eq!(r[0].headers[3].value.as_deref(), Some(&b""[..]));
        assert_eq!(r[1].key, None);
        assert!(r[1].headers.is_empty());
        assert_eq!(r[1].timestamp_delta, -100_000_000_000);
        assert_eq!(batch.record_timestamp(&r[1]), 1_600_000_000_000);
        assert_eq!(r[2].value, None);
        assert_eq!(batch.record_offset(&r[2]), 1005);
        assert_eq!(batch.record_timestamp(&r[2]), i64::MAX);
        assert_eq!(batch.record_timestamp(&r[3]), i64::MIN + 1_700_000_000_000);
        // Encoding the decoded batch again gives the same bytes (uncompressed: exactly).
        let again = batch.encode(codec).expect("encode");
        assert_eq!(decode_one(&again), batch);
        if codec == Compression::None {
            assert_eq!(again, bytes);
        }
    }
}

#[test]
fn batch_infos_read_the_headers_without_the_records() {
    let mut bytes = sample(Compression::Zstd).to_vec();
    let second = BatchBuilder::new(2000, 5, Compression::None)
        .transactional(true)
        .finish()
        .expect("finish");
    bytes.extend_from_slice(&second);
    let infos = batch_infos(&bytes).expect("infos");
    assert_eq!(infos.len(), 2);
    assert_eq!(infos[0].position, 0);
    assert_eq!(infos[0].record_count, 4);
    assert_eq!(infos[0].compression().expect("codec"), Compression::Zstd);
    assert_eq!(infos[0].last_offset(), 1006);
    assert_eq!(infos[1].position, infos[0].size);
    assert_eq!(infos[1].size, HEADER_LEN);
    assert_eq!(infos[1].record_count, 0);
    assert!(infos[1].is_transactional() && !infos[1].is_control());
    assert_eq!(infos[1].max_timestamp, -1);
    let batches = decode_batches(&bytes, 1 << 20).expect("decode");
    assert_eq!(batches.len(), 2);
    assert!(batches[1].records.is_empty());
    assert!(decode_batches(&[], 0).expect("empty").is_empty());
}

#[test]
fn a_flipped_byte_anywhere_after_the_crc_is_a_crc_mismatch() {
    let bytes = sample(Compression::None);
    for i in CRC_START..bytes.len() {
        let mut bad = bytes.to_vec();
        bad[i] ^= 0x01;
        assert!(
            matches!(
                decode_batches(&bad, 1 << 20),
                Err(RecordError::CrcMismatch { position: 0, .. })
            ),
            "byte {i}"
        );
    }
    // baseOffset and partitionLeaderEpoch are outside the CRC.
    let mut moved = bytes.to_vec();
    moved[7] ^= 0x01;
    moved[15] ^= 0x01;
    assert!(decode_batches(&moved, 1 << 20).is_ok());
}

#[test]
fn truncation_at_every_length_is_an_error() {
    for codec in ALL {
        let bytes = sample(codec);
        for n in 1..bytes.len() {
            assert!(
                decode_batches(&bytes[..n], 1 << 20).is_err(),
                "{codec:?} at {n}"
            );
            assert!(batch_infos(&bytes[..n]).is_err(), "{codec:?} at {n}");
        }
    }
}

#[test]
fn other_magics_are_refused_with_the_value() {
    let mut bytes = sample(Compression::None).to_vec();
    for magic in [0u8, 1, 3, 0xff] {
        bytes[16] = magic;
        let err = decode_batches(&bytes, 1 << 20).expect_err("magic");
        assert!(
            matches!(err, RecordError::BadMagic { position: 0, magic: m } if m == magic as i8),
            "{err}"
        );
        assert!(batch_infos(&bytes).is_err());
    }
}

/// Rewrites the CRC after an edit, so the edit reaches the checks behind the CRC.
fn fix_crc(bytes: &mut [u8]) {
    let crc = crc32c::crc32c(&bytes[CRC_START..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
}

#[test]
fn counts_and_lengths_that_do_not_fit_are_errors() {
    let bytes = sample(Compression::None).to_vec();
    for count in [-1i32, 3, 5, i32::MAX] {
        let mut bad = bytes.clone();
        bad[57..61].copy_from_slice(&count.to_be_bytes());
        fix_crc(&mut bad);
        let err = decode_batches(&bad, 1 << 20).expect_err("count");
        assert!(
            matches!(
                err,
                RecordError::Count { .. }
                    | RecordError::TrailingBytes { .. }
                    | RecordError::Truncated { .. }
            ),
            "{count}: {err}"
        );
    }
    let mut short = bytes.clone();
    short[8..12].copy_from_slice(&48i32.to_be_bytes());
    assert!(matches!(
        decode_batches(&short, 1 << 20),
        Err(RecordError::BatchLength {
            batch_length: 48,
            ..
        })
    ));
    let mut long = bytes.clone();
    long[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(matches!(
        decode_batches(&long, 1 << 20),
        Err(RecordError::Truncated { .. })
    ));
    // A record with a negative length.
    let mut rec = bytes.clone();
    rec[61] = 0x01;
    fix_crc(&mut rec);
    assert!(matches!(
        decode_batches(&rec, 1 << 20),
        Err(RecordError::Length { what: "record", .. })
    ));
    // An unknown codec.
    let mut codec = bytes;
    codec[22] |= 0x07;
    fix_crc(&mut codec);
    assert!(matches!(
        decode_batches(&codec, 1 << 20),
        Err(RecordError::Compression(CompressionError::Unknown {
            id: 7
        }))
    ));
}

#[test]
fn a_header_count_past_the_bytes_is_refused_before_allocating() {
    // One record: attributes, deltas, null key and value, then a huge header count.
    let mut rec = vec![0u8, 0, 0, 1, 1];
    varint::put_varint(&mut rec, i32::MAX);
    let mut records = Vec::new();
    varint::put_varint(&mut records, rec.len() as i32);
    records.extend_from_slice(&rec);
    let mut bytes = BatchBuilder::new(0, 0, Compression::None)
        .finish()
        .expect("finish")
        .to_vec();
    bytes.extend_from_slice(&records);
    bytes[57..61].copy_from_slice(&1i32.to_be_bytes());
    let len = (bytes.len() - LOG_OVERHEAD) as i32;
    bytes[8..12].copy_from_slice(&len.to_be_bytes());
    fix_crc(&mut bytes);
    assert!(matches!(
        decode_batches(&bytes, 1 << 20),
        Err(RecordError::Count { what: "header", .. })
    ));
}

#[test]
fn a_gzip_bomb_is_refused_at_the_limit() {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..100 {
        enc.write_all(&zeros).expect("write");
    }
    let bomb = enc.finish().expect("finish");
    let mut bytes = BatchBuilder::new(0, 0, Compression::None)
        .finish()
        .expect("finish")
        .to_vec();
    bytes.extend_from_slice(&bomb);
    bytes[22] |= 1;
    bytes[57..61].copy_from_slice(&1000i32.to_be_bytes());
    let len = (bytes.len() - LOG_OVERHEAD) as i32;
    bytes[8..12].copy_from_slice(&len.to_be_bytes());
    fix_crc(&mut bytes);
    let err = decode_batches(&bytes, 4 << 20).expect_err("bomb");
    assert!(
        matches!(
            err,
            RecordError::Compression(CompressionError::TooLarge { limit, .. }) if limit == 4 << 20
        ),
        "{err}"
    );
    // A count the limit could not hold is refused before decompressing at all.
    bytes[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    fix_crc(&mut bytes);
    assert!(matches!(
        decode_batches(&bytes, 4 << 20),
        Err(RecordError::Count { .. })
    ));
}

#[test]
fn the_builder_checks_offsets_and_sets_flags() {
    let mut b = BatchBuilder::new(10, 0, Compression::None);
    assert!(matches!(
        b.push(9, 0, None, None, &[]),
        Err(BuildError::OffsetOrder { .. })
    ));
    b.push(10, 0, None, None, &[]).expect("push");
    assert!(matches!(
        b.push(10, 0, None, None, &[]),
        Err(BuildError::OffsetOrder { .. })
    ));
    assert!(matches!(
        b.push(10 + (1 << 31), 0, None, None, &[]),
        Err(BuildError::Delta { what: "offset", .. })
    ));
    assert_eq!(b.len(), 1);
    let bytes = b
        .control(true)
        .transactional(true)
        .log_append_time(123)
        .finish()
        .expect("finish");
    let batch = decode_one(&bytes);
    assert!(batch.is_control() && batch.is_transactional() && batch.timestamp_type_log_append());
    assert_eq!(batch.record_timestamp(&batch.records[0]), 123);
    let mut neg = BatchBuilder::new(0, 1, Compression::None);
    assert!(matches!(
        neg.push(0, i64::MIN, None, None, &[]),
        Err(BuildError::Delta {
            what: "timestamp",
            ..
        })
    ));
    assert!(neg.is_empty());
}

#[test]
fn the_crc_is_castagnoli() {
    // The CRC-32C check value.
    assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
}

mod prop {
    use proptest::prelude::*;

    use super::*;

    fn arb_header() -> impl Strategy<Value = Header> {
        (
            proptest::collection::vec(any::<u8>(), 0..8),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
        )
            .prop_map(|(k, v)| Header {
                key: Bytes::from(k),
                value: v.map(Bytes::from),
            })
    }

    type Input = (u32, i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<Header>);

    fn arb_record() -> impl Strategy<Value = Input> {
        (
            1u32..1000,
            any::<i64>(),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
            proptest::collection::vec(arb_header(), 0..4),
        )
    }

    fn codec() -> impl Strategy<Value = Compression> {
        proptest::sample::select(ALL.to_vec())
    }

    proptest! {
        #[test]
        fn built_batches_decode_to_what_was_pushed(
            base in -(1i64 << 40)..(1i64 << 40),
            base_ts in -(1i64 << 50)..(1i64 << 50),
            records in proptest::collection::vec(arb_record(), 0..20),
            codec in codec(),
        ) {
            let mut b = BatchBuilder::new(base, base_ts, codec).producer(5, 1, 0);
            let mut offset = base - 1;
            let mut expected = Vec::new();
            for (gap, ts, key, value, headers) in &records {
                offset += i64::from(*gap);
                let ts = base_ts.saturating_add(*ts >> 8);
                b.push(offset, ts, key.as_deref(), value.as_deref(), headers).expect("push");
                expected.push((offset, ts, key.clone(), value.clone(), headers.clone()));
            }
            let bytes = b.finish().expect("finish");
            let batches = decode_batches(&bytes, 1 << 20).expect("decode");
            prop_assert_eq!(batches.len(), 1);
            let batch = &batches[0];
            prop_assert_eq!(batch.compression(), codec);
            prop_assert_eq!(batch.records.len(), expected.len());
            for (r, (offset, ts, key, value, headers)) in batch.records.iter().zip(&expected) {
                prop_assert_eq!(batch.record_offset(r), *offset);
                prop_assert_eq!(batch.record_timestamp(r), *ts);
                prop_assert_eq!(r.key.as_deref(), key.as_deref());
                prop_assert_eq!(r.value.as_deref(), value.as_deref());
                prop_assert_eq!(&r.headers, headers);
            }
            if let Some((offset, ..)) = expected.last() {
                prop_assert_eq!(batch.last_offset(), *offset);
                let max = expected.iter().map(|e| e.1).max().expect("one");
                prop_assert_eq!(batch.max_timestamp, max);
            }
            let infos = batch_infos(&bytes).expect("infos");
            prop_assert_eq!(infos[0].record_count as usize, expected.len());
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_batches(&data, 1 << 16);
            let _ = batch_infos(&data);
        }

        #[test]
        fn edited_batches_never_panic(
            codec in codec(),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
            fix in any::<bool>(),
        ) {
            let mut bytes = sample(codec).to_vec();
            for (at, v) in edits {
                let i = at % bytes.len();
                bytes[i] = v;
            }
            if fix {
                fix_crc(&mut bytes);
            }
            let _ = decode_batches(&bytes, 1 << 16);
            let _ = batch_infos(&bytes);
        }
    }
}
