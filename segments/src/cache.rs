//! Read caches, all bounded in bytes (moka, weighed by size):
//!
//! - tail cache: object key → whole object, filled by the writer right after a commit, so a
//!   consumer that keeps up never touches the object store;
//! - footer cache: (object key, footer position) → decoded footer (the ConsumeQueue index);
//! - block cache: (object key, block index) → fixed-size block, filled by ranged GETs;
//!   concurrent misses of one block share one GET (`try_get_with`);
//! - recent index: per queue, the last few committed sections (first offset, count, where),
//!   fed by the writer, so pulls near the head need no meta query.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use moka::future::Cache as Moka;
use parking_lot::Mutex;
use stratus_compat::types::QueueOffset;
use stratus_meta::{QueueKey, QueueSegment, ShardId};

use crate::SegmentError;
use crate::format::Footer;
use crate::metrics::cache_lookup;

/// Capacities.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// Tail cache capacity, bytes.
    pub tail_bytes: u64,
    /// Block cache capacity, bytes.
    pub block_bytes: u64,
    /// Footer cache capacity, bytes (approximate decoded size).
    pub footer_bytes: u64,
    /// Block size of the block cache.
    pub block_size: u64,
    /// Sections remembered per queue by the recent index.
    pub recent_sections_per_queue: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            tail_bytes: 256 << 20,
            block_bytes: 256 << 20,
            footer_bytes: 64 << 20,
            block_size: 1 << 20,
            recent_sections_per_queue: 64,
        }
    }
}

/// The caches shared by the writer (which fills them) and the reader.
#[derive(Debug)]
pub struct Cache {
    tail: Moka<String, Bytes>,
    footers: Moka<(String, u64), Arc<Footer>>,
    blocks: Moka<(String, u64), Bytes>,
    recent: Mutex<HashMap<QueueKey, VecDeque<QueueSegment>>>,
    block_size: u64,
    recent_per_queue: usize,
}

fn weight(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Cache {
    /// Empty caches with the given capacities.
    pub fn new(config: CacheConfig) -> Self {
        Self {
            tail: Moka::builder()
                .max_capacity(config.tail_bytes)
                .weigher(|k: &String, v: &Bytes| weight(k.len() + v.len()))
                .build(),
            footers: Moka::builder()
                .max_capacity(config.footer_bytes)
                .weigher(|k: &(String, u64), v: &Arc<Footer>| weight(k.0.len() + v.weight()))
                .build(),
            blocks: Moka::builder()
                .max_capacity(config.block_bytes)
                .weigher(|k: &(String, u64), v: &Bytes| weight(k.0.len() + v.len()))
                .build(),
            recent: Mutex::default(),
            block_size: config.block_size.max(4096),
            recent_per_queue: config.recent_sections_per_queue.max(1),
        }
    }

    /// Block size of the block cache.
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// A whole recently committed object.
    pub async fn tail(&self, key: &str) -> Option<Bytes> {
        let v = self.tail.get(key).await;
        cache_lookup("tail", v.is_some());
        v
    }

    /// Keeps a committed object whole.
    pub async fn insert_tail(&self, key: &str, object: Bytes) {
        self.tail.insert(key.to_owned(), object).await;
    }

    /// A decoded footer, loading it with `load` on a miss (concurrent misses share one load).
    ///
    /// # Errors
    /// The loader's error.
    pub async fn footer<F>(
        &self,
        key: &str,
        footer_pos: u64,
        load: F,
    ) -> Result<Arc<Footer>, SegmentError>
    where
        F: Future<Output = Result<Arc<Footer>, SegmentError>>,
    {
        let k = (key.to_owned(), footer_pos);
        if let Some(f) = self.footers.get(&k).await {
            cache_lookup("footer", true);
            return Ok(f);
        }
        cache_lookup("footer", false);
        self.footers
            .try_get_with(k, load)
            .await
            .map_err(|e| (*e).clone())
    }

    /// Keeps a decoded footer.
    pub async fn insert_footer(&self, key: &str, footer_pos: u64, footer: Arc<Footer>) {
        self.footers
            .insert((key.to_owned(), footer_pos), footer)
            .await;
    }

    /// Block `index` of an object, loading it with `load` on a miss (concurrent misses share
    /// one load).
    ///
    /// # Errors
    /// The loader's error.
    pub async fn block<F>(&self, key: &str, index: u64, load: F) -> Result<Bytes, SegmentError>
    where
        F: Future<Output = Result<Bytes, SegmentError>>,
    {
        let k = (key.to_owned(), index);
        if let Some(b) = self.blocks.get(&k).await {
            cache_lookup("block", true);
            return Ok(b);
        }
        cache_lookup("block", false);
        self.blocks
            .try_get_with(k, load)
            .await
            .map_err(|e| (*e).clone())
    }

    /// Records a committed section of a queue in the recent index. A section that does not
    /// follow the last one remembered restarts the queue's index.
    pub fn record_commit(&self, queue: QueueKey, section: QueueSegment) {
        let mut recent = self.recent.lock();
        let q = recent.entry(queue).or_default();
        if let Some(last) = q.back()
            && last.first_offset.add(i64::from(last.count)) != section.first_offset
        {
            q.clear();
        }
        q.push_back(section);
        while q.len() > self.recent_per_queue {
            q.pop_front();
        }
    }

    /// Sections of `queue` from the one holding `from` on, up to `limit`, if the recent
    /// index covers `from`.
    pub fn recent_sections(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        limit: usize,
    ) -> Option<Vec<QueueSegment>> {
        let recent = self.recent.lock();
        let q = recent.get(queue);
        let hit = q.and_then(|q| {
            let first = q.front()?;
            let last = q.back()?;
            if from < first.first_offset || from >= last.first_offset.add(i64::from(last.count)) {
                return None;
            }
            let start = q.partition_point(|s| s.first_offset.add(i64::from(s.count)) <= from);
            Some(
                q.iter()
                    .skip(start)
                    .take(limit)
                    .cloned()
                    .collect::<Vec<_>>(),
            )
        });
        cache_lookup("recent_index", hit.is_some());
        hit
    }

    /// Forgets the recent index of a shard (it was closed or re-opened here).
    pub fn forget_shard(&self, shard: ShardId) {
        self.recent.lock().retain(|k, _| k.shard != shard);
    }

    /// Empties every cache (tests, operator action).
    pub fn clear(&self) {
        self.tail.invalidate_all();
        self.footers.invalidate_all();
        self.blocks.invalidate_all();
        self.recent.lock().clear();
    }

    /// Empties the data caches but keeps the recent index.
    pub fn clear_data(&self) {
        self.tail.invalidate_all();
        self.footers.invalidate_all();
        self.blocks.invalidate_all();
    }
}
