//! The node core, shared by every protocol front end: storage (writer, reader, caches,
//! queue heads), metadata, the topic table, the shards this node owns and the cluster's
//! routes, built from a checked [`Config`] and its components without binding a socket.
//!
//! What a front end asks of the core is in protocol-neutral types: [`append`] (append
//! messages, await durability), [`queues`] (bounds, reads, waiting for new messages with a
//! bounded budget of parked waits), [`offsets`] (consumer offsets), [`topics`] and
//! [`shards`]. No module here knows a wire protocol.

pub(crate) mod append;
pub(crate) mod connections;
pub(crate) mod objects;
pub(crate) mod offsets;
pub(crate) mod queues;
pub(crate) mod shards;
pub(crate) mod stats;
pub(crate) mod topics;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use object_store::ObjectStore;
use stratus_meta::{MetaStore, NodeId};
use stratus_segments::cache::{Cache, CacheConfig};
use stratus_segments::clock::{Clock, SystemClock};
use stratus_segments::heads::QueueHeads;
use stratus_segments::reader::Reader;
use stratus_segments::store::{SegmentStore, StoreConfig};
use stratus_segments::writer::{Writer, WriterConfig};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use objects::Objects;
use shards::{OwnedShards, RouteTable};
use topics::TopicTable;

/// The components a node is built from: everything that does I/O, opened beforehand.
#[derive(Debug)]
pub struct Components {
    /// The metadata store.
    pub meta: Arc<dyn MetaStore>,
    /// The object store segments go to.
    pub store: Arc<dyn ObjectStore>,
    /// Prefix of every object key (the part of an `s3://` URL after the bucket).
    pub key_prefix: String,
    /// Time.
    pub clock: Arc<dyn Clock>,
}

impl Components {
    /// Opens what `config` names: the metadata database (creating the embedded one's
    /// directory), and the object store unless `store` is given (tests inject faults
    /// through it); an S3 store is probed first.
    ///
    /// # Errors
    /// A start-up failure naming the setting involved.
    pub async fn open(
        config: &Config,
        store: Option<Arc<dyn ObjectStore>>,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&config.node.data_dir).with_context(|| {
            format!(
                "node.data_dir: cannot create {}",
                config.node.data_dir.display()
            )
        })?;
        if let Some(p) = config.meta_url.strip_prefix("embedded://")
            && let Some(parent) = Path::new(p).parent()
        {
            std::fs::create_dir_all(parent).ok();
        }
        let meta = stratus_meta::open(&config.meta_url)
            .await
            .with_context(|| format!("meta.url: cannot open {}", config.meta_url))?;
        let objects = match store {
            Some(store) => Objects {
                store,
                key_prefix: String::new(),
            },
            None => objects::open(&config.object_store, &config.storage).await?,
        };
        Ok(Self {
            meta,
            store: objects.store,
            key_prefix: objects.key_prefix,
            clock: Arc::new(SystemClock),
        })
    }
}

/// One node: the state every front end and background service reads.
#[derive(Debug)]
pub struct Node {
    pub(crate) config: Config,
    pub(crate) meta: Arc<dyn MetaStore>,
    pub(crate) writer: Writer,
    pub(crate) reader: Reader,
    /// The object store, for retention's deletes and the orphan scan.
    pub(crate) store: SegmentStore,
    /// The read caches, dropped for deleted objects and exported as metrics.
    pub(crate) cache: Arc<Cache>,
    pub(crate) heads: Arc<QueueHeads>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) topics: TopicTable,
    pub(crate) shards: OwnedShards,
    /// Where every shard of the cluster is served (routes).
    pub(crate) routes: RouteTable,
    /// Open client connections, over every port and protocol: admission and eviction.
    pub(crate) connections: Arc<connections::Connections>,
    /// Budget of requests in progress, over every connection (`limits.max_in_flight`).
    pub(crate) in_flight: Arc<Semaphore>,
    /// Address published in routes for the first broker port (shard `s`: port + 3·`s`).
    pub(crate) advertised: String,
    /// TLS of every listener (`None`: `tls.mode = off`).
    pub(crate) tls: Option<Arc<crate::tls::Tls>>,
    /// The same as a socket address (the store host of records, offset message ids).
    pub(crate) store_host: SocketAddr,
    /// Budget of parked waits for new messages (long polling).
    pub(crate) parked: Arc<Semaphore>,
    /// The root token: cancelled first at shutdown; every task's token descends from it.
    pub(crate) cancel: CancellationToken,
    /// Every task the node spawns, awaited at shutdown.
    pub(crate) tracker: TaskTracker,
    /// Put and get statistics (mqadmin's figures and the per-topic metrics).
    pub(crate) stats: Arc<stats::Stats>,
}

impl Node {
    /// Builds a node from checked config and opened components. Starts the writer's
    /// background task; binds nothing.
    ///
    /// # Errors
    /// An advertised address that does not resolve, or meta failing to load the topics.
    pub async fn new(config: Config, components: Components) -> anyhow::Result<Self> {
        let Components {
            meta,
            store,
            key_prefix,
            clock,
        } = components;
        let store = SegmentStore::new(
            store,
            StoreConfig {
                multipart_threshold: config.storage.multipart_threshold.as_usize(),
                ..StoreConfig::default()
            },
        );
        let advertised = config.advertised_addr.clone();
        let store_host = advertised
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.find(SocketAddr::is_ipv4))
            .with_context(|| format!("listen.advertised_addr: cannot resolve {advertised}"))?;
        let tls = crate::tls::Tls::load(&config.tls).context("tls")?;
        let cancel = CancellationToken::new();
        let heads = Arc::new(QueueHeads::default());
        let cache = Arc::new(Cache::new(CacheConfig {
            tail_bytes: config.storage.tail_cache.as_u64(),
            block_bytes: config.storage.block_cache.as_u64(),
            footer_bytes: config.storage.footer_cache.as_u64(),
            ..Default::default()
        }));
        let writer = Writer::start(
            WriterConfig {
                max_segment_bytes: config.storage.segment_max_bytes.as_usize(),
                linger: config.linger,
                max_buffered_bytes: config.storage.max_buffered_bytes.as_usize(),
                upload_concurrency: config.storage.upload_concurrency,
                durable_timeout: config.storage.durable_timeout,
                key_prefix,
                index_keys: config.storage.key_index,
                ..Default::default()
            },
            store.clone(),
            meta.clone(),
            clock.clone(),
            heads.clone(),
            cache.clone(),
            NodeId(config.node.id.clone()),
            cancel.child_token(),
        );
        let reader = Reader::new(store.clone(), meta.clone(), cache.clone(), heads.clone());
        let topics = TopicTable::load(
            meta.clone(),
            config.broker.default_topic_queue_nums,
            config.broker.auto_create_topic,
        )
        .await
        .context("load topics from meta")?;
        let stats = Arc::new(stats::Stats::new(
            &config.node.cluster_name,
            config.stats.max_keys,
            clock.now_ms(),
        ));
        Ok(Self {
            stats,
            parked: Arc::new(Semaphore::new(config.limits.max_parked_pulls)),
            connections: connections::Connections::new(
                config.limits.max_connections,
                config.limits.max_connections_per_ip,
            ),
            in_flight: Arc::new(Semaphore::new(config.limits.max_in_flight)),
            config,
            meta,
            writer,
            reader,
            store,
            cache,
            heads,
            clock,
            topics,
            shards: OwnedShards::default(),
            routes: RouteTable::default(),
            advertised,
            tls,
            store_host,
            cancel,
            tracker: TaskTracker::new(),
        })
    }

    /// This node's id in meta.
    pub(crate) fn id(&self) -> NodeId {
        NodeId(self.config.node.id.clone())
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A node on an in-memory object store and in-memory metadata, with a manual clock and
    //! every shard of `node.shards` owned (no membership loop, no socket).

    use std::sync::Arc;
    use std::time::Duration;

    use stratus_meta::ShardId;
    use stratus_segments::clock::ManualClock;

    use super::{Components, Node};
    use crate::config::{Config, Settings};

    /// A test node and its clock.
    pub(crate) struct TestNode {
        pub(crate) node: Arc<Node>,
        pub(crate) clock: Arc<ManualClock>,
    }

    /// Builds a test node with `adjust` applied to the default settings.
    pub(crate) async fn node_with(adjust: impl FnOnce(&mut Settings)) -> TestNode {
        let mut s = Settings::default();
        s.storage.object_store_url = Some("memory://".into());
        s.meta.url = Some("memory://".into());
        s.storage.linger = Some(Duration::from_millis(1));
        adjust(&mut s);
        let config: Config = s.check().expect("valid test settings");
        let clock = ManualClock::new(1_700_000_000_000);
        let meta = stratus_meta::open("memory://").await.expect("meta");
        let shards = config.node.shards;
        let components = Components {
            meta: meta.clone(),
            store: Arc::new(object_store::memory::InMemory::new()),
            key_prefix: String::new(),
            clock: clock.clone(),
        };
        let node = Arc::new(Node::new(config, components).await.expect("node"));
        meta.ensure_shards(shards).await.expect("shards");
        for s in 0..shards {
            let shard = ShardId(s);
            let lease = meta
                .acquire_shard(shard, &node.id(), clock_now(&clock), 60_000)
                .await
                .expect("acquire")
                .expect("free");
            let state = meta.shard_state(shard).await.expect("state");
            node.writer.open_shard(shard, lease.epoch, state);
            node.shards.insert(shard, lease.epoch);
        }
        TestNode { node, clock }
    }

    fn clock_now(clock: &ManualClock) -> i64 {
        use stratus_segments::clock::Clock;
        clock.now_ms()
    }
}
