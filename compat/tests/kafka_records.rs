//! Golden vectors: record batches written by the Kafka Java client 4.4.0
//! (`tests/vectors/kafka/`, see its README), decoded field by field, and encoded again.

use std::path::Path;

use bytes::Bytes;
use stratus_compat::kafka::compression::Compression;
use stratus_compat::kafka::records::{
    Batch, BatchBuilder, HEADER_LEN, batch_infos, decode_batches,
};

const T: i64 = 1_700_000_000_000;
const LIMIT: usize = 1 << 20;

const CODECS: [(&str, Compression); 5] = [
    ("none", Compression::None),
    ("gzip", Compression::Gzip),
    ("snappy", Compression::Snappy),
    ("lz4", Compression::Lz4),
    ("zstd", Compression::Zstd),
];

fn vector(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/kafka")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn decode_one(name: &str) -> Batch {
    let mut batches = decode_batches(&vector(name), LIMIT).expect(name);
    assert_eq!(batches.len(), 1, "{name}");
    batches.remove(0)
}

fn b(s: &str) -> Option<&[u8]> {
    Some(s.as_bytes())
}

/// The 2,000-odd byte value of the fourth record, as `Gen.java` builds it.
fn lines() -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < 2000 {
        s.push_str(&format!("line {i}\n"));
        i += 1;
    }
    s
}

fn big() -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < 70_000 {
        s.push_str(&format!("record {}, ", i % 100));
        i += 1;
    }
    s.truncate(70_000);
    s
}

fn headers(r: &stratus_compat::kafka::records::Record) -> Vec<(&[u8], Option<&[u8]>)> {
    r.headers
        .iter()
        .map(|h| (&h.key[..], h.value.as_deref()))
        .collect()
}

/// Builds `batch` again with [`BatchBuilder`] (uncompressed), from absolute offsets and
/// timestamps, and checks it decodes to the same batch.
fn rebuild(batch: &Batch) -> Bytes {
    let mut builder = BatchBuilder::new(batch.base_offset, batch.base_timestamp, Compression::None)
        .producer(batch.producer_id, batch.producer_epoch, batch.base_sequence)
        .partition_leader_epoch(batch.partition_leader_epoch)
        .transactional(batch.is_transactional())
        .control(batch.is_control());
    for r in &batch.records {
        builder
            .push(
                batch.record_offset(r),
                batch.record_timestamp(r),
                r.key.as_deref(),
                r.value.as_deref(),
                &r.headers,
            )
            .expect("push");
    }
    let bytes = builder.finish().expect("finish");
    let mut again = decode_batches(&bytes, LIMIT).expect("decode rebuilt");
    assert_eq!(again.len(), 1);
    let again = again.remove(0);
    assert_eq!(again.records, batch.records);
    assert_eq!(again.last_offset_delta, batch.last_offset_delta);
    assert_eq!(again.max_timestamp, batch.max_timestamp);
    assert_eq!(
        again.attributes,
        batch.attributes & !0x07,
        "flags kept, codec none"
    );
    bytes
}

#[test]
fn the_java_clients_batches_decode_for_every_codec() {
    let none = vector("records-none.bin");
    for (name, codec) in CODECS {
        let file = format!("records-{name}.bin");
        let batch = decode_one(&file);
        assert_eq!(batch.compression(), codec, "{file}");
        assert_eq!(batch.base_offset, 42);
        assert_eq!(batch.partition_leader_epoch, 3);
        assert_eq!(batch.last_offset_delta, 4);
        assert_eq!(batch.last_offset(), 46);
        assert_eq!(batch.base_timestamp, T);
        assert_eq!(batch.max_timestamp, T + 123_456_789);
        assert_eq!(
            (batch.producer_id, batch.producer_epoch, batch.base_sequence),
            (1234, 5, 7)
        );
        assert!(!batch.is_transactional() && !batch.is_control());
        assert!(!batch.timestamp_type_log_append());

        let r = &batch.records;
        assert_eq!(r.len(), 4, "{file}");
        let offsets: Vec<i64> = r.iter().map(|r| batch.record_offset(r)).collect();
        assert_eq!(offsets, [42, 43, 44, 46]);
        let times: Vec<i64> = r.iter().map(|r| batch.record_timestamp(r)).collect();
        assert_eq!(times, [T, T - 5000, T + 123_456_789, T + 1]);
        assert!(r.iter().all(|r| r.attributes == 0));

        assert_eq!(r[0].key.as_deref(), b("k0"));
        assert_eq!(r[0].value.as_deref(), b("v0"));
        assert_eq!(
            headers(&r[0]),
            [
                (&b"h1"[..], b("a")),
                (b"h1", b("b")),
                (b"h2", None),
                ("clé".as_bytes(), b("")),
            ]
        );
        assert_eq!(r[1].key, None);
        assert_eq!(r[1].value.as_deref(), b("value without key"));
        assert!(r[1].headers.is_empty());
        assert_eq!(r[1].timestamp_delta, -5000);
        assert_eq!(r[2].key.as_deref(), b("k2"));
        assert_eq!(r[2].value, None);
        assert_eq!(r[3].key.as_deref(), b(""));
        assert_eq!(r[3].value.as_deref(), b(&lines()));

        // The builder writes the uncompressed batch byte for byte as the Java client does.
        assert_eq!(rebuild(&batch), none, "{file} rebuilt");
        assert_eq!(batch.encode(Compression::None).expect("encode"), none);
        // Compressed again by us, it decodes to the same batch.
        let ours = batch.encode(codec).expect("encode");
        let mut back = decode_batches(&ours, LIMIT).expect("decode ours");
        assert_eq!(back.remove(0), batch, "{file} re-encoded");
    }
}

#[test]
fn the_java_clients_multi_block_batches_decode() {
    let value = big();
    for (name, codec) in &CODECS[1..] {
        let file = format!("big-{name}.bin");
        let batch = decode_one(&file);
        assert_eq!(batch.compression(), *codec);
        assert_eq!(
            (batch.producer_id, batch.producer_epoch, batch.base_sequence),
            (-1, -1, -1)
        );
        assert_eq!(batch.partition_leader_epoch, -1);
        assert_eq!(batch.records.len(), 2);
        assert_eq!(batch.records[0].key.as_deref(), b("big"));
        assert_eq!(batch.records[0].value.as_deref(), b(&value), "{file}");
        assert_eq!(batch.records[1].key.as_deref(), b("small"));
        assert_eq!(batch.records[1].value.as_deref(), b("x"));
        assert_eq!(batch.record_offset(&batch.records[1]), 1);
        rebuild(&batch);
        // Under the limit the value needs, the batch is refused.
        assert!(decode_batches(&vector(&file), 70_000).is_err());
    }
}

#[test]
fn our_framing_matches_the_java_clients() {
    // snappy: the xerial stream header, then 32 KiB blocks.
    let java = vector("big-snappy.bin");
    let batch = decode_one("big-snappy.bin");
    let ours = batch.encode(Compression::Snappy).expect("encode");
    assert_eq!(
        &java[HEADER_LEN..HEADER_LEN + 16],
        b"\x82SNAPPY\0\0\0\0\x01\0\0\0\x01"
    );
    assert_eq!(
        &ours[HEADER_LEN..HEADER_LEN + 16],
        &java[HEADER_LEN..HEADER_LEN + 16]
    );
    // lz4: the same frame descriptor (independent 64 KiB blocks, no checksums, checksum
    // byte of the descriptor included).
    let java = vector("big-lz4.bin");
    let batch = decode_one("big-lz4.bin");
    let ours = batch.encode(Compression::Lz4).expect("encode");
    assert_eq!(
        &java[HEADER_LEN..HEADER_LEN + 7],
        [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]
    );
    assert_eq!(
        &ours[HEADER_LEN..HEADER_LEN + 7],
        &java[HEADER_LEN..HEADER_LEN + 7]
    );
}

#[test]
fn a_transaction_and_its_commit_marker() {
    let mut bytes = vector("transactional.bin");
    bytes.extend_from_slice(&vector("control-commit.bin"));
    let infos = batch_infos(&bytes).expect("infos");
    assert_eq!(infos.len(), 2);
    assert_eq!((infos[0].base_offset, infos[1].base_offset), (100, 101));
    assert!(
        infos
            .iter()
            .all(|i| i.is_transactional() && i.producer_id == 9000)
    );
    assert!(!infos[0].is_control() && infos[1].is_control());

    let batches = decode_batches(&bytes, LIMIT).expect("decode");
    let data = &batches[0];
    assert!(data.is_transactional() && !data.is_control());
    assert_eq!(
        (data.producer_id, data.producer_epoch, data.base_sequence),
        (9000, 1, 0)
    );
    assert_eq!(data.records[0].key.as_deref(), b("tk"));
    assert_eq!(data.records[0].value.as_deref(), b("tv"));
    let marker = &batches[1];
    assert!(marker.is_control() && marker.is_transactional());
    assert_eq!(marker.base_sequence, -1);
    assert_eq!(marker.records.len(), 1);
    let r = &marker.records[0];
    assert_eq!(marker.record_timestamp(r), T + 10);
    // Control key: version 0, type 1 (COMMIT); value: version 0, coordinator epoch 17.
    assert_eq!(r.key.as_deref(), Some(&[0u8, 0, 0, 1][..]));
    assert_eq!(r.value.as_deref(), Some(&[0u8, 0, 0, 0, 0, 17][..]));
    for batch in &batches {
        rebuild(batch);
    }
    assert_eq!(rebuild(marker), vector("control-commit.bin"));
}

#[test]
fn every_vector_concatenated_decodes_as_one_request() {
    let mut all = Vec::new();
    let mut names = Vec::new();
    for e in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/kafka"))
        .expect("dir")
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".bin") {
            names.push(name);
        }
    }
    names.sort();
    for name in &names {
        all.extend_from_slice(&vector(name));
    }
    assert_eq!(names.len(), 11);
    let batches = decode_batches(&all, LIMIT).expect("decode");
    assert_eq!(batches.len(), names.len());
    assert_eq!(batch_infos(&all).expect("infos").len(), names.len());
    let records: usize = batches.iter().map(|b| b.records.len()).sum();
    assert_eq!(records, 5 * 4 + 4 * 2 + 1 + 1);
}
