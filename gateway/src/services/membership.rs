//! Shard leases and cluster membership.
//!
//! Every node registers itself in meta and heartbeats there; one loop per node, every third
//! of the lease TTL: heartbeat, renew the leases held, rebalance, rebuild the route table,
//! reload the topic table (topics created or changed through another node).
//!
//! Rebalancing aims at a fair share: with `S` shards and `N` live nodes (heartbeat younger
//! than the lease TTL) each node holds between ⌊S/N⌋ and ⌈S/N⌉. A node below ⌈S/N⌉ takes free
//! or expired shards (an expired lease is a dead node's: taken over with epoch + 1). A node
//! above ⌈S/N⌉, or the fullest node while another is below ⌊S/N⌋, hands one shard over per
//! round: it stops taking requests for it, flushes, closes it and releases the lease, and
//! the node that needs it takes it on its next round. SIGTERM releases every shard after the
//! final flush, so the others take them over within one round instead of a TTL. One node on
//! the embedded default is alone, so it holds every shard.
//!
//! A renewal that comes back fenced (another node took the shard: this node was paused or cut
//! off for longer than the TTL) stops serving that shard at once; sends waiting for it fail
//! with SERVICE_NOT_AVAILABLE, because their commit is fenced by the epoch.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use stratus_meta::{MetaError, NodeId, NodeInfo, ShardId, ShardLease};
use stratus_segments::writer::ShardStatus;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::node::Node;
use crate::node::shards::{BoundShard, ShardServer, shard_addr};

fn ttl_ms(node: &Node) -> i64 {
    crate::config::millis(node.config.meta.lease_ttl)
}

fn node_id(node: &Node) -> NodeId {
    node.id()
}

/// How long to wait between lease renewals: a third of the TTL.
pub(crate) fn renew_interval(ttl: Duration) -> Duration {
    (ttl / 3).max(Duration::from_millis(100))
}

/// Creates the configured shards, registers this node and takes its share, binding each
/// taken shard's port on every front end.
pub(crate) async fn start(
    node: &Arc<Node>,
    front_ends: &[Arc<dyn ShardServer>],
) -> anyhow::Result<()> {
    node.meta
        .ensure_shards(node.config.node.shards)
        .await
        .context("meta: ensure shards")?;
    heartbeat(node).await.context("meta: register node")?;
    rebalance(node, front_ends)
        .await
        .context("meta: take shards")?;
    refresh_routes(node).await.context("meta: load routes")?;
    Ok(())
}

async fn heartbeat(node: &Node) -> Result<(), MetaError> {
    node.meta
        .heartbeat_node(&NodeInfo {
            node: node_id(node),
            addr: node.advertised.clone(),
            heartbeat_ms: node.clock.now_ms(),
        })
        .await
}

/// Takes `shard` if it is free, expired or ours; opens it in the writer and binds its port
/// on every front end.
async fn take(
    node: &Arc<Node>,
    front_ends: &[Arc<dyn ShardServer>],
    shard: ShardId,
) -> anyhow::Result<bool> {
    let now = node.clock.now_ms();
    let Some(lease) = node
        .meta
        .acquire_shard(shard, &node_id(node), now, ttl_ms(node))
        .await
        .with_context(|| format!("meta: acquire shard {shard}"))?
    else {
        info!(%shard, "shard held by another node");
        return Ok(false);
    };
    let bound = async {
        let state = node
            .meta
            .shard_state(shard)
            .await
            .with_context(|| format!("meta: load shard {shard}"))?;
        let mut ports: Vec<BoundShard> = Vec::new();
        for f in front_ends {
            if let Some(p) = f.clone().bind_shard(shard).await? {
                ports.push(p);
            }
        }
        anyhow::Ok((state, ports))
    }
    .await;
    let (state, ports) = match bound {
        Ok(b) => b,
        Err(e) => {
            let _ = node
                .meta
                .release_shard(shard, &node_id(node), lease.epoch)
                .await;
            return Err(e);
        }
    };
    node.writer.open_shard(shard, lease.epoch, state);
    let stop = node.shards.insert(shard, lease.epoch);
    for port in ports {
        info!(%shard, addr = %port.addr, "serving shard");
        (port.serve)(stop.clone());
    }
    if let Some(addr) = shard_addr(&node.advertised, shard) {
        node.routes.set(shard, addr);
    }
    info!(%shard, epoch = lease.epoch.0, "shard acquired");
    Ok(true)
}

/// Stops serving `shard`: no new requests, flush what was accepted, close it in the writer,
/// release the lease (owner cleared, epoch kept; the next owner bumps it).
async fn hand_over(node: &Arc<Node>, shard: ShardId) {
    let Some(epoch) = node.shards.epoch(shard) else {
        return;
    };
    info!(%shard, epoch = epoch.0, "handing shard over");
    node.shards.remove(shard);
    if let Err(e) = node.writer.flush().await {
        warn!(%shard, error = %e, "flush before hand-over failed");
    }
    node.writer.close_shard(shard);
    if let Err(e) = node.meta.release_shard(shard, &node_id(node), epoch).await {
        warn!(%shard, error = %e, "release failed; the lease will expire");
    }
}

/// Drops a shard whose lease was lost: nothing more is committed under the old epoch.
fn drop_lost(node: &Node, shard: ShardId) {
    node.shards.remove(shard);
    node.writer.close_shard(shard);
}

/// Renews leases and keeps the membership and the route table current until cancelled.
pub(crate) async fn run(
    node: Arc<Node>,
    front_ends: Vec<Arc<dyn ShardServer>>,
    cancel: CancellationToken,
) {
    let every = renew_interval(node.config.meta.lease_ttl);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.clock.sleep(every) => {}
        }
        if let Err(e) = heartbeat(&node).await {
            warn!(error = %e, "node heartbeat failed; will retry");
        }
        for (shard, epoch) in node.shards.all() {
            let now = node.clock.now_ms();
            match node
                .meta
                .renew_shard(shard, &node_id(&node), epoch, now, ttl_ms(&node))
                .await
            {
                Ok(_) => reopen_if_failed(&node, shard, epoch).await,
                Err(MetaError::Fenced { .. }) => {
                    error!(%shard, epoch = epoch.0, "lease lost; shard stops here");
                    drop_lost(&node, shard);
                }
                Err(e) => warn!(%shard, error = %e, "lease renewal failed; will retry"),
            }
        }
        if cancel.is_cancelled() {
            return;
        }
        if let Err(e) = rebalance(&node, &front_ends).await {
            warn!(error = %e, "rebalance failed; will retry");
        }
        if let Err(e) = refresh_routes(&node).await {
            warn!(error = %e, "route refresh failed; will retry");
        }
        if let Err(e) = node.topics.refresh().await {
            warn!(error = %e, "topic refresh failed; will retry");
        }
    }
}

/// What a node should do in one rebalance round.
#[derive(Debug, PartialEq, Eq)]
enum Move {
    /// Take up to this many free or expired shards.
    Take(usize),
    /// Hand one shard over.
    GiveOne,
    Stay,
}

/// Fair-share decision for `me`, given every live node's count of live leases (`me`
/// included) and the shard total.
fn decide(me: &NodeId, held: &BTreeMap<NodeId, usize>, total: usize) -> Move {
    let live = held.len().max(1);
    let ceil = total.div_ceil(live);
    let floor = total / live;
    let mine = held.get(me).copied().unwrap_or(0);
    if mine > ceil {
        return Move::GiveOne;
    }
    let starving = held.values().any(|&n| n < floor);
    // The fullest node (ties: the smallest id) gives way to a starving one.
    let fullest = held
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(n, _)| n);
    if starving && mine > floor && fullest == Some(me) {
        return Move::GiveOne;
    }
    // While a node starves, only it takes: a shard handed over for it goes to it.
    if mine < floor || (!starving && mine < ceil) {
        return Move::Take(ceil - mine);
    }
    Move::Stay
}

fn live_leases(leases: &[ShardLease], now: i64) -> impl Iterator<Item = (&ShardLease, &NodeId)> {
    leases.iter().filter_map(move |l| match &l.owner {
        Some(o) if l.expires_at_ms > now => Some((l, o)),
        _ => None,
    })
}

async fn rebalance(node: &Arc<Node>, front_ends: &[Arc<dyn ShardServer>]) -> anyhow::Result<()> {
    let me = node_id(node);
    let now = node.clock.now_ms();
    let ttl = ttl_ms(node);
    let nodes = node.meta.list_nodes().await?;
    let leases = node.meta.list_shards().await?;
    let mut held: BTreeMap<NodeId, usize> = nodes
        .iter()
        .filter(|n| n.heartbeat_ms > now - ttl)
        .map(|n| (n.node.clone(), 0))
        .collect();
    held.insert(me.clone(), node.shards.len());
    for (_, owner) in live_leases(&leases, now) {
        if *owner != me
            && let Some(n) = held.get_mut(owner)
        {
            *n += 1;
        }
    }
    match decide(&me, &held, leases.len()) {
        Move::GiveOne => {
            if let Some((shard, _)) = node.shards.all().last() {
                hand_over(node, *shard).await;
            }
        }
        Move::Take(mut want) => {
            for lease in &leases {
                if want == 0 {
                    break;
                }
                let free = match &lease.owner {
                    None => true,
                    Some(o) => {
                        (*o == me && node.shards.epoch(lease.shard).is_none())
                            || lease.expires_at_ms <= now
                    }
                };
                if free && node.shards.epoch(lease.shard).is_none() {
                    match take(node, front_ends, lease.shard).await {
                        Ok(true) => want -= 1,
                        Ok(false) => {}
                        Err(e) => warn!(shard = %lease.shard, error = %e, "cannot take shard"),
                    }
                }
            }
        }
        Move::Stay => {}
    }
    Ok(())
}

/// Rebuilds the route table: each shard with a live lease at its owner's address. A shard
/// between owners (lease expired or released, not yet taken) keeps its last address, so
/// consumers keep their queues (a queue that vanished from the route and came back would
/// be re-assigned and restart from the last committed offset) and simply retry until the
/// next owner serves it.
async fn refresh_routes(node: &Node) -> anyhow::Result<()> {
    let now = node.clock.now_ms();
    let nodes: HashMap<NodeId, String> = node
        .meta
        .list_nodes()
        .await?
        .into_iter()
        .map(|n| (n.node, n.addr))
        .collect();
    let leases = node.meta.list_shards().await?;
    let me = node_id(node);
    let mut routes: BTreeMap<ShardId, String> = node.routes.all().into_iter().collect();
    routes.retain(|shard, _| leases.iter().any(|l| l.shard == *shard));
    for (lease, owner) in live_leases(&leases, now) {
        let base = if *owner == me {
            if node.shards.epoch(lease.shard).is_none() {
                continue;
            }
            Some(&node.advertised)
        } else {
            nodes.get(owner)
        };
        if let Some(addr) = base.and_then(|b| shard_addr(b, lease.shard)) {
            routes.insert(lease.shard, addr);
        }
    }
    node.routes.replace(routes);
    Ok(())
}

/// A shard whose segment commit failed (upload or meta error after retries) accepts no
/// appends until it is re-opened from meta's state: do that once the lease is confirmed.
async fn reopen_if_failed(node: &Arc<Node>, shard: ShardId, epoch: stratus_meta::Epoch) {
    if let Some(ShardStatus::Failed(e)) = node.writer.shard_status(shard) {
        warn!(%shard, error = %e, "re-opening shard after a failed commit");
        match node.meta.shard_state(shard).await {
            Ok(state) => node.writer.open_shard(shard, epoch, state),
            Err(e) => warn!(%shard, error = %e, "cannot load shard state; will retry"),
        }
    }
}

/// Releases every owned shard (after the final flush) and leaves the membership.
pub(crate) async fn release_all(node: &Arc<Node>) {
    for (shard, epoch) in node.shards.all() {
        node.writer.close_shard(shard);
        node.shards.remove(shard);
        if let Err(e) = node.meta.release_shard(shard, &node_id(node), epoch).await {
            warn!(%shard, error = %e, "release failed");
        }
    }
    if let Err(e) = node.meta.remove_node(&node_id(node)).await {
        warn!(error = %e, "cannot leave the membership; the heartbeat will expire");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(counts: &[(&str, usize)]) -> BTreeMap<NodeId, usize> {
        counts
            .iter()
            .map(|(n, c)| (NodeId((*n).into()), *c))
            .collect()
    }

    fn me(n: &str) -> NodeId {
        NodeId(n.into())
    }

    #[test]
    fn a_lone_node_takes_every_shard() {
        assert_eq!(decide(&me("a"), &held(&[("a", 0)]), 4), Move::Take(4));
        assert_eq!(decide(&me("a"), &held(&[("a", 4)]), 4), Move::Stay);
    }

    #[test]
    fn a_joining_node_gets_a_fair_share_by_hand_over() {
        // 6 shards on two nodes; a third joins: each old node holds 3 > ⌈6/3⌉ = 2.
        let h = held(&[("a", 3), ("b", 3), ("c", 0)]);
        assert_eq!(decide(&me("a"), &h, 6), Move::GiveOne);
        assert_eq!(decide(&me("b"), &h, 6), Move::GiveOne);
        assert_eq!(decide(&me("c"), &h, 6), Move::Take(2));
        let h = held(&[("a", 2), ("b", 2), ("c", 2)]);
        for n in ["a", "b", "c"] {
            assert_eq!(decide(&me(n), &h, 6), Move::Stay);
        }
    }

    #[test]
    fn the_fullest_node_gives_way_to_a_starving_one() {
        // 4 shards, 3 nodes: ⌊4/3⌋ = 1, ⌈4/3⌉ = 2; c holds none.
        let h = held(&[("a", 2), ("b", 2), ("c", 0)]);
        assert_eq!(decide(&me("a"), &h, 4), Move::GiveOne);
        assert_eq!(decide(&me("b"), &h, 4), Move::Stay);
        assert_eq!(decide(&me("c"), &h, 4), Move::Take(2));
        // After one hand-over: 1, 2, 0 → only c takes; b, now the fullest, gives another.
        let h = held(&[("a", 1), ("b", 2), ("c", 0)]);
        assert_eq!(decide(&me("a"), &h, 4), Move::Stay);
        assert_eq!(decide(&me("b"), &h, 4), Move::GiveOne);
        assert_eq!(decide(&me("c"), &h, 4), Move::Take(2));
        // 1, 1, 1 and one free shard: whoever is first takes it.
        let h = held(&[("a", 1), ("b", 1), ("c", 1)]);
        assert_eq!(decide(&me("b"), &h, 4), Move::Take(1));
    }

    #[test]
    fn survivors_take_a_dead_nodes_shards() {
        // c died: its leases expired, it is not live any more.
        let h = held(&[("a", 2), ("b", 2)]);
        assert_eq!(decide(&me("a"), &h, 6), Move::Take(1));
        assert_eq!(decide(&me("b"), &h, 6), Move::Take(1));
    }

    #[test]
    fn more_nodes_than_shards_leaves_spares_idle() {
        let h = held(&[("a", 1), ("b", 1), ("c", 1), ("d", 0)]);
        assert_eq!(decide(&me("d"), &h, 3), Move::Take(1));
        assert_eq!(decide(&me("a"), &h, 3), Move::Stay);
    }
}
