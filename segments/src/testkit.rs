//! Test helpers: a writer/reader harness over an in-memory (or given) object store wrapped
//! in [`FaultyStore`], the embedded meta (with a fault double in front of it if the test
//! brings one, see [`HarnessMeta`]), and a manual clock.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::ObjectStore;
use object_store::memory::InMemory;
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_meta::{Epoch, MetaStore, NodeId, QueueKey, SegmentCatalog, ShardId};
use tokio_util::sync::CancellationToken;

use crate::cache::{Cache, CacheConfig};
use crate::clock::ManualClock;
use crate::heads::QueueHeads;
use crate::reader::Reader;
use crate::store::faults::FaultyStore;
use crate::store::{SegmentStore, StoreConfig};
use crate::writer::{MessageToStore, Writer, WriterConfig};

/// A message for `topic`/`queue` with the given body.
pub(crate) fn msg(topic: &str, queue: i32, body: &str) -> MessageToStore {
    let host: SocketAddr = "10.0.0.1:10911".parse().expect("literal address");
    MessageToStore {
        topic: Topic::new(topic),
        queue_id: QueueId(queue),
        flag: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.2:5555".parse().expect("literal address"),
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::copy_from_slice(body.as_bytes()),
        properties: format!("TAGS\u{1}{body}\u{2}"),
        tags_code: stratus_compat::types::java_string_hash(body),
    }
}

pub(crate) fn key(shard: u32, topic: &str, queue: i32) -> QueueKey {
    QueueKey {
        shard: ShardId(shard),
        topic: Topic::new(topic),
        queue_id: QueueId(queue),
    }
}

/// A writer configuration that seals only on flush (deterministic tests).
pub(crate) fn manual_config() -> WriterConfig {
    WriterConfig {
        linger: Duration::from_secs(3600),
        meta_backoff: Duration::from_millis(1),
        ..WriterConfig::default()
    }
}

pub(crate) fn fast_store_config() -> StoreConfig {
    StoreConfig {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(2),
        op_timeout: Duration::from_secs(10),
        ..StoreConfig::default()
    }
}

/// The metadata a harness runs on: the store the test administers (leases, half messages)
/// and the catalog its writer and reader commit to and look sections up in: the same store,
/// or a fault double around it.
pub(crate) trait HarnessMeta {
    /// (the administered store, the writer's and reader's catalog).
    fn split(self) -> (Arc<dyn MetaStore>, Arc<dyn SegmentCatalog>);
}

impl HarnessMeta for Arc<dyn MetaStore> {
    fn split(self) -> (Arc<dyn MetaStore>, Arc<dyn SegmentCatalog>) {
        (self.clone(), self)
    }
}

#[derive(Debug)]
pub(crate) struct Harness {
    pub(crate) faults: Arc<FaultyStore>,
    pub(crate) store: SegmentStore,
    pub(crate) meta: Arc<dyn MetaStore>,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) heads: Arc<QueueHeads>,
    pub(crate) cache: Arc<Cache>,
    pub(crate) writer: Writer,
    pub(crate) reader: Reader,
    pub(crate) node: NodeId,
    pub(crate) cancel: CancellationToken,
}

impl Harness {
    pub(crate) async fn new(config: WriterConfig) -> Self {
        let meta = stratus_meta::open("memory://")
            .await
            .expect("in-memory meta");
        Self::with(config, Arc::new(InMemory::new()), meta).await
    }

    pub(crate) async fn with(
        config: WriterConfig,
        inner: Arc<dyn ObjectStore>,
        meta: impl HarnessMeta,
    ) -> Self {
        let (meta, catalog) = meta.split();
        meta.ensure_shards(4).await.expect("ensure shards");
        let faults = FaultyStore::new(inner);
        let clock = ManualClock::new(1_700_000_000_000);
        let store =
            SegmentStore::new(faults.clone(), fast_store_config()).with_clock(clock.clone());
        let heads = Arc::new(QueueHeads::default());
        let cache = Arc::new(Cache::new(CacheConfig {
            block_size: 4096,
            ..CacheConfig::default()
        }));
        let node = NodeId("node-a".into());
        let cancel = CancellationToken::new();
        let writer = Writer::start(
            config,
            store.clone(),
            catalog.clone(),
            clock.clone(),
            heads.clone(),
            cache.clone(),
            node.clone(),
            cancel.clone(),
        );
        let reader = Reader::new(store.clone(), catalog, cache.clone(), heads.clone());
        Self {
            faults,
            store,
            meta,
            clock,
            heads,
            cache,
            writer,
            reader,
            node,
            cancel,
        }
    }

    /// Takes the shard's lease for this node and opens it in the writer.
    pub(crate) async fn open(&self, shard: u32) -> Epoch {
        let lease = self
            .meta
            .acquire_shard(ShardId(shard), &self.node, self.clock.now(), 3_600_000)
            .await
            .expect("acquire")
            .expect("shard free");
        let state = self
            .meta
            .shard_state(ShardId(shard))
            .await
            .expect("shard state");
        self.writer.open_shard(ShardId(shard), lease.epoch, state);
        lease.epoch
    }

    /// Reads everything committed in a queue from 0.
    pub(crate) async fn read_all(&self, queue: &QueueKey) -> Vec<Bytes> {
        let mut out = Vec::new();
        let mut from = QueueOffset(0);
        loop {
            let b = self
                .reader
                .read(queue, from, 32, usize::MAX, &|_| true)
                .await
                .expect("read");
            if b.messages.is_empty() {
                return out;
            }
            out.extend(b.messages);
            from = b.next_offset;
        }
    }
}

impl ManualClock {
    pub(crate) fn now(&self) -> i64 {
        crate::clock::Clock::now_ms(self)
    }
}
