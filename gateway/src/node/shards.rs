//! Shards: names as published in routes (`broker-<n>`), the ports they are served on, the
//! shards this node owns (with their epochs), and the cluster's route table.
//!
//! Each shard is a logical broker. RocketMQ clients address a broker by its address and
//! most requests carry no broker name, so every shard gets a port of its own: shard `s` is
//! served on the node's first broker port + 3·`s` (and advertised likewise). The ports are
//! three apart because RocketMQ clients with the VIP channel on (the Dashboard by default)
//! dial a broker's port − 2: that port serves the same shard (`listen.vip_channel`), and
//! with consecutive ports it would be another shard's. A node binds a shard's ports when it
//! takes the shard and closes them, with the connections accepted on them, when it gives
//! the shard up, so clients of a moved shard reconnect and refresh routes.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::RwLock;
use stratus_meta::{Epoch, NodeId, ShardId};
use tokio_util::sync::CancellationToken;

use crate::error::{GatewayError, Result};

/// Route name of a shard.
pub(crate) fn shard_name(shard: ShardId) -> String {
    format!("broker-{}", shard.0)
}

/// Shard id from a route name.
pub(crate) fn parse_shard_name(name: &str) -> Option<ShardId> {
    name.strip_prefix("broker-")?.parse().ok().map(ShardId)
}

/// Distance between the ports of consecutive shards: a shard's port and its VIP port
/// (port − 2) are never another shard's.
pub(crate) const SHARD_PORT_STRIDE: u32 = 3;

/// How far below a broker port its VIP channel is (`MixAll.brokerVIPChannel`).
pub(crate) const VIP_PORT_OFFSET: u16 = 2;

/// Port of `shard` given the first broker port; `None` past 65535.
pub(crate) fn shard_port(base: u16, shard: ShardId) -> Option<u16> {
    let offset = shard.0.checked_mul(SHARD_PORT_STRIDE)?;
    u16::try_from(u32::from(base).checked_add(offset)?).ok()
}

/// The VIP-channel port of a broker port; `None` below 2.
pub(crate) fn vip_port(port: u16) -> Option<u16> {
    port.checked_sub(VIP_PORT_OFFSET)
}

/// `host:port` of `shard` given a node's advertised first broker address (`host:port`).
pub(crate) fn shard_addr(base_addr: &str, shard: ShardId) -> Option<String> {
    let (host, port) = base_addr.rsplit_once(':')?;
    let port = shard_port(port.parse().ok()?, shard)?;
    Some(format!("{host}:{port}"))
}

/// A protocol front end that serves each shard this node owns on a port of its own. The
/// membership service binds every front end's port before it records a shard as owned (a
/// port that cannot be bound gives the lease back), and the ports close when the shard's
/// stop token is cancelled.
pub(crate) trait ShardServer: Send + Sync + Debug {
    /// Binds the port `shard` is served on. `None` when that port is already served (the
    /// name-server port), which then serves the shard too.
    fn bind_shard(
        self: Arc<Self>,
        shard: ShardId,
    ) -> BoxFuture<'static, anyhow::Result<Option<BoundShard>>>;
}

/// A bound shard port, not yet accepting.
pub(crate) struct BoundShard {
    /// The address bound.
    pub(crate) addr: SocketAddr,
    /// Starts accepting; stops, with the connections accepted, when the token is cancelled.
    pub(crate) serve: Box<dyn FnOnce(CancellationToken) + Send>,
}

impl Debug for BoundShard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundShard")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Owned {
    epoch: Epoch,
    /// Cancelled when the shard leaves this node: closes its listener and connections.
    stop: CancellationToken,
}

/// Shards owned here with the epoch each is held under.
#[derive(Debug, Default)]
pub(crate) struct OwnedShards {
    shards: RwLock<BTreeMap<ShardId, Owned>>,
}

impl OwnedShards {
    /// Records `shard` as owned; returns the token its listener stops on.
    pub(crate) fn insert(&self, shard: ShardId, epoch: Epoch) -> CancellationToken {
        let stop = CancellationToken::new();
        let old = self.shards.write().insert(
            shard,
            Owned {
                epoch,
                stop: stop.clone(),
            },
        );
        if let Some(old) = old {
            old.stop.cancel();
        }
        stop
    }

    /// Forgets `shard` and closes its listener and connections.
    pub(crate) fn remove(&self, shard: ShardId) {
        if let Some(old) = self.shards.write().remove(&shard) {
            old.stop.cancel();
        }
    }

    pub(crate) fn epoch(&self, shard: ShardId) -> Option<Epoch> {
        self.shards.read().get(&shard).map(|o| o.epoch)
    }

    pub(crate) fn all(&self) -> Vec<(ShardId, Epoch)> {
        self.shards
            .read()
            .iter()
            .map(|(s, o)| (*s, o.epoch))
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.read().len()
    }

    /// [`Self::resolve`], or SERVICE_NOT_AVAILABLE so the client refreshes its route.
    pub(crate) fn require(
        &self,
        broker_name: Option<&str>,
        conn_shard: Option<ShardId>,
    ) -> Result<ShardId> {
        self.resolve(broker_name, conn_shard)
            .ok_or_else(|| GatewayError::ShardNotOwned { shard: None })
    }

    /// SERVICE_NOT_AVAILABLE unless `shard` is owned here.
    pub(crate) fn require_owned(&self, shard: ShardId) -> Result<()> {
        match self.epoch(shard) {
            Some(_) => Ok(()),
            None => Err(GatewayError::ShardNotOwned { shard: Some(shard) }),
        }
    }

    /// The shard a broker request targets: the one its `bname` names, else the shard of the
    /// port it came in on, else (the name-server port) the first owned shard.
    pub(crate) fn resolve(
        &self,
        broker_name: Option<&str>,
        conn_shard: Option<ShardId>,
    ) -> Option<ShardId> {
        let shards = self.shards.read();
        match broker_name.and_then(parse_shard_name).or(conn_shard) {
            Some(s) if shards.contains_key(&s) => Some(s),
            Some(_) => None,
            None => shards.keys().next().copied(),
        }
    }
}

/// Where every shard is served, as published in routes: shard → `host:port` of its owner
/// (the last owner while it moves), and the owner with its lease epoch (front ends other
/// than RocketMQ's derive their own addresses from it). Rebuilt from meta by the
/// membership loop.
#[derive(Debug, Default)]
pub(crate) struct RouteTable {
    routes: RwLock<BTreeMap<ShardId, String>>,
    owners: RwLock<BTreeMap<ShardId, Owner>>,
}

/// The node serving a shard and the epoch it holds it under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) node: NodeId,
    pub(crate) epoch: Epoch,
}

impl RouteTable {
    pub(crate) fn replace(
        &self,
        routes: BTreeMap<ShardId, String>,
        owners: BTreeMap<ShardId, Owner>,
    ) {
        *self.routes.write() = routes;
        *self.owners.write() = owners;
    }

    pub(crate) fn set(&self, shard: ShardId, addr: String, owner: Owner) {
        self.routes.write().insert(shard, addr);
        self.owners.write().insert(shard, owner);
    }

    /// The node serving `shard` (the last one while it moves).
    pub(crate) fn owner(&self, shard: ShardId) -> Option<Owner> {
        self.owners.read().get(&shard).cloned()
    }

    pub(crate) fn all(&self) -> Vec<(ShardId, String)> {
        self.routes
            .read()
            .iter()
            .map(|(s, a)| (*s, a.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_ports_and_addresses() {
        assert_eq!(shard_port(10911, ShardId(0)), Some(10911));
        assert_eq!(shard_port(10911, ShardId(3)), Some(10920));
        assert_eq!(shard_port(65534, ShardId(1)), None);
        assert_eq!(shard_port(10911, ShardId(u32::MAX)), None);
        assert_eq!(
            shard_addr("10.0.0.5:10911", ShardId(2)).as_deref(),
            Some("10.0.0.5:10917")
        );
        // No shard's VIP port is another shard's port or VIP port.
        let mut seen = std::collections::BTreeSet::new();
        for s in 0..100 {
            let port = shard_port(10911, ShardId(s)).unwrap();
            assert!(seen.insert(port));
            assert!(seen.insert(vip_port(port).unwrap()));
        }
        assert_eq!(vip_port(10911), Some(10909));
        assert_eq!(vip_port(1), None);
        assert_eq!(
            shard_addr("node-a.stratus:20000", ShardId(0)).as_deref(),
            Some("node-a.stratus:20000")
        );
        assert_eq!(shard_addr("no-port", ShardId(0)), None);
    }

    #[test]
    fn requests_resolve_by_name_then_port_then_first_shard() {
        let owned = OwnedShards::default();
        owned.insert(ShardId(1), Epoch(1));
        owned.insert(ShardId(4), Epoch(2));
        assert_eq!(owned.resolve(None, None), Some(ShardId(1)));
        assert_eq!(owned.resolve(None, Some(ShardId(4))), Some(ShardId(4)));
        assert_eq!(
            owned.resolve(Some("broker-1"), Some(ShardId(4))),
            Some(ShardId(1))
        );
        assert_eq!(owned.resolve(Some("broker-2"), None), None);
        assert_eq!(owned.resolve(None, Some(ShardId(2))), None);
        assert!(owned.require(Some("broker-2"), None).is_err());
    }

    #[test]
    fn removing_a_shard_stops_its_listener() {
        let owned = OwnedShards::default();
        let stop = owned.insert(ShardId(0), Epoch(1));
        assert!(!stop.is_cancelled());
        owned.remove(ShardId(0));
        assert!(stop.is_cancelled());
        assert_eq!(owned.len(), 0);
    }
}
