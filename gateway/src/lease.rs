//! Shard leases: take every shard at start (one node on the embedded default owns them
//! all), renew them, and release them on shutdown. A renewal that comes back fenced stops
//! serving that shard at once.

use std::sync::Arc;

use anyhow::Context;
use stratus_meta::{MetaError, NodeId, ShardId};
use stratus_segments::writer::ShardStatus;
use tracing::{error, info, warn};

use crate::app::{Broker, renew_interval};

fn ttl_ms(broker: &Broker) -> i64 {
    crate::config::millis(broker.settings.meta.lease_ttl)
}

fn node(broker: &Broker) -> NodeId {
    NodeId(broker.settings.node.id.clone())
}

/// Creates the configured shards and takes every free one.
pub(crate) async fn acquire_all(broker: &Arc<Broker>) -> anyhow::Result<()> {
    let leases = broker
        .meta
        .ensure_shards(broker.settings.node.shards)
        .await
        .context("meta: ensure shards")?;
    for lease in leases {
        take(broker, lease.shard).await?;
    }
    Ok(())
}

async fn take(broker: &Arc<Broker>, shard: ShardId) -> anyhow::Result<bool> {
    let now = broker.clock.now_ms();
    let Some(lease) = broker
        .meta
        .acquire_shard(shard, &node(broker), now, ttl_ms(broker))
        .await
        .with_context(|| format!("meta: acquire shard {shard}"))?
    else {
        info!(%shard, "shard held by another node");
        return Ok(false);
    };
    let state = broker
        .meta
        .shard_state(shard)
        .await
        .with_context(|| format!("meta: load shard {shard}"))?;
    broker.writer.open_shard(shard, lease.epoch, state);
    broker.shards.insert(shard, lease.epoch);
    info!(%shard, epoch = lease.epoch.0, "shard acquired");
    Ok(true)
}

/// Renews leases until cancelled.
pub(crate) async fn keep(broker: Arc<Broker>) {
    let every = renew_interval(broker.settings.meta.lease_ttl);
    loop {
        tokio::select! {
            () = broker.cancel.cancelled() => return,
            () = broker.clock.sleep(every) => {}
        }
        for (shard, epoch) in broker.shards.all() {
            let now = broker.clock.now_ms();
            match broker
                .meta
                .renew_shard(shard, &node(&broker), epoch, now, ttl_ms(&broker))
                .await
            {
                Ok(_) => reopen_if_failed(&broker, shard, epoch).await,
                Err(MetaError::Fenced { .. }) => {
                    error!(%shard, epoch = epoch.0, "lease lost; shard stops here");
                    broker.shards.remove(shard);
                    broker.writer.close_shard(shard);
                }
                Err(e) => warn!(%shard, error = %e, "lease renewal failed; will retry"),
            }
        }
        // Re-take shards that are free (e.g. after a transient loss).
        if let Ok(all) = broker.meta.list_shards().await {
            for lease in all {
                if broker.shards.epoch(lease.shard).is_none()
                    && lease.owner.is_none()
                    && let Err(e) = take(&broker, lease.shard).await
                {
                    warn!(shard = %lease.shard, error = %e, "cannot take free shard");
                }
            }
        }
    }
}

/// A shard whose segment commit failed (upload or meta error after retries) accepts no
/// appends until it is re-opened from meta's state: do that once the lease is confirmed.
async fn reopen_if_failed(broker: &Arc<Broker>, shard: ShardId, epoch: stratus_meta::Epoch) {
    if let Some(ShardStatus::Failed(e)) = broker.writer.shard_status(shard) {
        warn!(%shard, error = %e, "re-opening shard after a failed commit");
        match broker.meta.shard_state(shard).await {
            Ok(state) => broker.writer.open_shard(shard, epoch, state),
            Err(e) => warn!(%shard, error = %e, "cannot load shard state; will retry"),
        }
    }
}

/// Releases every owned shard (after the final flush).
pub(crate) async fn release_all(broker: &Arc<Broker>) {
    for (shard, epoch) in broker.shards.all() {
        broker.writer.close_shard(shard);
        broker.shards.remove(shard);
        if let Err(e) = broker.meta.release_shard(shard, &node(broker), epoch).await {
            warn!(%shard, error = %e, "release failed");
        }
    }
}
