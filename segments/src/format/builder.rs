//! [`SegmentBuilder`]: pure, in-memory assembly of one segment object.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_meta::{KeyIndexEntry, QueueAppend, SegmentEffect, ShardId};

use super::{
    ENTRY_LEN, EntryMeta, Footer, FooterQueue, HEADER_LEN, IndexEntry, SectionLocation,
    TRAILER_LEN, encode_header, encode_table,
};

/// Collects records of any number of shards; [`SegmentBuilder::seal`] lays them out.
#[derive(Debug, Default)]
pub struct SegmentBuilder {
    sections: BTreeMap<ShardId, SectionBuilder>,
    data_len: usize,
}

#[derive(Debug)]
struct SectionBuilder {
    commit_log_start: u64,
    /// Records as pushed; concatenated by `seal`, outside the writer's lock.
    records: Vec<Bytes>,
    data_len: usize,
    queues: HashMap<Topic, HashMap<QueueId, QueueBuilder>>,
    /// Metadata effects to commit with the section, in push order.
    effects: Vec<SegmentEffect>,
    /// Key-index entries of the section's records, committed as one
    /// [`SegmentEffect::KeysIndexed`] after the other effects.
    keys: Vec<KeyIndexEntry>,
}

#[derive(Debug)]
struct QueueBuilder {
    first_offset: QueueOffset,
    entries: Vec<IndexEntry>,
    /// Index in the section's `records` of each entry.
    records: Vec<usize>,
    min_ts: i64,
    max_ts: i64,
}

/// A sealed segment: the object bytes and what to commit for each section.
#[derive(Debug, Clone)]
pub struct SealedSegment {
    /// The whole object.
    pub bytes: Bytes,
    /// One per shard, in shard order.
    pub sections: Vec<SealedSection>,
}

/// One shard's section of a sealed segment.
#[derive(Debug, Clone)]
pub struct SealedSection {
    /// Shard.
    pub shard: ShardId,
    /// Position of the records in the object.
    pub section_pos: u64,
    /// Length of the records.
    pub section_len: u64,
    /// Position of the footer.
    pub footer_pos: u64,
    /// Length of the footer.
    pub footer_len: u64,
    /// Local commit-log offset of the first record.
    pub commit_log_start: u64,
    /// One past the last byte, local.
    pub commit_log_end: u64,
    /// Entries added per queue, sorted by (topic, queue id).
    pub queues: Vec<QueueAppend>,
    /// The decoded footer (what readers cache).
    pub footer: Arc<Footer>,
    /// Metadata effects to commit together with the section, in push order (not part of
    /// the object bytes).
    pub effects: Vec<SegmentEffect>,
}

impl SealedSection {
    /// Where the section is in its object.
    pub fn location(&self) -> SectionLocation {
        SectionLocation {
            shard: self.shard,
            section_pos: self.section_pos,
            section_len: self.section_len,
            footer_pos: self.footer_pos,
            footer_len: self.footer_len,
        }
    }
}

impl SegmentBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record bytes pushed so far (all shards).
    pub fn len(&self) -> usize {
        self.data_len
    }

    /// True when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// Record bytes of one shard's section.
    pub fn section_len(&self, shard: ShardId) -> usize {
        self.sections.get(&shard).map_or(0, |s| s.data_len)
    }

    /// Shards with a section.
    pub fn shards(&self) -> impl Iterator<Item = ShardId> + '_ {
        self.sections.keys().copied()
    }

    /// Appends one encoded record of `shard` at local commit-log offset `local` and returns
    /// its position inside the section. Cheap: the record is kept by reference; copying and
    /// checksumming happen in [`SegmentBuilder::seal`].
    ///
    /// The caller keeps the invariants: `local` follows the previous record of the shard
    /// (`commit_log_start + section_len`), the queue offset follows the queue's previous
    /// entry in this builder, records are not empty, and the section stays below 4 GiB.
    pub fn push(&mut self, shard: ShardId, local: u64, record: Bytes, meta: &EntryMeta) -> u32 {
        let section = self
            .sections
            .entry(shard)
            .or_insert_with(|| SectionBuilder {
                commit_log_start: local,
                records: Vec::new(),
                data_len: 0,
                queues: HashMap::new(),
                effects: Vec::new(),
                keys: Vec::new(),
            });
        debug_assert_eq!(local, section.commit_log_start + section.data_len as u64);
        let pos = u32::try_from(section.data_len).expect("writer seals sections below 4 GiB");
        let size = u32::try_from(record.len()).expect("records are below 4 GiB");
        section.data_len += record.len();
        self.data_len += record.len();
        let record_idx = section.records.len();
        section.records.push(record);
        let entry = IndexEntry {
            pos,
            size,
            tags_code: meta.tags_code,
            store_ts: meta.store_ts,
            // Filled in by `seal`.
            crc: 0,
        };
        let by_id = match section.queues.get_mut(&meta.topic) {
            Some(m) => m,
            None => section.queues.entry(meta.topic.clone()).or_default(),
        };
        let q = by_id.entry(meta.queue_id).or_insert_with(|| QueueBuilder {
            first_offset: meta.queue_offset,
            entries: Vec::new(),
            records: Vec::new(),
            min_ts: meta.store_ts,
            max_ts: meta.store_ts,
        });
        debug_assert_eq!(
            meta.queue_offset,
            q.first_offset.add(q.entries.len() as i64)
        );
        q.entries.push(entry);
        q.records.push(record_idx);
        q.min_ts = q.min_ts.min(meta.store_ts);
        q.max_ts = q.max_ts.max(meta.store_ts);
        pos
    }

    /// Adds metadata effects to `shard`'s section, after those already pushed; they are
    /// committed with the section (see [`SealedSection::effects`]). The section must exist
    /// (a record of `shard` was pushed); otherwise the effects are dropped and `false` is
    /// returned.
    pub fn push_effects(
        &mut self,
        shard: ShardId,
        effects: impl IntoIterator<Item = SegmentEffect>,
    ) -> bool {
        match self.sections.get_mut(&shard) {
            Some(s) => {
                s.effects.extend(effects);
                true
            }
            None => false,
        }
    }

    /// Adds key-index entries to `shard`'s section (see [`crate::keys`]); like
    /// [`SegmentBuilder::push_effects`], `false` (and nothing kept) when the section does not
    /// exist.
    pub fn push_keys(
        &mut self,
        shard: ShardId,
        keys: impl IntoIterator<Item = KeyIndexEntry>,
    ) -> bool {
        match self.sections.get_mut(&shard) {
            Some(s) => {
                s.keys.extend(keys);
                true
            }
            None => false,
        }
    }

    /// Drops a shard's section (its shard was closed); returns the record bytes dropped.
    pub fn remove_section(&mut self, shard: ShardId) -> usize {
        let n = self.sections.remove(&shard).map_or(0, |s| s.data_len);
        self.data_len -= n;
        n
    }

    /// Lays the segment out: header, then each shard's records and footer, then the
    /// section table and trailer.
    pub fn seal(self) -> SealedSegment {
        let footer_estimate: usize = self
            .sections
            .values()
            .map(|s| 32 + s.records.len() * ENTRY_LEN + s.queues.len() * 160)
            .sum();
        let mut out = BytesMut::with_capacity(
            HEADER_LEN
                + self.data_len
                + footer_estimate
                + 8
                + 36 * self.sections.len()
                + TRAILER_LEN,
        );
        encode_header(&mut out);
        let mut sections = Vec::with_capacity(self.sections.len());
        for (shard, s) in self.sections {
            let section_pos = out.len() as u64;
            let section_len = s.data_len as u64;
            let mut crcs = Vec::with_capacity(s.records.len());
            for r in &s.records {
                out.extend_from_slice(r);
                crcs.push(crc32fast::hash(r));
            }
            let mut queues: Vec<(Topic, QueueId, QueueBuilder)> = s
                .queues
                .into_iter()
                .flat_map(|(t, m)| m.into_iter().map(move |(id, q)| (t.clone(), id, q)))
                .collect();
            queues.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            for (_, _, q) in &mut queues {
                for (e, idx) in q.entries.iter_mut().zip(&q.records) {
                    e.crc = crcs.get(*idx).copied().unwrap_or_default();
                }
            }
            let appends = queues
                .iter()
                .map(|(topic, queue_id, q)| QueueAppend {
                    topic: topic.clone(),
                    queue_id: *queue_id,
                    first_offset: q.first_offset,
                    count: u32::try_from(q.entries.len()).expect("fewer than 2^32 entries"),
                    min_store_ts: q.min_ts,
                    max_store_ts: q.max_ts,
                })
                .collect();
            let footer = Footer {
                shard,
                commit_log_start: s.commit_log_start,
                data_len: section_len,
                queues: queues
                    .into_iter()
                    .map(|(topic, queue_id, q)| FooterQueue {
                        topic,
                        queue_id,
                        first_offset: q.first_offset,
                        entries: q.entries,
                    })
                    .collect(),
            };
            let footer_pos = out.len() as u64;
            footer.encode(&mut out);
            let mut effects = s.effects;
            if !s.keys.is_empty() {
                effects.push(SegmentEffect::KeysIndexed {
                    shard,
                    keys: s.keys,
                });
            }
            sections.push(SealedSection {
                shard,
                section_pos,
                section_len,
                footer_pos,
                footer_len: out.len() as u64 - footer_pos,
                commit_log_start: s.commit_log_start,
                commit_log_end: s.commit_log_start + section_len,
                queues: appends,
                footer: Arc::new(footer),
                effects,
            });
        }
        let rows: Vec<SectionLocation> = sections.iter().map(SealedSection::location).collect();
        encode_table(&mut out, &rows);
        SealedSegment {
            bytes: out.freeze(),
            sections,
        }
    }
}
