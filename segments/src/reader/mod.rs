//! The read path: ConsumeQueue entries from section footers, record bytes from the tail
//! cache, the block cache or ranged GETs, every record checked against its footer CRC
//! before it is returned.
//!
//! Sections of a queue are found through the recent index the writer feeds (no meta query
//! for consumers near the head) and otherwise through `SegmentCatalog::queue_segments`.
//! Reads are bounded by the queue's committed max offset ([`QueueHeads`]), so nothing
//! uncommitted is ever returned.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use stratus_compat::message::MessageExt;
use stratus_compat::types::{CommitLogOffset, QueueOffset};
use stratus_meta::{QueueKey, QueueSegment, SegmentCatalog, SegmentRef, ShardId};

use crate::SegmentError;
use crate::cache::Cache;
use crate::format::{EntryMeta, Footer, IndexEntry, verify_record, with_key};
use crate::heads::QueueHeads;
use crate::store::SegmentStore;
use crate::{handle, keys};

/// Entries examined per read at least (RocketMQ reads up to 800 ConsumeQueue entries).
pub const MIN_EXAMINED: usize = 800;
/// Sections asked from meta per lookup.
const SECTIONS_PER_LOOKUP: usize = 16;
/// Key-index hits asked beyond the answer size (room for hash collisions).
const KEY_HIT_SLACK: usize = 4;

/// The result of [`Reader::read`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadBatch {
    /// Complete encoded records, in queue order.
    pub messages: Vec<Bytes>,
    /// Where the next read starts: `from` + entries examined (filtered ones included).
    pub next_offset: QueueOffset,
    /// Entries examined.
    pub examined: u64,
}

/// Reads committed messages. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Reader {
    store: SegmentStore,
    meta: Arc<dyn SegmentCatalog>,
    cache: Arc<Cache>,
    heads: Arc<QueueHeads>,
}

fn corrupt(key: &str, what: impl Into<String>) -> SegmentError {
    SegmentError::Corrupt {
        key: key.to_owned(),
        what: what.into(),
    }
}

fn meta_err(e: stratus_meta::MetaError) -> SegmentError {
    SegmentError::Meta(Arc::new(e))
}

impl Reader {
    /// A reader over the given store, meta, caches and queue heads.
    pub fn new(
        store: SegmentStore,
        meta: Arc<dyn SegmentCatalog>,
        cache: Arc<Cache>,
        heads: Arc<QueueHeads>,
    ) -> Self {
        Self {
            store,
            meta,
            cache,
            heads,
        }
    }

    /// Reads from `from` on: examines at most max(800, `max_count`) committed entries, stops
    /// after `max_count` matches or before exceeding `max_bytes` (the first match is always
    /// returned). `filter` sees each entry's metadata; entries it rejects are skipped for
    /// good (they count as examined).
    ///
    /// # Errors
    /// Object store or meta errors; [`SegmentError::Corrupt`] when stored bytes fail their
    /// checks (never wrong bytes).
    pub async fn read(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        max_count: usize,
        max_bytes: usize,
        filter: &(dyn Fn(&EntryMeta) -> bool + Send + Sync),
    ) -> Result<ReadBatch, SegmentError> {
        let max = self.heads.max_offset(queue);
        let mut batch = ReadBatch {
            messages: Vec::new(),
            next_offset: from,
            examined: 0,
        };
        if from >= max || max_count == 0 || from.0 < 0 {
            return Ok(batch);
        }
        let budget = i64::try_from(MIN_EXAMINED.max(max_count)).unwrap_or(i64::MAX);
        let end = QueueOffset(max.0.min(from.0.saturating_add(budget)));
        let mut meta = EntryMeta {
            topic: queue.topic.clone(),
            queue_id: queue.queue_id,
            queue_offset: from,
            tags_code: 0,
            store_ts: 0,
        };
        let mut pos = from;
        let mut bytes = 0usize;
        let mut sections: VecDeque<QueueSegment> = VecDeque::new();
        let mut done = false;
        while pos < end && !done {
            let Some(seg) = sections.pop_front() else {
                sections = self
                    .sections(queue, pos, SECTIONS_PER_LOOKUP)
                    .await?
                    .into_iter()
                    .filter(|s| s.first_offset.add(i64::from(s.count)) > pos)
                    .collect();
                if sections.is_empty() {
                    // Nothing indexed at or after `pos` (should not happen below the
                    // committed max); return what was read.
                    break;
                }
                continue;
            };
            let seg_end = seg.first_offset.add(i64::from(seg.count));
            if seg_end <= pos {
                continue;
            }
            if seg.first_offset > pos {
                // Entries before this section are gone (retention): skip past them.
                pos = seg.first_offset.min(end);
                sections.push_front(seg);
                continue;
            }
            let footer = self.footer(&seg.segment).await?;
            let fq = queue_in_footer(&footer, queue, &seg)?;
            let stop = seg_end.min(end);
            let mut wanted: Vec<IndexEntry> = Vec::new();
            while pos < stop {
                let Some(e) = fq.entry(pos) else {
                    return Err(corrupt(
                        &seg.segment.object_key,
                        "footer lacks an entry meta lists",
                    ));
                };
                meta.queue_offset = pos;
                meta.tags_code = e.tags_code;
                meta.store_ts = e.store_ts;
                if filter(&meta) {
                    let size = e.size as usize;
                    let first = batch.messages.is_empty() && wanted.is_empty();
                    if !first && bytes + size > max_bytes {
                        done = true;
                        break;
                    }
                    bytes += size;
                    wanted.push(*e);
                }
                pos = pos.add(1);
                if batch.messages.len() + wanted.len() >= max_count {
                    done = true;
                    break;
                }
            }
            if !wanted.is_empty() {
                let records = self.records(&seg.segment, &wanted).await?;
                batch.messages.extend(records);
            }
        }
        batch.next_offset = pos;
        batch.examined = u64::try_from(pos.0 - from.0).unwrap_or(0);
        Ok(batch)
    }

    /// The record a commit-log handle points at (VIEW_MESSAGE_BY_ID, send-back); `None`
    /// when no committed record starts there.
    ///
    /// # Errors
    /// Object store or meta errors; [`SegmentError::Corrupt`].
    pub async fn read_by_handle(
        &self,
        handle: CommitLogOffset,
    ) -> Result<Option<Bytes>, SegmentError> {
        let Some((shard, local)) = handle::decode(handle) else {
            return Ok(None);
        };
        let Ok(local_i) = i64::try_from(local) else {
            return Ok(None);
        };
        let seg = self
            .meta
            .segment_by_commit_log_offset(shard, CommitLogOffset(local_i))
            .await
            .map_err(meta_err)?;
        let Some(seg) = seg else { return Ok(None) };
        if seg.shard != shard {
            return Ok(None);
        }
        self.record_in(&seg, local_i).await
    }

    /// QUERY_MESSAGE: the committed records of `shard` in `topic` that have `key` among
    /// their keys ([`crate::keys`]) and a store time in `[begin_ms, end_ms]`: the newest
    /// `max` of them, answered in commit-log order (as the reference sorts its hits). One
    /// meta lookup in the key index (two for a key in the client id layout, which may be a
    /// unique key indexed by its time), then per hit its section (a meta lookup unless an
    /// earlier hit's section holds it), footer and record, through the caches. Hash hits whose record lacks the key (collisions) and hits retention removed
    /// are skipped.
    ///
    /// # Errors
    /// Object store or meta errors; [`SegmentError::Corrupt`].
    pub async fn find_by_key(
        &self,
        shard: ShardId,
        topic: &str,
        key: &str,
        begin_ms: i64,
        end_ms: i64,
        max: usize,
    ) -> Result<Vec<Bytes>, SegmentError> {
        if max == 0 || key.is_empty() {
            return Ok(Vec::new());
        }
        // A few more than wanted, so that a rare collision does not hide a match.
        let limit = u32::try_from(max.saturating_add(KEY_HIT_SLACK)).unwrap_or(u32::MAX);
        let hash = keys::key_hash(topic, key);
        let mut hits = self
            .meta
            .find_keys(shard, hash, begin_ms, end_ms, limit)
            .await
            .map_err(meta_err)?;
        // A key in the client id layout may have been indexed as a unique key, by its time.
        if let Some(id_time) = keys::uniq_id_time(key) {
            let unique = self
                .meta
                .find_unique_keys(shard, id_time, hash, begin_ms, end_ms, limit)
                .await
                .map_err(meta_err)?;
            if !unique.is_empty() {
                hits.extend(unique);
                hits.sort_by(|a, b| {
                    (b.store_ts, b.log_offset.0).cmp(&(a.store_ts, a.log_offset.0))
                });
                hits.dedup_by_key(|h| h.log_offset);
                hits.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            }
        }
        let mut sections: Vec<SegmentRef> = Vec::new();
        let mut out = Vec::new();
        for hit in hits {
            if out.len() >= max {
                break;
            }
            let local = hit.log_offset.0;
            let known = sections
                .iter()
                .find(|s| s.commit_log_start.0 <= local && local < s.commit_log_end.0)
                .cloned();
            let seg = match known {
                Some(s) => s,
                None => {
                    let found = self
                        .meta
                        .segment_by_commit_log_offset(shard, hit.log_offset)
                        .await
                        .map_err(meta_err)?;
                    let Some(s) = found else { continue };
                    sections.push(s.clone());
                    s
                }
            };
            let Some(record) = self.record_in(&seg, local).await? else {
                continue;
            };
            let mut view = record.clone();
            let Ok(msg) = MessageExt::decode(&mut view) else {
                return Err(corrupt(&seg.object_key, "indexed record does not decode"));
            };
            if keys::has_key(&msg.topic, &msg.properties, topic, key) {
                out.push((local, record));
            }
        }
        out.sort_by_key(|(local, _)| *local);
        Ok(out.into_iter().map(|(_, r)| r).collect())
    }

    /// The record starting at local commit-log offset `local` of section `seg`, if one does.
    async fn record_in(&self, seg: &SegmentRef, local: i64) -> Result<Option<Bytes>, SegmentError> {
        if local < seg.commit_log_start.0 || local >= seg.commit_log_end.0 {
            return Ok(None);
        }
        let Ok(rel) = u32::try_from(local - seg.commit_log_start.0) else {
            return Ok(None);
        };
        let footer = self.footer(seg).await?;
        let Some((_, _, entry)) = footer.entry_at(rel) else {
            return Ok(None);
        };
        let entry = *entry;
        let mut records = self.records(seg, &[entry]).await?;
        Ok(records.pop())
    }

    /// SEARCH_OFFSET_BY_TIMESTAMP: with `upper` false (LOWER), the first offset whose store
    /// time is ≥ `ts_ms` (the max offset if none); with `upper` true, the last offset whose
    /// store time is ≤ `ts_ms` (the min offset if none). 0 for an empty queue.
    ///
    /// # Errors
    /// Object store or meta errors; [`SegmentError::Corrupt`].
    pub async fn search_offset_by_time(
        &self,
        queue: &QueueKey,
        ts_ms: i64,
        upper: bool,
    ) -> Result<QueueOffset, SegmentError> {
        let min = self.heads.min_offset(queue);
        let max = self.heads.max_offset(queue);
        if max <= min {
            return Ok(max.max(min));
        }
        let clamp = |o: QueueOffset| o.max(min).min(max);
        let first = self
            .meta
            .queue_segment_by_time(queue, ts_ms)
            .await
            .map_err(meta_err)?;
        let Some(mut seg) = first else {
            // Every entry is older than ts_ms.
            return Ok(if upper { clamp(max.add(-1)) } else { max });
        };
        if !upper {
            let footer = self.footer(&seg.segment).await?;
            let fq = queue_in_footer(&footer, queue, &seg)?;
            let found = fq.entries.iter().position(|e| e.store_ts >= ts_ms);
            let off = found.map_or(fq.end_offset(), |i| fq.first_offset.add(i as i64));
            return Ok(clamp(off));
        }
        // UPPER: the entry before the first one newer than ts_ms, which may lie in a later
        // section when several sections end exactly at ts_ms.
        loop {
            let footer = self.footer(&seg.segment).await?;
            let fq = queue_in_footer(&footer, queue, &seg)?;
            if let Some(i) = fq.entries.iter().position(|e| e.store_ts > ts_ms) {
                return Ok(clamp(fq.first_offset.add(i as i64 - 1)));
            }
            let next = fq.end_offset();
            if next >= max {
                return Ok(clamp(max.add(-1)));
            }
            match self.sections(queue, next, 1).await?.into_iter().next() {
                Some(s) => seg = s,
                None => return Ok(clamp(max.add(-1))),
            }
        }
    }

    /// Store time of the entry at `offset`; `None` outside the committed range.
    ///
    /// # Errors
    /// Object store or meta errors; [`SegmentError::Corrupt`].
    pub async fn store_time_at(
        &self,
        queue: &QueueKey,
        offset: QueueOffset,
    ) -> Result<Option<i64>, SegmentError> {
        if offset < self.heads.min_offset(queue) || offset >= self.heads.max_offset(queue) {
            return Ok(None);
        }
        let Some(seg) = self.sections(queue, offset, 1).await?.into_iter().next() else {
            return Ok(None);
        };
        let footer = self.footer(&seg.segment).await?;
        let fq = queue_in_footer(&footer, queue, &seg)?;
        Ok(fq.entry(offset).map(|e| e.store_ts))
    }

    /// Sections of `queue` from the one holding `from`: recent index, else meta.
    async fn sections(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        limit: usize,
    ) -> Result<Vec<QueueSegment>, SegmentError> {
        if let Some(s) = self.cache.recent_sections(queue, from, limit) {
            return Ok(s);
        }
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        self.meta
            .queue_segments(queue, from, limit)
            .await
            .map_err(meta_err)
    }

    /// A section's decoded footer: footer cache, else the tail cache, else a ranged GET.
    async fn footer(&self, seg: &SegmentRef) -> Result<Arc<Footer>, SegmentError> {
        let key = seg.object_key.as_str();
        self.cache
            .footer(key, seg.footer_pos, async {
                let start = seg.footer_pos;
                let end = start
                    .checked_add(seg.footer_len)
                    .ok_or_else(|| corrupt(key, "footer range overflows"))?;
                let bytes = match self.cache.tail(key).await {
                    Some(obj) => slice(key, &obj, start, end)?,
                    None => self.store.get_range(key, start..end).await?,
                };
                if bytes.len() as u64 != seg.footer_len {
                    return Err(corrupt(key, "object shorter than its footer"));
                }
                let footer = Footer::decode(&bytes).map_err(|e| with_key(e, key))?;
                if footer.shard != seg.shard || footer.data_len != seg.section_len {
                    return Err(corrupt(key, "footer does not match its section"));
                }
                Ok(Arc::new(footer))
            })
            .await
    }

    /// The records of `entries` (one section), CRC-checked. Bytes that fail their checks
    /// may have come from a cache (a damaged GET is cached like a good one): the object's
    /// cached bytes are dropped, so the next read fetches it again.
    async fn records(
        &self,
        seg: &SegmentRef,
        entries: &[IndexEntry],
    ) -> Result<Vec<Bytes>, SegmentError> {
        let r = self.checked_records(seg, entries).await;
        if let Err(SegmentError::Corrupt { .. }) = &r {
            self.cache
                .invalidate_objects(std::slice::from_ref(&seg.object_key))
                .await;
        }
        r
    }

    async fn checked_records(
        &self,
        seg: &SegmentRef,
        entries: &[IndexEntry],
    ) -> Result<Vec<Bytes>, SegmentError> {
        let key = seg.object_key.as_str();
        let tail = self.cache.tail(key).await;
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let start = seg.section_pos + u64::from(e.pos);
            let end = start + u64::from(e.size);
            let rec = match &tail {
                Some(obj) => slice(key, obj, start, end)?,
                None => self.read_blocks(key, start, end).await?,
            };
            verify_record(key, e, &rec)?;
            out.push(rec);
        }
        Ok(out)
    }

    /// Bytes `start..end` of an object through the block cache.
    async fn read_blocks(&self, key: &str, start: u64, end: u64) -> Result<Bytes, SegmentError> {
        let bs = self.cache.block_size();
        let first = start / bs;
        let last = (end.max(start + 1) - 1) / bs;
        let mut parts = Vec::with_capacity(usize::try_from(last - first + 1).unwrap_or(1));
        for idx in first..=last {
            let block = self
                .cache
                .block(
                    key,
                    idx,
                    self.store.get_range(key, idx * bs..(idx + 1) * bs),
                )
                .await?;
            let b_start = idx * bs;
            let from = start.max(b_start) - b_start;
            let to = end.min(b_start + bs) - b_start;
            parts.push(slice(key, &block, from, to)?);
        }
        if parts.len() == 1 {
            return Ok(parts.pop().unwrap_or_default());
        }
        let mut joined = BytesMut::with_capacity(usize::try_from(end - start).unwrap_or(0));
        for p in parts {
            joined.extend_from_slice(&p);
        }
        Ok(joined.freeze())
    }
}

/// The queue's entries in a footer, checked against what meta says about the section.
fn queue_in_footer<'a>(
    footer: &'a Footer,
    queue: &QueueKey,
    seg: &QueueSegment,
) -> Result<&'a crate::format::FooterQueue, SegmentError> {
    let key = &seg.segment.object_key;
    let fq = footer.queue(&queue.topic, queue.queue_id).ok_or_else(|| {
        corrupt(
            key,
            format!(
                "queue {}/{} missing from footer",
                queue.topic, queue.queue_id
            ),
        )
    })?;
    if fq.first_offset != seg.first_offset || fq.entries.len() != seg.count as usize {
        return Err(corrupt(
            key,
            "footer and meta disagree on the queue's entries",
        ));
    }
    Ok(fq)
}

/// `bytes[start..end]`, or a corruption error when the object is too short.
fn slice(key: &str, bytes: &Bytes, start: u64, end: u64) -> Result<Bytes, SegmentError> {
    let (Ok(s), Ok(e)) = (usize::try_from(start), usize::try_from(end)) else {
        return Err(corrupt(key, "range overflows"));
    };
    if s > e || e > bytes.len() {
        return Err(corrupt(
            key,
            format!("object too short for bytes {start}..{end}"),
        ));
    }
    Ok(bytes.slice(s..e))
}

#[cfg(test)]
mod tests;
