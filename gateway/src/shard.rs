//! Shards this node owns: names as published in routes (`broker-<n>`), epochs, and the
//! lease keeper that renews them.

use std::collections::BTreeMap;

use parking_lot::RwLock;
use stratus_meta::{Epoch, ShardId};

use crate::error::{GatewayError, Result};

/// Route name of a shard.
pub(crate) fn shard_name(shard: ShardId) -> String {
    format!("broker-{}", shard.0)
}

/// Shard id from a route name.
pub(crate) fn parse_shard_name(name: &str) -> Option<ShardId> {
    name.strip_prefix("broker-")?.parse().ok().map(ShardId)
}

/// Shards owned here with the epoch each is held under.
#[derive(Debug, Default)]
pub(crate) struct OwnedShards {
    shards: RwLock<BTreeMap<ShardId, Epoch>>,
}

impl OwnedShards {
    pub(crate) fn insert(&self, shard: ShardId, epoch: Epoch) {
        self.shards.write().insert(shard, epoch);
    }

    pub(crate) fn remove(&self, shard: ShardId) {
        self.shards.write().remove(&shard);
    }

    pub(crate) fn epoch(&self, shard: ShardId) -> Option<Epoch> {
        self.shards.read().get(&shard).copied()
    }

    pub(crate) fn all(&self) -> Vec<(ShardId, Epoch)> {
        self.shards.read().iter().map(|(s, e)| (*s, *e)).collect()
    }

    /// [`Self::resolve`], or SERVICE_NOT_AVAILABLE so the client refreshes its route.
    pub(crate) fn require(&self, broker_name: Option<&str>) -> Result<ShardId> {
        self.resolve(broker_name).ok_or_else(|| {
            GatewayError::ServiceNotAvailable("the shard is not owned by this node".into())
        })
    }

    /// SERVICE_NOT_AVAILABLE unless `shard` is owned here.
    pub(crate) fn require_owned(&self, shard: ShardId) -> Result<()> {
        match self.epoch(shard) {
            Some(_) => Ok(()),
            None => Err(GatewayError::ServiceNotAvailable(format!(
                "shard {shard} is not owned here"
            ))),
        }
    }

    /// The shard a broker request targets: the one its `bname` names, else the first owned
    /// shard (clients that send no broker name talk to single-shard nodes).
    pub(crate) fn resolve(&self, broker_name: Option<&str>) -> Option<ShardId> {
        let shards = self.shards.read();
        match broker_name.and_then(parse_shard_name) {
            Some(s) if shards.contains_key(&s) => Some(s),
            Some(_) => None,
            None => shards.keys().next().copied(),
        }
    }
}
