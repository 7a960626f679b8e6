//! The Kafka front end: Kafka clients on the same topics, segments and metadata as the
//! RocketMQ front end. The only part of the gateway that knows the Kafka wire protocol.
//!
//! Read top-down: [`net`] accepts connections and cuts frames, answering each connection's
//! requests in the order they came (Kafka clients match answers to their oldest request);
//! [`dispatch`] decodes each request (`stratus_compat::kafka::request`: the APIs and
//! versions served) and routes it to its module; the modules answer from the node core. [`codes`] maps errors to Kafka error
//! codes, once; [`convert`] turns Kafka records into stored messages and back.
//!
//! Brokers and partitions. Shard `s` is Kafka broker `s`, served on `kafka.listen_addr`'s
//! port + 1 + `s` while this node owns it; the port itself is every node's bootstrap port,
//! answering everything but the partition-led requests. A topic with `Q` queues per shard
//! has `Q · S` partitions, numbered queue-major: partition `p` is queue `p / S` of shard
//! `p % S`, so adding queues (CreatePartitions, or RocketMQ's updateTopic) appends
//! partitions and never renumbers them (adding shards does; see `docs/kafka.md`).

pub(crate) mod admin;
pub(crate) mod codes;
pub(crate) mod convert;
pub(crate) mod dispatch;
pub(crate) mod fetch;
pub(crate) mod groups;
pub(crate) mod metadata;
pub(crate) mod net;
pub(crate) mod offsets;
pub(crate) mod produce;

#[cfg(test)]
mod handler_tests;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use stratus_compat::types::{QueueId, Topic};
use stratus_meta::{NodeId, QueueKey, ShardId};
use tokio_util::sync::CancellationToken;

use crate::node::Node;
use crate::node::shards::{BoundShard, ShardServer};

/// Meta KV namespace of every node's advertised Kafka address (node id → `host:port` of
/// its bootstrap port).
pub(crate) const LISTENERS_NS: &str = "stratus.kafka.listeners";

/// Whether a group has live members of another protocol (RocketMQ consumers with a
/// recent heartbeat): such a group is refused to Kafka members. Given by the composition
/// root, so the front ends do not import each other.
#[derive(Clone)]
pub(crate) struct OtherMembers(pub(crate) Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl std::fmt::Debug for OtherMembers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OtherMembers")
    }
}

/// The Kafka front end's state over the node core.
#[derive(Debug)]
pub(crate) struct Kafka {
    /// The node core.
    pub(crate) node: Arc<Node>,
    /// Classic consumer groups coordinated here.
    pub(crate) groups: groups::Coordinator,
    /// Idempotent producers' sequence state, per partition.
    pub(crate) producers: produce::Producers,
    /// Other nodes' advertised Kafka addresses, as last read from meta.
    listeners: Mutex<Listeners>,
    /// This node's advertised bootstrap address.
    pub(crate) advertised: String,
    /// Live RocketMQ members of a group.
    pub(crate) other_members: OtherMembers,
}

#[derive(Debug, Default)]
struct Listeners {
    by_node: HashMap<NodeId, String>,
    read_ms: i64,
}

/// Where a partition lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Partition {
    pub(crate) shard: ShardId,
    pub(crate) queue: QueueId,
}

/// Partition `p` of a topic on `shards` shards (queue-major numbering).
pub(crate) fn partition_place(p: i32, shards: u32) -> Option<Partition> {
    let p = u32::try_from(p).ok()?;
    let s = shards.max(1);
    Some(Partition {
        shard: ShardId(p % s),
        queue: QueueId(i32::try_from(p / s).ok()?),
    })
}

/// The partition number of `queue` on `shard`.
pub(crate) fn partition_index(shard: ShardId, queue: QueueId, shards: u32) -> i32 {
    let q = i64::from(queue.0) * i64::from(shards.max(1)) + i64::from(shard.0);
    i32::try_from(q).unwrap_or(i32::MAX)
}

/// Partitions of a topic with `queues` queues on each of `shards` shards.
pub(crate) fn partition_count(queues: i32, shards: u32) -> i32 {
    let n = i64::from(queues.max(0)) * i64::from(shards.max(1));
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// `host:port` of a port offset from an advertised `host:port`.
pub(crate) fn offset_addr(base: &str, by: u32) -> Option<(String, u16)> {
    let (host, port) = base.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let port = u16::try_from(u32::from(port).checked_add(by)?).ok()?;
    Some((host.trim_matches(|c| c == '[' || c == ']').to_owned(), port))
}

impl Kafka {
    /// The front end over `node`; serves nothing until a listener runs.
    pub(crate) fn new(node: Arc<Node>, other_members: OtherMembers) -> Arc<Self> {
        let advertised = node.config.settings.kafka_advertised_addr();
        Arc::new(Self {
            other_members,
            groups: groups::Coordinator::new(),
            producers: produce::Producers::default(),
            listeners: Mutex::new(Listeners::default()),
            advertised,
            node,
        })
    }

    /// Publishes this node's advertised address in meta (other nodes name it as the
    /// leader of the shards it owns).
    pub(crate) async fn register(&self) -> anyhow::Result<()> {
        self.node
            .meta
            .put_kv(LISTENERS_NS, &self.node.config.node.id, &self.advertised)
            .await
            .context("meta: publish the Kafka address")?;
        Ok(())
    }

    /// Binds the bootstrap port; it serves until the node stops.
    pub(crate) async fn bind_bootstrap(
        self: &Arc<Self>,
    ) -> anyhow::Result<tokio::net::TcpListener> {
        let addr = self.node.config.kafka.listen_addr;
        tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("kafka.listen_addr: cannot bind {addr}"))
    }

    /// Serves the bootstrap port until the node stops.
    pub(crate) fn serve_bootstrap(self: &Arc<Self>, listener: tokio::net::TcpListener) {
        let stop = self.node.cancel.child_token();
        self.node.tracker.spawn(net::run(
            listener,
            self.clone(),
            net::Serves { shard: None, stop },
        ));
    }

    /// The broker address (`host`, port) of `shard` at the node that owns it now (or
    /// last did), if known.
    pub(crate) async fn shard_endpoint(&self, shard: ShardId) -> Option<(String, u16)> {
        let base = if self.node.shards.epoch(shard).is_some() {
            self.advertised.clone()
        } else {
            let owner = self.node.routes.owner(shard)?;
            if owner.node == self.node.id() {
                self.advertised.clone()
            } else {
                self.listener_of(&owner.node).await?
            }
        };
        offset_addr(&base, 1 + shard.0)
    }

    /// The leader epoch of `shard` as Kafka clients see it: its lease epoch.
    pub(crate) fn shard_epoch(&self, shard: ShardId) -> i32 {
        let epoch = match self.node.shards.epoch(shard) {
            Some(e) => e.0,
            None => self.node.routes.owner(shard).map_or(0, |o| o.epoch.0),
        };
        i32::try_from(epoch).unwrap_or(i32::MAX)
    }

    async fn listener_of(&self, node: &NodeId) -> Option<String> {
        let now = self.node.clock.now_ms();
        {
            let l = self.listeners.lock();
            if now - l.read_ms < 1000
                && let Some(a) = l.by_node.get(node)
            {
                return Some(a.clone());
            }
        }
        let all = self.node.meta.list_kv(LISTENERS_NS).await.ok()?;
        let mut l = self.listeners.lock();
        l.by_node = all.into_iter().map(|(k, v)| (NodeId(k), v)).collect();
        l.read_ms = now;
        l.by_node.get(node).cloned()
    }

    /// The queue partition `p` of `topic` names.
    pub(crate) fn queue_key(&self, topic: &str, p: Partition) -> QueueKey {
        QueueKey {
            shard: p.shard,
            topic: Topic::new(topic),
            queue_id: p.queue,
        }
    }

    /// The cluster's shard count.
    pub(crate) fn shards(&self) -> u32 {
        self.node.config.node.shards
    }
}

impl ShardServer for Kafka {
    /// Binds the shard's Kafka port (bootstrap port + 1 + shard).
    fn bind_shard(
        self: Arc<Self>,
        shard: ShardId,
    ) -> BoxFuture<'static, anyhow::Result<Option<BoundShard>>> {
        async move {
            // The producers whose batches this shard's last owner committed.
            let batches = self
                .node
                .meta
                .producer_batches(shard)
                .await
                .with_context(|| format!("meta: load shard {shard}'s Kafka producers"))?;
            self.producers.load(shard, batches);
            let base = self.node.config.kafka.listen_addr;
            let port = u16::try_from(u32::from(base.port()) + 1 + shard.0)
                .ok()
                .with_context(|| format!("kafka.listen_addr: no port for shard {shard}"))?;
            let addr = SocketAddr::new(base.ip(), port);
            let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
                format!("kafka.listen_addr: cannot bind {addr} for shard {shard}")
            })?;
            let kafka = self.clone();
            let serve = Box::new(move |stop: CancellationToken| {
                let node = kafka.node.clone();
                node.tracker.spawn(net::run(
                    listener,
                    kafka,
                    net::Serves {
                        shard: Some(shard),
                        stop,
                    },
                ));
            });
            Ok(Some(BoundShard { addr, serve }))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_queue_major_and_growing_queues_appends() {
        // 3 shards, 2 queues: partitions 0..6.
        let places: Vec<_> = (0..6).map(|p| partition_place(p, 3).unwrap()).collect();
        assert_eq!(
            places[0],
            Partition {
                shard: ShardId(0),
                queue: QueueId(0)
            }
        );
        assert_eq!(
            places[1],
            Partition {
                shard: ShardId(1),
                queue: QueueId(0)
            }
        );
        assert_eq!(
            places[4],
            Partition {
                shard: ShardId(1),
                queue: QueueId(1)
            }
        );
        for (p, place) in places.iter().enumerate() {
            assert_eq!(partition_index(place.shard, place.queue, 3), p as i32);
        }
        // A third queue adds partitions 6..9 and keeps 0..6 where they were.
        assert_eq!(partition_count(3, 3), 9);
        assert_eq!(
            partition_place(7, 3).unwrap(),
            Partition {
                shard: ShardId(1),
                queue: QueueId(2)
            }
        );
        assert_eq!(partition_place(-1, 3), None);
        assert_eq!(
            offset_addr("10.0.0.1:9092", 3),
            Some(("10.0.0.1".into(), 9095))
        );
        assert_eq!(offset_addr("h:65535", 1), None);
    }
}
