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
//!
//! Meta outages. While meta cannot be reached every node's renewals and heartbeats fail (or
//! wait in the pool), so in meta every lease and heartbeat ages past the TTL at once. When meta
//! answers again, the first node to get through would see every other node dead and take their
//! expired leases, fencing the rightful owners. So a node takes another owner's expired lease
//! only once its own contact with meta has been settled for a full TTL ([`MetaContact`]):
//! every round answered, no call stalled. Every live node renews within that TTL (a renewal
//! under an unchanged epoch and owner succeeds even after the lease expired), so only a node
//! that is really gone is taken over, one TTL later than without the outage. Until then a
//! node takes only free shards and hands none over (its view of who is live is not settled
//! either). A round that failed is retried after [`RETRY_AFTER_FAILURE`] instead of a third
//! of the TTL, so renewals (and the re-opening of shards whose commits failed meanwhile)
//! follow meta's return at once. The route table keeps its last addresses while meta is
//! away, so route lookups keep being answered from it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use stratus_meta::{MetaError, NodeId, NodeInfo, ShardId, ShardLease};
use stratus_segments::writer::ShardStatus;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::node::Node;
use crate::node::shards::{BoundShard, Owner, ShardServer, shard_addr};

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

/// How soon a round in which meta failed is retried (at most [`renew_interval`]).
pub(crate) const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(500);

/// The pause before the next round: a third of the TTL, sooner after a failed round.
fn next_round_in(ttl: Duration, round_ok: bool) -> Duration {
    let every = renew_interval(ttl);
    if round_ok {
        every
    } else {
        every.min(RETRY_AFTER_FAILURE)
    }
}

/// Whether this node's contact with meta has been settled long enough for it to take over
/// another node's expired lease.
///
/// After a stretch of meta calls that failed, or that were answered only after a stall
/// (calls waiting in the pool while the server was away), every other node may have been cut
/// off just the same, so their leases may have expired only because of the outage. A node
/// takes such a lease only after a full TTL of prompt, answered rounds since: every live
/// node renews within that time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetaContact {
    /// Since when (ms) every stretch of meta calls was answered promptly; `None` right
    /// after a failed or stalled one.
    settled_since: Option<i64>,
}

impl MetaContact {
    /// A node that just registered: settled as of a TTL ago when registration was prompt
    /// (nothing suggests an outage), else from its next prompt round on.
    fn at_start(now_ms: i64, ttl_ms: i64, prompt: bool) -> Self {
        Self {
            settled_since: prompt.then(|| now_ms.saturating_sub(ttl_ms)),
        }
    }

    /// Records a stretch of meta calls that ended at `finished_ms`: all answered (`ok`) or
    /// not, the slowest taking `slowest_ms`. A call slower than `stall_ms` counts as a
    /// failure: meta was away meanwhile (the call waited in the pool for it).
    fn record(&mut self, finished_ms: i64, ok: bool, slowest_ms: i64, stall_ms: i64) {
        if !ok || slowest_ms > stall_ms {
            self.settled_since = None;
        } else if self.settled_since.is_none() {
            self.settled_since = Some(finished_ms);
        }
    }

    /// Whether contact has been settled for a full TTL at `now_ms`.
    fn settled(&self, now_ms: i64, ttl_ms: i64) -> bool {
        self.settled_since.is_some_and(|s| now_ms - s >= ttl_ms)
    }
}

/// The longest one heartbeat or renewal (one short statement each) may take and still count
/// as prompt: half a round interval.
fn stall_ms(ttl: Duration) -> i64 {
    crate::config::millis(renew_interval(ttl) / 2)
}

/// Creates the configured shards, registers this node and takes its share, binding each
/// taken shard's port on every front end.
///
/// Returns this node's [`MetaContact`] for [`run`].
pub(crate) async fn start(
    node: &Arc<Node>,
    front_ends: &[Arc<dyn ShardServer>],
) -> anyhow::Result<MetaContact> {
    let started = node.clock.now_ms();
    node.meta
        .ensure_shards(node.config.node.shards)
        .await
        .context("meta: ensure shards")?;
    let registering = node.clock.now_ms();
    heartbeat(node).await.context("meta: register node")?;
    let now = node.clock.now_ms();
    let slowest = (registering - started).max(now - registering);
    let ttl = node.config.meta.lease_ttl;
    let contact = MetaContact::at_start(now, ttl_ms(node), slowest <= stall_ms(ttl));
    rebalance(node, front_ends, contact.settled(now, ttl_ms(node)))
        .await
        .context("meta: take shards")?;
    refresh_routes(node).await.context("meta: load routes")?;
    Ok(contact)
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
        let owner = Owner {
            node: node_id(node),
            epoch: lease.epoch,
        };
        node.routes.set(shard, addr, owner);
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
    mut contact: MetaContact,
    cancel: CancellationToken,
) {
    let ttl = node.config.meta.lease_ttl;
    let mut round_ok = true;
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.clock.sleep(next_round_in(ttl, round_ok)) => {}
        }
        round_ok = true;
        let started = node.clock.now_ms();
        if let Err(e) = heartbeat(&node).await {
            warn!(error = %e, "node heartbeat failed; will retry");
            round_ok = false;
        }
        let mut slowest = node.clock.now_ms() - started;
        for (shard, epoch) in node.shards.all() {
            let now = node.clock.now_ms();
            let renewed = node
                .meta
                .renew_shard(shard, &node_id(&node), epoch, now, ttl_ms(&node))
                .await;
            slowest = slowest.max(node.clock.now_ms() - now);
            match renewed {
                Ok(_) => reopen_if_failed(&node, shard, epoch).await,
                Err(MetaError::Fenced { .. }) => {
                    error!(%shard, epoch = epoch.0, "lease lost; shard stops here");
                    drop_lost(&node, shard);
                }
                Err(e) => {
                    warn!(%shard, error = %e, "lease renewal failed; will retry");
                    round_ok = false;
                }
            }
        }
        if cancel.is_cancelled() {
            return;
        }
        let now = node.clock.now_ms();
        let was_settled = contact.settled(now, ttl_ms(&node));
        contact.record(now, round_ok, slowest, stall_ms(ttl));
        let settled = contact.settled(now, ttl_ms(&node));
        if was_settled && !settled {
            warn!("meta was unreachable or slow: no takeover of expired leases for one lease TTL");
        }
        if let Err(e) = rebalance(&node, &front_ends, settled).await {
            warn!(error = %e, "rebalance failed; will retry");
            round_ok = false;
        }
        if let Err(e) = refresh_routes(&node).await {
            warn!(error = %e, "route refresh failed; keeping the last route table");
            round_ok = false;
        }
        if let Err(e) = node.topics.refresh().await {
            warn!(error = %e, "topic refresh failed; keeping the last topic table");
            round_ok = false;
        }
        if !round_ok {
            contact.record(node.clock.now_ms(), false, 0, stall_ms(ttl));
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

/// [`decide`], held back while this node's contact with meta is not settled (see
/// [`MetaContact`]): no hand-over then, since which nodes look live (and what they hold) may
/// only reflect the outage.
fn decide_settled(
    me: &NodeId,
    held: &BTreeMap<NodeId, usize>,
    total: usize,
    settled: bool,
) -> Move {
    match decide(me, held, total) {
        Move::GiveOne if !settled => Move::Stay,
        m => m,
    }
}

/// Whether a node short of its share may take `lease` at `now`: a free shard, its own lease
/// not held here (a previous incarnation's), or, once contact is `settled`, another owner's
/// expired lease.
fn takeable(lease: &ShardLease, me: &NodeId, held_here: bool, now: i64, settled: bool) -> bool {
    if held_here {
        return false;
    }
    match &lease.owner {
        None => true,
        Some(o) if o == me => true,
        Some(_) => settled && lease.expires_at_ms <= now,
    }
}

fn live_leases(leases: &[ShardLease], now: i64) -> impl Iterator<Item = (&ShardLease, &NodeId)> {
    leases.iter().filter_map(move |l| match &l.owner {
        Some(o) if l.expires_at_ms > now => Some((l, o)),
        _ => None,
    })
}

/// One fair-share step (see [`decide`]); another owner's expired lease is taken only when
/// `settled` (see [`MetaContact`]).
async fn rebalance(
    node: &Arc<Node>,
    front_ends: &[Arc<dyn ShardServer>],
    settled: bool,
) -> anyhow::Result<()> {
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
    match decide_settled(&me, &held, leases.len(), settled) {
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
                let held_here = node.shards.epoch(lease.shard).is_some();
                if takeable(lease, &me, held_here, now, settled) {
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
    let mut owners: BTreeMap<ShardId, Owner> = routes
        .keys()
        .filter_map(|s| node.routes.owner(*s).map(|o| (*s, o)))
        .collect();
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
            owners.insert(
                lease.shard,
                Owner {
                    node: owner.clone(),
                    epoch: lease.epoch,
                },
            );
        }
    }
    node.routes.replace(routes, owners);
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

    fn lease(shard: u32, owner: Option<&str>, expires_at_ms: i64) -> ShardLease {
        ShardLease {
            shard: ShardId(shard),
            epoch: stratus_meta::Epoch(1),
            owner: owner.map(me),
            expires_at_ms,
        }
    }

    const TTL: i64 = 10_000;
    const STALL: i64 = 1_666;

    #[test]
    fn contact_is_settled_only_after_a_full_ttl_of_prompt_rounds() {
        // Registered promptly: nothing suggests an outage, takeovers are allowed at once.
        let c = MetaContact::at_start(50_000, TTL, true);
        assert!(c.settled(50_000, TTL));
        // A slow registration (meta was away): settled from the first prompt round on.
        let mut c = MetaContact::at_start(50_000, TTL, false);
        assert!(!c.settled(50_000, TTL));
        c.record(53_010, true, 10, STALL);
        assert!(!c.settled(60_000, TTL));
        c.record(56_010, true, 10, STALL);
        assert!(c.settled(63_010, TTL), "a TTL after the first prompt round");

        // A round that failed resets it; so does one answered only after a stall.
        let mut c = MetaContact::at_start(0, TTL, true);
        c.record(100_005, false, 5, STALL);
        assert!(!c.settled(100_005, TTL));
        c.record(100_505, true, 5, STALL);
        assert!(!c.settled(110_000, TTL));
        assert!(c.settled(110_505, TTL));
        c.record(117_000, true, 6_000, STALL);
        assert!(
            !c.settled(117_000, TTL),
            "calls that waited 6 s for the pool: meta was away"
        );
        c.record(118_001, true, 1, STALL);
        assert!(!c.settled(127_000, TTL));
        assert!(c.settled(128_001, TTL));
        // Many renewals, each prompt, are no stall however long the round.
        c.record(128_500, true, STALL, STALL);
        assert!(c.settled(128_500, TTL));
        // Later failures of a settled node unsettle it again.
        c.record(130_001, false, 1, STALL);
        assert!(!c.settled(130_001, TTL));
    }

    #[test]
    fn only_free_or_own_shards_are_taken_until_contact_is_settled() {
        let a = me("a");
        let now = 100_000;
        let free = lease(0, None, 0);
        let own_old = lease(1, Some("a"), now - 1);
        let others_expired = lease(2, Some("b"), now - 1);
        let others_live = lease(3, Some("b"), now + 5_000);
        for settled in [false, true] {
            assert!(takeable(&free, &a, false, now, settled));
            assert!(takeable(&own_old, &a, false, now, settled));
            assert!(!takeable(&others_live, &a, false, now, settled));
            assert!(
                !takeable(&free, &a, true, now, settled),
                "held here already"
            );
        }
        assert!(!takeable(&others_expired, &a, false, now, false));
        assert!(takeable(&others_expired, &a, false, now, true));
    }

    #[test]
    fn the_first_node_back_after_a_meta_outage_takes_nothing_from_the_others() {
        // Six shards, two each; meta was away past the TTL. Node c gets through first: a's
        // and b's heartbeats and leases have aged past the TTL, so c looks alone.
        let now = 200_000;
        let leases: Vec<ShardLease> = [("a", 0), ("a", 1), ("b", 2), ("b", 3), ("c", 4), ("c", 5)]
            .iter()
            .map(|(o, s)| lease(*s, Some(o), now - 500))
            .collect();
        let h = held(&[("c", 2)]);
        assert_eq!(decide_settled(&me("c"), &h, 6, false), Move::Take(4));
        let taken: Vec<u32> = leases
            .iter()
            .filter(|l| takeable(l, &me("c"), l.owner == Some(me("c")), now, false))
            .map(|l| l.shard.0)
            .collect();
        assert!(taken.is_empty(), "c takes {taken:?} before a and b renewed");
        // Once settled a node that really stayed away is taken over.
        let taken: Vec<u32> = leases
            .iter()
            .filter(|l| takeable(l, &me("c"), l.owner == Some(me("c")), now, true))
            .map(|l| l.shard.0)
            .collect();
        assert_eq!(taken, vec![0, 1, 2, 3]);
    }

    #[test]
    fn no_hand_over_until_contact_is_settled() {
        // b's leases look expired (not renewed yet after the outage): b seems to starve and
        // a, the fullest above ⌊7/3⌋, would give one away.
        let h = held(&[("a", 3), ("b", 0), ("c", 2)]);
        assert_eq!(decide(&me("a"), &h, 7), Move::GiveOne);
        assert_eq!(decide_settled(&me("a"), &h, 7, false), Move::Stay);
        assert_eq!(decide_settled(&me("a"), &h, 7, true), Move::GiveOne);
        // Taking free shards is not held back.
        let h = held(&[("a", 1), ("b", 1)]);
        assert_eq!(decide_settled(&me("a"), &h, 4, false), Move::Take(1));
    }

    #[test]
    fn a_failed_round_is_retried_sooner() {
        let ttl = Duration::from_secs(10);
        assert_eq!(next_round_in(ttl, true), renew_interval(ttl));
        assert_eq!(next_round_in(ttl, false), RETRY_AFTER_FAILURE);
        let short = Duration::from_millis(600);
        assert_eq!(next_round_in(short, false), renew_interval(short));
        assert_eq!(stall_ms(ttl), 1_666);
    }

    #[test]
    fn more_nodes_than_shards_leaves_spares_idle() {
        let h = held(&[("a", 1), ("b", 1), ("c", 1), ("d", 0)]);
        assert_eq!(decide(&me("d"), &h, 3), Move::Take(1));
        assert_eq!(decide(&me("a"), &h, 3), Move::Stay);
    }
}
