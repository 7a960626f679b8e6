//! Composition root: builds the components (object store, meta, clock, storage), owns the
//! root cancellation token, runs the listeners and shuts everything down in order.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use object_store::ObjectStore;
use stratus_meta::{MetaStore, NodeId};
use stratus_segments::clock::{Clock, SystemClock};
use stratus_segments::heads::QueueHeads;
use stratus_segments::reader::Reader;
use stratus_segments::store::{SegmentStore, StoreConfig};
use stratus_segments::writer::{Writer, WriterConfig};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::config::Settings;
use crate::registry::Registry;
use crate::shard::{OwnedShards, RouteTable};
use crate::topics::TopicTable;

/// Shared state every processor reads.
#[derive(Debug)]
pub(crate) struct Broker {
    pub(crate) settings: Settings,
    pub(crate) meta: Arc<dyn MetaStore>,
    pub(crate) writer: Writer,
    pub(crate) reader: Reader,
    /// The object store, for retention's deletes and the orphan scan.
    pub(crate) store: SegmentStore,
    /// The read caches, dropped for deleted objects and exported as metrics.
    pub(crate) cache: Arc<stratus_segments::cache::Cache>,
    pub(crate) heads: Arc<QueueHeads>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) topics: TopicTable,
    pub(crate) registry: Registry,
    pub(crate) shards: OwnedShards,
    /// Where every shard of the cluster is served (routes).
    pub(crate) routes: RouteTable,
    /// Budget of open connections, over every port.
    pub(crate) conn_limit: Arc<Semaphore>,
    pub(crate) transactions: crate::transaction::Transactions,
    pub(crate) locks: crate::locks::QueueLocks,
    /// Address published in routes for the first broker port (shard `s`: port + `s`).
    pub(crate) advertised: String,
    /// The same as a socket address (STOREHOST of records, offset message ids).
    pub(crate) store_host: SocketAddr,
    /// Budget of parked long-poll pulls.
    pub(crate) parked: Arc<Semaphore>,
    pub(crate) cancel: CancellationToken,
    pub(crate) tracker: TaskTracker,
}

/// A running node.
#[derive(Debug)]
pub struct App {
    broker: Arc<Broker>,
    listeners: Vec<(SocketAddr, tokio::net::TcpListener)>,
    /// The `/metrics` listener (`metrics.addr`), unless off.
    metrics: Option<tokio::net::TcpListener>,
}

impl App {
    /// Builds every component and binds the listeners.
    ///
    /// # Errors
    /// Any start-up failure, naming the setting involved.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        Self::build_with(settings, None).await
    }

    /// Like [`App::build`], with `object_store` instead of the one
    /// `storage.object_store_url` names (tests inject faults through it).
    ///
    /// # Errors
    /// As [`App::build`].
    pub async fn build_with_object_store(
        settings: Settings,
        object_store: Arc<dyn ObjectStore>,
    ) -> anyhow::Result<Self> {
        Self::build_with(settings, Some(object_store)).await
    }

    async fn build_with(
        settings: Settings,
        injected: Option<Arc<dyn ObjectStore>>,
    ) -> anyhow::Result<Self> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        std::fs::create_dir_all(&settings.node.data_dir).with_context(|| {
            format!(
                "node.data_dir: cannot create {}",
                settings.node.data_dir.display()
            )
        })?;
        let meta_url = settings.meta_url();
        if let Some(p) = meta_url.strip_prefix("embedded://")
            && let Some(parent) = Path::new(p).parent()
        {
            std::fs::create_dir_all(parent).ok();
        }
        let meta = stratus_meta::open(&meta_url)
            .await
            .with_context(|| format!("meta.url: cannot open {meta_url}"))?;
        let objects = match injected {
            Some(store) => crate::objects::Objects {
                store,
                key_prefix: String::new(),
            },
            None => crate::objects::open(&settings.object_store_url(), &settings.storage).await?,
        };
        let store = SegmentStore::new(
            objects.store,
            StoreConfig {
                multipart_threshold: settings.storage.multipart_threshold.as_usize(),
                ..StoreConfig::default()
            },
        );

        let advertised = settings.advertised_addr();
        let store_host = advertised
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.find(SocketAddr::is_ipv4))
            .with_context(|| format!("listen.advertised_addr: cannot resolve {advertised}"))?;

        let cancel = CancellationToken::new();
        let tracker = TaskTracker::new();
        let heads = Arc::new(QueueHeads::default());
        let cache = Arc::new(stratus_segments::cache::Cache::new(
            stratus_segments::cache::CacheConfig {
                tail_bytes: settings.storage.tail_cache.as_u64(),
                block_bytes: settings.storage.block_cache.as_u64(),
                footer_bytes: settings.storage.footer_cache.as_u64(),
                ..Default::default()
            },
        ));
        let node = NodeId(settings.node.id.clone());
        let writer = Writer::start(
            WriterConfig {
                max_segment_bytes: settings.storage.segment_max_bytes.as_usize(),
                linger: settings.linger(),
                max_buffered_bytes: settings.storage.max_buffered_bytes.as_usize(),
                upload_concurrency: settings.storage.upload_concurrency,
                durable_timeout: settings.storage.durable_timeout,
                key_prefix: objects.key_prefix,
                ..Default::default()
            },
            store.clone(),
            meta.clone(),
            clock.clone(),
            heads.clone(),
            cache.clone(),
            node.clone(),
            cancel.child_token(),
        );
        let reader = Reader::new(store.clone(), meta.clone(), cache.clone(), heads.clone());
        let topics = TopicTable::load(
            meta.clone(),
            settings.broker.default_topic_queue_nums,
            settings.broker.auto_create_topic,
        )
        .await
        .context("load topics from meta")?;

        let broker = Arc::new(Broker {
            parked: Arc::new(Semaphore::new(settings.limits.max_parked_pulls)),
            conn_limit: Arc::new(Semaphore::new(settings.limits.max_connections)),
            settings,
            meta,
            writer,
            reader,
            store,
            cache,
            heads,
            clock,
            topics,
            registry: Registry::default(),
            shards: OwnedShards::default(),
            routes: RouteTable::default(),
            transactions: crate::transaction::Transactions::default(),
            locks: crate::locks::QueueLocks::default(),
            advertised,
            store_host,
            cancel,
            tracker,
        });
        // The name-server port first; each shard's port is bound when the shard is taken.
        let mut listeners = Vec::new();
        let addr = broker.settings.listen.namesrv_addr;
        let l = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listen.namesrv_addr: cannot bind {addr}"))?;
        listeners.push((l.local_addr()?, l));
        crate::lease::start(&broker).await?;
        let metrics = match crate::metrics_http::parse_addr(&broker.settings.metrics.addr) {
            Ok(Some(addr)) => Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("metrics.addr: cannot bind {addr}"))?,
            ),
            Ok(None) => None,
            Err(e) => anyhow::bail!("metrics.addr: {e}"),
        };
        Ok(Self {
            broker,
            listeners,
            metrics,
        })
    }

    /// Address of the `/metrics` endpoint, unless it is off.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Addresses actually bound (useful with port 0).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners.iter().map(|(a, _)| *a).collect()
    }

    /// Serves until `shutdown` completes, then shuts down in order: stop accepting, commit
    /// pending sends, release shards, close meta.
    ///
    /// # Errors
    /// When shutdown exceeds its grace period.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let broker = self.broker;
        for (addr, l) in self.listeners {
            info!(%addr, "listening");
            broker.tracker.spawn(crate::net::listener::run(
                l,
                broker.clone(),
                broker.conn_limit.clone(),
                crate::net::listener::Serves {
                    shard: None,
                    stop: broker.cancel.child_token(),
                },
            ));
        }
        broker.tracker.spawn(crate::lease::keep(broker.clone()));
        if let Some(l) = self.metrics {
            let state = crate::metrics_http::ScrapeState {
                cache: broker.cache.clone(),
                parked: broker.parked.clone(),
                max_parked: broker.settings.limits.max_parked_pulls,
            };
            let cancel = broker.cancel.child_token();
            broker
                .tracker
                .spawn(crate::metrics_http::run(l, state, cancel));
        }
        broker.tracker.spawn(crate::retention::run(broker.clone()));
        broker
            .tracker
            .spawn(crate::retention::run_orphan_scan(broker.clone()));
        broker
            .tracker
            .spawn(crate::housekeeping::run(broker.clone()));
        broker
            .tracker
            .spawn(crate::transaction::run_checker(broker.clone()));
        broker.tracker.spawn(crate::schedule::run(broker.clone()));
        broker
            .tracker
            .spawn(crate::schedule::run_timers(broker.clone()));
        shutdown.await;
        info!("shutting down");
        let grace = broker.settings.node.shutdown_grace;
        let b = broker.clone();
        let ordered = async move {
            b.cancel.cancel();
            if let Err(e) = b.writer.shutdown().await {
                warn!(error = %e, "final flush failed");
            }
            crate::lease::release_all(&b).await;
            b.tracker.close();
            b.tracker.wait().await;
            b.meta.close().await;
        };
        #[allow(clippy::disallowed_methods)] // the shutdown deadline is wall-clock by design
        let res = tokio::time::timeout(grace, ordered).await;
        match res {
            Ok(()) => Ok(()),
            Err(_) => anyhow::bail!("shutdown exceeded node.shutdown_grace ({grace:?})"),
        }
    }
}

/// How long to wait between lease renewals: a third of the TTL.
pub(crate) fn renew_interval(ttl: Duration) -> Duration {
    (ttl / 3).max(Duration::from_millis(100))
}
