//! Read caches, all bounded in bytes (moka, weighed by size):
//!
//! - tail cache: object key → whole object, filled by the writer right after a commit, so a
//!   consumer that keeps up never touches the object store;
//! - footer cache: (object key, footer position) → decoded footer (the ConsumeQueue index);
//! - block cache: (object key, block index) → fixed-size block, filled by ranged GETs;
//!   concurrent misses of one block share one GET (`try_get_with`);
//! - recent index: per queue, the last few committed sections (first offset, count, where),
//!   fed by the writer, so pulls near the head need no meta query.
//!
//! Objects deleted by retention are dropped from every cache ([`Cache::invalidate_objects`]),
//! as are objects whose cached bytes failed their checks, so a damaged read is never served
//! again from memory. [`Cache::publish_metrics`] exports capacities and weighted sizes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use moka::future::Cache as Moka;
use parking_lot::Mutex;
use stratus_compat::types::QueueOffset;
use stratus_meta::{QueueKey, QueueSegment, ShardId};

use crate::SegmentError;
use crate::format::Footer;
use crate::metrics::{self, cache_lookup};

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
    capacities: CacheConfig,
}

/// Size of one cache, as [`Cache::usage`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheUsage {
    /// `tail`, `footer` or `block`.
    pub cache: &'static str,
    /// Configured capacity, bytes.
    pub capacity_bytes: u64,
    /// Current weighted size, bytes.
    pub weighted_bytes: u64,
    /// Entries.
    pub entries: u64,
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
            capacities: config,
        }
    }

    /// Capacity, weighted size and entry count of the tail, footer and block caches, after
    /// applying pending evictions so the sizes are current.
    pub async fn usage(&self) -> [CacheUsage; 3] {
        self.tail.run_pending_tasks().await;
        self.footers.run_pending_tasks().await;
        self.blocks.run_pending_tasks().await;
        let c = &self.capacities;
        [
            CacheUsage {
                cache: "tail",
                capacity_bytes: c.tail_bytes,
                weighted_bytes: self.tail.weighted_size(),
                entries: self.tail.entry_count(),
            },
            CacheUsage {
                cache: "footer",
                capacity_bytes: c.footer_bytes,
                weighted_bytes: self.footers.weighted_size(),
                entries: self.footers.entry_count(),
            },
            CacheUsage {
                cache: "block",
                capacity_bytes: c.block_bytes,
                weighted_bytes: self.blocks.weighted_size(),
                entries: self.blocks.entry_count(),
            },
        ]
    }

    /// Sets the cache gauges of [`metrics`] from [`Cache::usage`] (called on scrape).
    pub async fn publish_metrics(&self) {
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        for u in self.usage().await {
            metrics::CACHE_CAPACITY_BYTES
                .with_label_values(&[u.cache])
                .set(gauge(u.capacity_bytes));
            metrics::CACHE_WEIGHTED_BYTES
                .with_label_values(&[u.cache])
                .set(gauge(u.weighted_bytes));
            metrics::CACHE_ENTRIES
                .with_label_values(&[u.cache])
                .set(gauge(u.entries));
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

    /// Drops everything cached for these objects: whole objects, footers, blocks, and the
    /// recent-index sections that point into them (with every older section of the same
    /// queue, so the index stays contiguous). Called when objects are deleted, and when an
    /// object's cached bytes failed their checks.
    pub async fn invalidate_objects(&self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        let gone: HashSet<&str> = keys.iter().map(String::as_str).collect();
        for k in keys {
            self.tail.invalidate(k).await;
        }
        let footers: Vec<_> = self
            .footers
            .iter()
            .filter(|(k, _)| gone.contains(k.0.as_str()))
            .map(|(k, _)| k)
            .collect();
        for k in footers {
            self.footers.invalidate(&*k).await;
        }
        let blocks: Vec<_> = self
            .blocks
            .iter()
            .filter(|(k, _)| gone.contains(k.0.as_str()))
            .map(|(k, _)| k)
            .collect();
        for k in blocks {
            self.blocks.invalidate(&*k).await;
        }
        let mut recent = self.recent.lock();
        for q in recent.values_mut() {
            if let Some(last) = q
                .iter()
                .rposition(|s| gone.contains(s.segment.object_key.as_str()))
            {
                q.drain(..=last);
            }
        }
        recent.retain(|_, q| !q.is_empty());
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

#[cfg(test)]
mod tests {
    use stratus_compat::types::{CommitLogOffset, QueueId, Topic};
    use stratus_meta::SegmentRef;

    use super::*;

    fn section(key: &str, first: i64, count: u32) -> QueueSegment {
        QueueSegment {
            segment: SegmentRef {
                object_key: key.to_owned(),
                shard: ShardId(0),
                section_pos: 8,
                section_len: 100,
                footer_pos: 108,
                footer_len: 50,
                commit_log_start: CommitLogOffset(0),
                commit_log_end: CommitLogOffset(100),
            },
            first_offset: QueueOffset(first),
            count,
            min_store_ts: 0,
            max_store_ts: 0,
        }
    }

    fn queue() -> QueueKey {
        QueueKey {
            shard: ShardId(0),
            topic: Topic::new("T"),
            queue_id: QueueId(0),
        }
    }

    #[tokio::test]
    async fn invalidated_objects_leave_every_cache_and_the_recent_index() {
        let cache = Cache::new(CacheConfig::default());
        for key in ["a", "b"] {
            cache.insert_tail(key, Bytes::from_static(b"whole")).await;
            cache
                .block(key, 0, async { Ok(Bytes::from_static(b"block")) })
                .await
                .unwrap();
        }
        cache.record_commit(queue(), section("a", 0, 2));
        cache.record_commit(queue(), section("b", 2, 2));

        cache.invalidate_objects(&["a".to_owned()]).await;

        assert!(cache.tail("a").await.is_none());
        assert!(cache.tail("b").await.is_some());
        // A miss loads again: the block of "a" is gone, the one of "b" is kept.
        let a = cache
            .block("a", 0, async { Ok(Bytes::from_static(b"fresh")) })
            .await
            .unwrap();
        assert_eq!(&a[..], b"fresh");
        let b = cache
            .block("b", 0, async { Ok(Bytes::from_static(b"fresh")) })
            .await
            .unwrap();
        assert_eq!(&b[..], b"block");
        assert!(cache.recent_sections(&queue(), QueueOffset(0), 8).is_none());
        let rest = cache
            .recent_sections(&queue(), QueueOffset(2), 8)
            .expect("b is still indexed");
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].segment.object_key, "b");
    }

    #[tokio::test]
    async fn usage_reports_capacities_and_weighted_sizes() {
        let cache = Cache::new(CacheConfig {
            tail_bytes: 1000,
            block_bytes: 2000,
            footer_bytes: 3000,
            ..CacheConfig::default()
        });
        cache.insert_tail("k", Bytes::from(vec![0u8; 99])).await;
        let [tail, footer, block] = cache.usage().await;
        assert_eq!((tail.cache, tail.capacity_bytes), ("tail", 1000));
        assert_eq!(tail.weighted_bytes, 100);
        assert_eq!(tail.entries, 1);
        assert_eq!((footer.cache, footer.capacity_bytes), ("footer", 3000));
        assert_eq!(
            (block.cache, block.capacity_bytes, block.weighted_bytes),
            ("block", 2000, 0)
        );
        cache.publish_metrics().await;
        assert_eq!(
            metrics::CACHE_CAPACITY_BYTES
                .with_label_values(&["block"])
                .get(),
            2000
        );
    }
}
