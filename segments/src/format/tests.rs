use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_meta::ShardId;

use super::*;

fn meta(topic: &str, q: i32, off: i64, ts: i64) -> EntryMeta {
    EntryMeta {
        topic: Topic::new(topic),
        queue_id: QueueId(q),
        queue_offset: QueueOffset(off),
        tags_code: off * 7,
        store_ts: ts,
    }
}

/// Two shards, three queues, records of distinct content.
fn sample() -> (SealedSegment, Vec<(ShardId, Bytes)>) {
    let mut b = SegmentBuilder::new();
    let mut pushed = Vec::new();
    let mut local = [100u64, 0u64];
    for i in 0..10i64 {
        let shard = ShardId((i % 2) as u32);
        let rec = Bytes::from(format!("record-{i}-{}", "x".repeat(i as usize)));
        let (topic, q) = if i % 2 == 0 {
            ("TopicA", 0)
        } else if i % 3 == 0 {
            ("TopicB", 1)
        } else {
            ("TopicA", 3)
        };
        let n = pushed
            .iter()
            .filter(|(s, _, t, qq): &&(ShardId, Bytes, &str, i32)| {
                *s == shard && *t == topic && *qq == q
            })
            .count();
        let l = &mut local[shard.0 as usize];
        b.push(
            shard,
            *l,
            rec.clone(),
            &meta(topic, q, 5 + n as i64, 1000 + i),
        );
        *l += rec.len() as u64;
        pushed.push((shard, rec, topic, q));
    }
    (
        b.seal(),
        pushed.into_iter().map(|(s, r, _, _)| (s, r)).collect(),
    )
}

#[test]
fn sealed_segment_round_trips_through_table_and_footers() {
    let (seg, pushed) = sample();
    let table = decode_section_table(&seg.bytes).unwrap();
    assert_eq!(
        table,
        seg.sections
            .iter()
            .map(SealedSection::location)
            .collect::<Vec<_>>()
    );
    assert_eq!(table.len(), 2);
    for s in &seg.sections {
        let footer_bytes =
            &seg.bytes[s.footer_pos as usize..(s.footer_pos + s.footer_len) as usize];
        let footer = Footer::decode(footer_bytes).unwrap();
        assert_eq!(&footer, s.footer.as_ref());
        assert_eq!(footer.data_len, s.section_len);
        assert_eq!(s.commit_log_end - s.commit_log_start, s.section_len);
        // Records of the shard, in push order, are the section's data.
        let expected: Vec<u8> = pushed
            .iter()
            .filter(|(sh, _)| *sh == s.shard)
            .flat_map(|(_, r)| r.to_vec())
            .collect();
        let data = &seg.bytes[s.section_pos as usize..(s.section_pos + s.section_len) as usize];
        assert_eq!(data, &expected[..]);
        for q in &footer.queues {
            let append = s
                .queues
                .iter()
                .find(|a| a.topic == q.topic && a.queue_id == q.queue_id)
                .unwrap();
            assert_eq!(append.first_offset, QueueOffset(5));
            assert_eq!(append.count as usize, q.entries.len());
            for e in &q.entries {
                let rec = seg.bytes.slice(
                    (s.section_pos + u64::from(e.pos)) as usize
                        ..(s.section_pos + u64::from(e.pos + e.size)) as usize,
                );
                verify_record("k", e, &rec).unwrap();
                let (fq, _, at) = footer.entry_at(e.pos).unwrap();
                assert_eq!((fq.queue_id, at), (q.queue_id, e));
            }
        }
    }
    assert_eq!(seg.sections[0].commit_log_start, 100);
    assert_eq!(seg.sections[1].commit_log_start, 0);
}

#[test]
fn any_flipped_record_byte_fails_its_entry_check() {
    let (seg, _) = sample();
    for s in &seg.sections {
        for q in &s.footer.queues {
            for e in &q.entries {
                let start = (s.section_pos + u64::from(e.pos)) as usize;
                let rec = seg.bytes.slice(start..start + e.size as usize);
                for i in 0..rec.len() {
                    let mut bad = rec.to_vec();
                    bad[i] ^= 0x40;
                    assert!(
                        verify_record("k", e, &Bytes::from(bad)).is_err(),
                        "byte {i}"
                    );
                }
                assert!(verify_record("k", e, &rec.slice(1..)).is_err());
            }
        }
    }
}

#[test]
fn any_flipped_footer_or_table_byte_is_detected() {
    let (seg, _) = sample();
    let s = &seg.sections[0];
    let footer = &seg.bytes[s.footer_pos as usize..(s.footer_pos + s.footer_len) as usize];
    for i in 0..footer.len() {
        let mut bad = footer.to_vec();
        bad[i] ^= 0x01;
        assert!(Footer::decode(&bad).is_err(), "footer byte {i}");
    }
    assert!(Footer::decode(&footer[..footer.len() - 1]).is_err());
    let table_start = seg
        .sections
        .last()
        .map(|s| (s.footer_pos + s.footer_len) as usize)
        .unwrap();
    for i in (0..HEADER_LEN).chain(table_start..seg.bytes.len()) {
        let mut bad = seg.bytes.to_vec();
        bad[i] ^= 0x01;
        assert!(decode_section_table(&bad).is_err(), "object byte {i}");
    }
}

#[test]
fn garbage_never_panics_the_decoders() {
    for len in 0..64 {
        let junk: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
        assert!(Footer::decode(&junk).is_err());
        assert!(decode_section_table(&junk).is_err());
    }
}

#[test]
fn removing_a_section_drops_its_bytes() {
    let mut b = SegmentBuilder::new();
    b.push(
        ShardId(1),
        0,
        Bytes::from_static(b"abc"),
        &meta("T", 0, 0, 1),
    );
    b.push(
        ShardId(2),
        0,
        Bytes::from_static(b"defg"),
        &meta("T", 0, 0, 1),
    );
    assert_eq!(b.len(), 7);
    assert_eq!(b.remove_section(ShardId(1)), 3);
    assert_eq!(b.len(), 4);
    let seg = b.seal();
    assert_eq!(seg.sections.len(), 1);
    assert_eq!(seg.sections[0].shard, ShardId(2));
}

proptest! {
    #[test]
    fn footers_round_trip(
        shard in any::<u32>(),
        start in 0u64..(1 << 40),
        queues in prop::collection::btree_map(
            ("[A-Za-z%_-]{1,20}", any::<i32>()),
            (0i64..1_000_000, prop::collection::vec((1u32..500, any::<i64>(), any::<i64>(), any::<u32>()), 1..20)),
            0..6,
        ),
    ) {
        let mut pos = 0u32;
        let queues: Vec<FooterQueue> = queues
            .into_iter()
            .map(|((topic, qid), (first, entries))| FooterQueue {
                topic: Topic::new(topic),
                queue_id: QueueId(qid),
                first_offset: QueueOffset(first),
                entries: entries
                    .into_iter()
                    .map(|(size, tags_code, store_ts, crc)| {
                        let e = IndexEntry { pos, size, tags_code, store_ts, crc };
                        pos += size;
                        e
                    })
                    .collect(),
            })
            .collect();
        let footer = Footer { shard: ShardId(shard), commit_log_start: start, data_len: u64::from(pos), queues };
        let mut buf = BytesMut::new();
        footer.encode(&mut buf);
        prop_assert_eq!(Footer::decode(&buf).unwrap(), footer);
    }

    #[test]
    fn builder_round_trips_arbitrary_records(
        records in prop::collection::vec((0u32..3, 0i32..3, prop::collection::vec(any::<u8>(), 1..300)), 1..40),
    ) {
        let mut b = SegmentBuilder::new();
        let mut local = std::collections::HashMap::new();
        let mut offsets = std::collections::HashMap::new();
        for (shard, q, data) in &records {
            let l = local.entry(*shard).or_insert(0u64);
            let o = offsets.entry((*shard, *q)).or_insert(0i64);
            b.push(ShardId(*shard), *l, Bytes::from(data.clone()), &meta("T", *q, *o, 0));
            *l += data.len() as u64;
            *o += 1;
        }
        let seg = b.seal();
        prop_assert_eq!(decode_section_table(&seg.bytes).unwrap().len(), local.len());
        for s in &seg.sections {
            let f = Footer::decode(&seg.bytes[s.footer_pos as usize..(s.footer_pos + s.footer_len) as usize]).unwrap();
            let mut seen = Vec::new();
            for q in &f.queues {
                let mine: Vec<&Vec<u8>> = records.iter().filter(|(sh, qq, _)| *sh == s.shard.0 && *qq == q.queue_id.0).map(|(_, _, d)| d).collect();
                prop_assert_eq!(mine.len(), q.entries.len());
                for (e, d) in q.entries.iter().zip(mine) {
                    let start = (s.section_pos + u64::from(e.pos)) as usize;
                    prop_assert_eq!(&seg.bytes[start..start + e.size as usize], &d[..]);
                    seen.push(e.pos);
                }
            }
            prop_assert_eq!(seen.len(), records.iter().filter(|(sh, _, _)| *sh == s.shard.0).count());
        }
    }
}
