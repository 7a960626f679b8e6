//! Composition root: checks the config, opens the components, builds the node core and the
//! RocketMQ front end, takes this node's share of shards, and runs until shutdown, which it
//! performs in order.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use object_store::ObjectStore;
use tracing::{info, warn};

use crate::config::Settings;
use crate::kafka::Kafka;
use crate::node::shards::ShardServer;
use crate::node::{Components, Node};
use crate::remoting::Remoting;
use crate::services::{self, membership};

/// A running node.
#[derive(Debug)]
pub struct App {
    node: Arc<Node>,
    remoting: Arc<Remoting>,
    front_ends: Vec<Arc<dyn ShardServer>>,
    /// How settled this node's contact with meta was at start (for the membership loop).
    contact: membership::MetaContact,
    namesrv: (SocketAddr, tokio::net::TcpListener),
    /// The Kafka front end and its bootstrap listener, unless `kafka.enabled` is off.
    kafka: Option<(Arc<Kafka>, tokio::net::TcpListener)>,
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
        let config = settings.check()?;
        let components = Components::open(&config, injected).await?;
        let node = Arc::new(Node::new(config, components).await?);
        let remoting = Remoting::new(node.clone());
        crate::remoting::processor::reply::create_reply_topic(&remoting)
            .await
            .context("create the reply topic")?;
        remoting
            .auth
            .ensure_init_user(node.meta.as_ref())
            .await
            .context("auth.init_user: cannot create the bootstrap user in meta")?;
        if let Err(e) = remoting.auth.refresh(node.meta.as_ref()).await {
            // Checked requests are refused until the refresh service loads them.
            tracing::warn!(error = %e, "cannot load users and ACLs from meta yet");
        }
        // The name-server port first; each shard's port is bound when the shard is taken.
        let addr = node.config.listen.namesrv_addr;
        let l = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listen.namesrv_addr: cannot bind {addr}"))?;
        let namesrv = (l.local_addr()?, l);
        let mut front_ends: Vec<Arc<dyn ShardServer>> = vec![remoting.clone()];
        // The Kafka bootstrap port and this node's Kafka address in meta, before any
        // shard (and its Kafka port) is taken.
        // With access control on, the Kafka listener stays closed: it has no SASL yet, and
        // an open port would let anyone past the rules the RocketMQ side enforces.
        let auth_on = remoting.auth.active();
        if node.config.kafka.enabled && auth_on {
            warn!(
                "the Kafka listener is off: access control (auth.*) is on and Kafka clients cannot authenticate yet (no SASL)"
            );
        }
        let kafka = if node.config.kafka.enabled && !auth_on {
            let rmq = remoting.clone();
            let kafka = Kafka::new(
                node.clone(),
                crate::kafka::OtherMembers(Arc::new(move |group: &str| {
                    !rmq.registry.consumer_ids(group).is_empty()
                })),
            );
            let bootstrap = kafka.bind_bootstrap().await?;
            kafka.register().await?;
            front_ends.push(kafka.clone());
            Some((kafka, bootstrap))
        } else {
            None
        };
        let contact = membership::start(&node, &front_ends).await?;
        let metrics = match node.config.metrics_addr {
            Some(addr) => Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("metrics.addr: cannot bind {addr}"))?,
            ),
            None => None,
        };
        Ok(Self {
            node,
            remoting,
            front_ends,
            contact,
            namesrv,
            kafka,
            metrics,
        })
    }

    /// Address of the `/metrics` endpoint, unless it is off.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Addresses actually bound (useful with port 0).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        vec![self.namesrv.0]
    }

    /// Serves until `shutdown` completes, then shuts down in order: stop accepting and stop
    /// every service (one token), commit pending sends, release shards, wait for every
    /// task, close meta.
    ///
    /// # Errors
    /// When shutdown exceeds its grace period.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let Self {
            node,
            remoting,
            front_ends,
            contact,
            namesrv: (addr, listener),
            kafka,
            metrics,
        } = self;
        info!(%addr, "listening");
        remoting.serve_namesrv(listener);
        if let Some((kafka, bootstrap)) = kafka {
            if let Ok(a) = bootstrap.local_addr() {
                info!(addr = %a, "kafka bootstrap listening");
            }
            kafka.serve_bootstrap(bootstrap);
            node.tracker
                .spawn(crate::kafka::groups::run_expiry(kafka.clone()));
        }
        services::start(&node, &remoting, front_ends, contact, metrics);
        shutdown.await;
        info!("shutting down");
        let grace = node.config.node.shutdown_grace;
        let n = node.clone();
        let ordered = async move {
            n.cancel.cancel();
            if let Err(e) = n.writer.shutdown().await {
                warn!(error = %e, "final flush failed");
            }
            membership::release_all(&n).await;
            n.tracker.close();
            n.tracker.wait().await;
            n.meta.close().await;
        };
        #[allow(clippy::disallowed_methods)] // the shutdown deadline is wall-clock by design
        let res = tokio::time::timeout(grace, ordered).await;
        drop(remoting);
        match res {
            Ok(()) => Ok(()),
            Err(_) => anyhow::bail!("shutdown exceeded node.shutdown_grace ({grace:?})"),
        }
    }
}
