//! The RocketMQ front end: the only part of the gateway that knows `RemotingCommand`.
//!
//! Read top-down: [`net`] accepts connections and cuts frames (listener → connection →
//! channel), [`dispatch`] routes each request code to a [`processor`], processors answer
//! from the node core, and [`rewrite`] holds RocketMQ's own re-stores (half messages,
//! delay levels, timers, retry and dead-letter topics). [`codes`] maps errors to response
//! codes, once. The front end's own state — client channels by group ([`registry`]),
//! orderly queue locks ([`locks`]) and transactions being ended — lives in [`Remoting`].

pub(crate) mod auth;
pub(crate) mod codes;
pub(crate) mod dispatch;
pub(crate) mod filter;
pub(crate) mod groups;
pub(crate) mod locks;
pub(crate) mod net;
pub(crate) mod processor;
pub(crate) mod registry;
pub(crate) mod rewrite;
#[cfg(test)]
pub(crate) mod testing;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use futures::FutureExt;
use futures::future::BoxFuture;
use stratus_meta::ShardId;
use tokio_util::sync::CancellationToken;

use crate::node::Node;
use crate::node::shards::{BoundShard, ShardServer, shard_port, vip_port};

/// The RocketMQ front end's state over the node core.
#[derive(Debug)]
pub(crate) struct Remoting {
    /// The node core.
    pub(crate) node: Arc<Node>,
    /// Producer and consumer channels by group, and consumer subscriptions.
    pub(crate) registry: registry::Registry,
    /// Half messages being ended right now.
    pub(crate) transactions: rewrite::transaction::Transactions,
    /// Orderly consumers' queue locks.
    pub(crate) locks: locks::QueueLocks,
    /// The last order config seen per topic, for route lookups while meta is away.
    pub(crate) order_confs: processor::route::OrderConfs,
    /// Queues whose consumer offsets were just reset (stale commits are not applied).
    pub(crate) resets: processor::reset::ResetFences,
    /// Subscription groups (meta's, cached for heartbeats).
    pub(crate) groups: groups::Groups,
    /// Access control: users and ACLs as last loaded from meta.
    pub(crate) auth: auth::Auth,
    /// Consumer offset commits applied in each client's order.
    pub(crate) commit_order: processor::offset::CommitOrder,
}

impl Remoting {
    /// The front end over `node`; serves nothing until a listener runs.
    pub(crate) fn new(node: Arc<Node>) -> Arc<Self> {
        let groups = groups::Groups::new(node.config.broker.auto_create_subscription_group);
        Arc::new(Self {
            registry: registry::Registry::default(),
            transactions: rewrite::transaction::Transactions::default(),
            locks: locks::QueueLocks::default(),
            order_confs: processor::route::OrderConfs::default(),
            resets: processor::reset::ResetFences::default(),
            groups,
            auth: auth::Auth::new(&node.config.auth, &node.config.node.cluster_name),
            commit_order: processor::offset::CommitOrder::default(),
            node,
        })
    }

    /// Serves `listener` (the name-server port, every shard) until the node stops.
    pub(crate) fn serve_namesrv(self: &Arc<Self>, listener: tokio::net::TcpListener) {
        let stop = self.node.cancel.child_token();
        self.node.tracker.spawn(net::listener::run(
            listener,
            self.clone(),
            net::listener::Serves { shard: None, stop },
        ));
    }
}

impl ShardServer for Remoting {
    /// Binds the shard's port (`None` when that is the name-server port) and, with
    /// `listen.vip_channel`, its VIP port (port − 2), both serving the shard.
    fn bind_shard(
        self: Arc<Self>,
        shard: ShardId,
    ) -> BoxFuture<'static, anyhow::Result<Option<BoundShard>>> {
        async move {
            let listen = &self.node.config.listen;
            let base = listen.broker_addr;
            let port = shard_port(base.port(), shard)
                .with_context(|| format!("listen.broker_addr: no port for shard {shard}"))?;
            let addr = SocketAddr::new(base.ip(), port);
            if addr == listen.namesrv_addr {
                return Ok(None);
            }
            let bind = |addr: SocketAddr, what: &'static str| async move {
                tokio::net::TcpListener::bind(addr).await.with_context(|| {
                    format!("listen.broker_addr: cannot bind {addr} for shard {shard}{what}")
                })
            };
            let listener = bind(addr, "").await?;
            let vip = match vip_port(port) {
                Some(vip) if listen.vip_channel => {
                    let vip = SocketAddr::new(base.ip(), vip);
                    Some(bind(vip, " (VIP channel, listen.vip_channel)").await?)
                }
                _ => None,
            };
            let rmq = self.clone();
            let serve = Box::new(move |stop: CancellationToken| {
                let node = rmq.node.clone();
                for listener in std::iter::once(listener).chain(vip) {
                    node.tracker.spawn(net::listener::run(
                        listener,
                        rmq.clone(),
                        net::listener::Serves {
                            shard: Some(shard),
                            stop: stop.clone(),
                        },
                    ));
                }
            });
            Ok(Some(BoundShard { addr, serve }))
        }
        .boxed()
    }
}
