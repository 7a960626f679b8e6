//! Section footers: the ConsumeQueue index of one shard's section, and the entry metadata
//! filters look at.

use bytes::{BufMut, BytesMut};
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_meta::ShardId;

use super::{Cursor, ENTRY_LEN, FOOTER_MAGIC, corrupt};
use crate::SegmentError;

/// What the builder is told about a record, and what read filters see of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMeta {
    /// Topic.
    pub topic: Topic,
    /// Queue id.
    pub queue_id: QueueId,
    /// Offset of the entry in its queue.
    pub queue_offset: QueueOffset,
    /// Tags hash code (0 without a tag).
    pub tags_code: i64,
    /// Store time, ms.
    pub store_ts: i64,
}

/// One ConsumeQueue entry as stored in a footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// Byte position of the record inside the section's data.
    pub pos: u32,
    /// Record length.
    pub size: u32,
    /// Tags hash code.
    pub tags_code: i64,
    /// Store time, ms.
    pub store_ts: i64,
    /// CRC-32 of the whole record.
    pub crc: u32,
}

/// The entries one section holds for one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooterQueue {
    /// Topic.
    pub topic: Topic,
    /// Queue id.
    pub queue_id: QueueId,
    /// Queue offset of `entries[0]`.
    pub first_offset: QueueOffset,
    /// Entries in queue-offset order.
    pub entries: Vec<IndexEntry>,
}

impl FooterQueue {
    /// One past the last offset.
    pub fn end_offset(&self) -> QueueOffset {
        self.first_offset.add(self.entries.len() as i64)
    }

    /// The entry at queue offset `offset`, if this section holds it.
    pub fn entry(&self, offset: QueueOffset) -> Option<&IndexEntry> {
        let idx = usize::try_from(offset.0.checked_sub(self.first_offset.0)?).ok()?;
        self.entries.get(idx)
    }
}

/// A decoded section footer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footer {
    /// Shard of the section.
    pub shard: ShardId,
    /// Local commit-log offset of the section's first byte.
    pub commit_log_start: u64,
    /// Length of the section's data.
    pub data_len: u64,
    /// Queues, sorted by (topic, queue id).
    pub queues: Vec<FooterQueue>,
}

impl Footer {
    /// The entries of one queue.
    pub fn queue(&self, topic: &Topic, queue_id: QueueId) -> Option<&FooterQueue> {
        self.queues
            .binary_search_by(|q| (&q.topic, q.queue_id).cmp(&(topic, queue_id)))
            .ok()
            .and_then(|i| self.queues.get(i))
    }

    /// The entry whose record starts at `pos` in the section, with its queue.
    pub fn entry_at(&self, pos: u32) -> Option<(&FooterQueue, QueueOffset, &IndexEntry)> {
        self.queues.iter().find_map(|q| {
            // Positions grow with offsets inside one queue.
            let i = q.entries.binary_search_by_key(&pos, |e| e.pos).ok()?;
            Some((q, q.first_offset.add(i as i64), q.entries.get(i)?))
        })
    }

    /// Approximate heap size, for cache weighing.
    pub fn weight(&self) -> usize {
        64 + self
            .queues
            .iter()
            .map(|q| 64 + q.topic.as_str().len() + q.entries.len() * size_of::<IndexEntry>())
            .sum::<usize>()
    }

    /// Appends the encoded footer to `dst`.
    pub fn encode(&self, dst: &mut BytesMut) {
        let start = dst.len();
        dst.put_slice(&FOOTER_MAGIC);
        dst.put_u32(self.shard.0);
        dst.put_u64(self.commit_log_start);
        dst.put_u64(self.data_len);
        dst.put_u32(u32::try_from(self.queues.len()).expect("fewer than 2^32 queues"));
        for q in &self.queues {
            let topic = q.topic.as_str().as_bytes();
            dst.put_u16(u16::try_from(topic.len()).expect("topic shorter than 64 KiB"));
            dst.put_slice(topic);
            dst.put_i32(q.queue_id.0);
            dst.put_i64(q.first_offset.0);
            dst.put_u32(u32::try_from(q.entries.len()).expect("fewer than 2^32 entries"));
            for e in &q.entries {
                dst.put_u32(e.pos);
                dst.put_u32(e.size);
                dst.put_i64(e.tags_code);
                dst.put_i64(e.store_ts);
                dst.put_u32(e.crc);
            }
        }
        let crc = crc32fast::hash(&dst[start..]);
        dst.put_u32(crc);
    }

    /// Decodes and verifies a footer.
    ///
    /// # Errors
    /// [`SegmentError::Corrupt`] (with an empty key) if the checksum fails or the bytes are
    /// malformed: truncated, unsorted queues, entries outside the section.
    pub fn decode(bytes: &[u8]) -> Result<Self, SegmentError> {
        if bytes.len() < 4 + 4 + 8 + 8 + 4 + 4 {
            return Err(corrupt("footer too short"));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body).to_be_bytes() != crc {
            return Err(corrupt("footer checksum mismatch"));
        }
        let mut c = Cursor::new(body);
        if c.take(4, "footer magic")? != FOOTER_MAGIC {
            return Err(corrupt("bad footer magic"));
        }
        let shard = ShardId(c.u32("shard")?);
        let commit_log_start = c.u64("commit log start")?;
        let data_len = c.u64("data length")?;
        let queue_count = c.u32("queue count")? as usize;
        // Each queue needs at least 18 bytes: do not trust the count for allocation.
        let mut queues: Vec<FooterQueue> = Vec::with_capacity(queue_count.min(c.remaining() / 18));
        for _ in 0..queue_count {
            let topic_len = usize::from(c.u16("topic length")?);
            let topic = std::str::from_utf8(c.take(topic_len, "topic")?)
                .map_err(|_| corrupt("topic is not utf-8"))?;
            let queue_id = QueueId(c.i32("queue id")?);
            let first_offset = QueueOffset(c.i64("first offset")?);
            let count = c.u32("entry count")? as usize;
            if count
                .checked_mul(ENTRY_LEN)
                .is_none_or(|n| n > c.remaining())
            {
                return Err(corrupt("truncated entries"));
            }
            let mut entries = Vec::with_capacity(count);
            let mut prev_end = 0u64;
            for _ in 0..count {
                let e = IndexEntry {
                    pos: c.u32("pos")?,
                    size: c.u32("size")?,
                    tags_code: c.i64("tags code")?,
                    store_ts: c.i64("store ts")?,
                    crc: c.u32("crc")?,
                };
                let end = u64::from(e.pos) + u64::from(e.size);
                if end > data_len || u64::from(e.pos) < prev_end || e.size == 0 {
                    return Err(corrupt("entry outside its section or out of order"));
                }
                prev_end = end;
                entries.push(e);
            }
            let topic = Topic::new(topic);
            if let Some(prev) = queues.last()
                && (&prev.topic, prev.queue_id) >= (&topic, queue_id)
            {
                return Err(corrupt("footer queues out of order"));
            }
            if first_offset.0 < 0 || first_offset.0.checked_add(count as i64).is_none() {
                return Err(corrupt("bad first offset"));
            }
            queues.push(FooterQueue {
                topic,
                queue_id,
                first_offset,
                entries,
            });
        }
        if c.remaining() != 0 {
            return Err(corrupt("trailing bytes in footer"));
        }
        Ok(Self {
            shard,
            commit_log_start,
            data_len,
            queues,
        })
    }
}
