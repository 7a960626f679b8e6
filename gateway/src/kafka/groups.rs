//! The classic consumer group protocol: a group coordinator per shard owner, with the
//! reference's states (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead),
//! generations, member ids handed out first (MEMBER_ID_REQUIRED, KIP-394), static
//! membership (`group.instance.id`, KIP-345), the initial rebalance delay, rebalance and
//! session timeouts; and ListGroups, DescribeGroups, DeleteGroups.
//!
//! Group `g` is coordinated by the owner of shard `abs(hash(g)) % shards`. Membership is
//! held in memory there; each completed rebalance (the group turning Stable) and each
//! group emptying is written to meta (`stratus.kafka.groups`, one record per group: the
//! generation, leader, protocol and every member with its assignment), never a heartbeat.
//! So when the shard moves, the new owner loads the group as it last stood: its members
//! keep their generation, their heartbeats and commits are accepted, and no rebalance
//! follows — as Kafka's coordinator reloads a group from `__consumer_offsets`. Offsets are
//! the core's, shared with RocketMQ.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::*;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use stratus_compat::types::ConsumerGroup;
use stratus_meta::ShardId;
use tokio::sync::oneshot;

use super::Kafka;
use super::dispatch::{Ctx, sb};
use super::metadata::coordinator_shard;

/// A group's state, as Kafka names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
        }
    }
}

#[derive(Debug)]
struct Member {
    instance_id: Option<String>,
    client_id: String,
    client_host: String,
    session_timeout_ms: i64,
    rebalance_timeout_ms: i64,
    protocols: Vec<(String, Bytes)>,
    assignment: Bytes,
    join_waiter: Option<oneshot::Sender<JoinGroupResponse>>,
    sync_waiter: Option<oneshot::Sender<SyncGroupResponse>>,
    last_seen_ms: i64,
    joined_seq: u64,
}

#[derive(Debug)]
struct Group {
    state: State,
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    members: BTreeMap<String, Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, not yet joined (with when).
    pending: HashMap<String, i64>,
    /// Bumped at each rebalance start: a timer of an older rebalance does nothing.
    rebalance_seq: u64,
    /// The first rebalance of an empty group completes no earlier than this.
    not_before_ms: i64,
    next_join_seq: u64,
}

impl Group {
    /// A group that never had a member (what [`ensure_loaded`] keeps for a group meta does
    /// not know): it does not exist for ListGroups, DescribeGroups and DeleteGroups.
    fn is_phantom(&self) -> bool {
        self.generation == 0 && self.members.is_empty() && self.protocol_type.is_none()
    }

    fn new() -> Self {
        Self {
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            pending: HashMap::new(),
            rebalance_seq: 0,
            not_before_ms: 0,
            next_join_seq: 0,
        }
    }
}

/// Every group coordinated on this node.
#[derive(Debug, Default)]
pub(crate) struct Coordinator {
    groups: Mutex<HashMap<String, Group>>,
}

fn error_join(code: ResponseError, member_id: &str) -> JoinGroupResponse {
    let mut r = JoinGroupResponse::default();
    r.error_code = code.code();
    r.generation_id = -1;
    r.member_id = sb(member_id);
    r
}

fn error_sync(code: ResponseError) -> SyncGroupResponse {
    let mut r = SyncGroupResponse::default();
    r.error_code = code.code();
    r
}

impl Coordinator {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Drops every group whose coordinating shard is no longer owned here.
    fn forget_unowned(&self, kafka: &Kafka) {
        let shards = kafka.shards();
        self.groups.lock().retain(|g, _| {
            kafka
                .node
                .shards
                .epoch(coordinator_shard(g, shards))
                .is_some()
        });
    }
}

/// Whether this node coordinates `group` now.
pub(crate) fn coordinates(kafka: &Kafka, group: &str) -> bool {
    kafka
        .node
        .shards
        .epoch(coordinator_shard(group, kafka.shards()))
        .is_some()
}

/// Starts a rebalance: waiters of the previous sync are told to rejoin, and a timer ends
/// the join phase at the rebalance timeout (or the initial delay of an empty group).
fn prepare_rebalance(kafka: &Arc<Kafka>, id: &str, g: &mut Group) {
    if g.state == State::CompletingRebalance {
        for m in g.members.values_mut() {
            if let Some(w) = m.sync_waiter.take() {
                let _ = w.send(error_sync(ResponseError::RebalanceInProgress));
            }
        }
    }
    let now = kafka.node.clock.now_ms();
    let was_empty = g.state == State::Empty;
    g.state = State::PreparingRebalance;
    g.rebalance_seq += 1;
    let timeout = g
        .members
        .values()
        .map(|m| m.rebalance_timeout_ms)
        .max()
        .unwrap_or(0)
        .max(0);
    let delay = i64::try_from(
        kafka
            .node
            .config
            .kafka
            .group_initial_rebalance_delay
            .as_millis(),
    )
    .unwrap_or(i64::MAX)
    .min(timeout);
    if was_empty {
        g.not_before_ms = now + delay;
        schedule(kafka, id, g.rebalance_seq, delay, false);
    }
    schedule(kafka, id, g.rebalance_seq, timeout, true);
}

fn schedule(kafka: &Arc<Kafka>, id: &str, seq: u64, after_ms: i64, force: bool) {
    let kafka = kafka.clone();
    let id = id.to_owned();
    let wait = Duration::from_millis(u64::try_from(after_ms).unwrap_or(0));
    let cancel = kafka.node.cancel.clone();
    kafka.node.tracker.clone().spawn(async move {
        tokio::select! {
            () = kafka.node.clock.sleep(wait) => {}
            () = cancel.cancelled() => return,
        }
        let mut groups = kafka.groups.groups.lock();
        if let Some(g) = groups.get_mut(&id)
            && g.rebalance_seq == seq
            && g.state == State::PreparingRebalance
        {
            if force {
                complete_join(&kafka, g);
            } else {
                maybe_complete_join(&kafka, g);
            }
        }
    });
}

fn maybe_complete_join(kafka: &Kafka, g: &mut Group) {
    if g.state != State::PreparingRebalance {
        return;
    }
    if kafka.node.clock.now_ms() < g.not_before_ms {
        return;
    }
    if g.members.values().all(|m| m.join_waiter.is_some()) && g.pending.is_empty() {
        complete_join(kafka, g);
    }
}

/// Ends the join phase: members that did not rejoin are removed, the generation moves on,
/// a protocol every member supports is chosen and each waiting member is answered (the
/// leader with every member's metadata).
fn complete_join(kafka: &Kafka, g: &mut Group) {
    g.pending.clear();
    g.members.retain(|_, m| m.join_waiter.is_some());
    g.generation += 1;
    if g.members.is_empty() {
        g.state = State::Empty;
        g.protocol = None;
        g.leader = None;
        return;
    }
    if g.leader.as_ref().is_none_or(|l| !g.members.contains_key(l)) {
        g.leader = g
            .members
            .iter()
            .min_by_key(|(_, m)| m.joined_seq)
            .map(|(id, _)| id.clone());
    }
    let leader = g.leader.clone().unwrap_or_default();
    let protocol = g.members.get(&leader).and_then(|lm| {
        lm.protocols.iter().map(|(p, _)| p.clone()).find(|p| {
            g.members
                .values()
                .all(|m| m.protocols.iter().any(|(q, _)| q == p))
        })
    });
    g.protocol = protocol.clone();
    g.state = State::CompletingRebalance;
    let now = kafka.node.clock.now_ms();
    let proto = protocol.unwrap_or_default();
    let all: Vec<JoinGroupResponseMember> = g
        .members
        .iter()
        .map(|(id, m)| {
            let mut jm = JoinGroupResponseMember::default();
            jm.member_id = sb(id.clone());
            jm.group_instance_id = m.instance_id.clone().map(sb);
            jm.metadata = m
                .protocols
                .iter()
                .find(|(p, _)| *p == proto)
                .map(|(_, md)| md.clone())
                .unwrap_or_default();
            jm
        })
        .collect();
    for (id, m) in &mut g.members {
        m.last_seen_ms = now;
        if let Some(w) = m.join_waiter.take() {
            let mut r = JoinGroupResponse::default();
            r.generation_id = g.generation;
            r.protocol_type = g.protocol_type.clone().map(sb);
            r.protocol_name = Some(sb(proto.clone()));
            r.leader = sb(leader.clone());
            r.member_id = sb(id.clone());
            if *id == leader {
                r.members = all.clone();
            }
            let _ = w.send(r);
        }
    }
}

/// Meta KV namespace of the groups' last settled state (group id → [`Saved`] as JSON).
const GROUPS_NS: &str = "stratus.kafka.groups";

/// What meta keeps of a group: its state after the last completed rebalance.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    members: Vec<SavedMember>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedMember {
    id: String,
    instance_id: Option<String>,
    client_id: String,
    client_host: String,
    session_timeout_ms: i64,
    rebalance_timeout_ms: i64,
    /// `(protocol, metadata in base64)`.
    protocols: Vec<(String, String)>,
    /// Base64.
    assignment: String,
}

fn b64(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn unb64(s: &str) -> Bytes {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map(Bytes::from)
        .unwrap_or_default()
}

impl Saved {
    fn of(g: &Group) -> Self {
        Self {
            generation: g.generation,
            protocol_type: g.protocol_type.clone(),
            protocol: g.protocol.clone(),
            leader: g.leader.clone(),
            members: g
                .members
                .iter()
                .map(|(id, m)| SavedMember {
                    id: id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout_ms: m.session_timeout_ms,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    protocols: m
                        .protocols
                        .iter()
                        .map(|(p, md)| (p.clone(), b64(md)))
                        .collect(),
                    assignment: b64(&m.assignment),
                })
                .collect(),
        }
    }

    /// The group as it stood, every member seen just now (their sessions start over).
    fn into_group(self, now_ms: i64) -> Group {
        let mut g = Group::new();
        g.generation = self.generation;
        g.protocol_type = self.protocol_type;
        g.protocol = self.protocol;
        g.leader = self.leader;
        for (seq, m) in self.members.into_iter().enumerate() {
            g.members.insert(
                m.id,
                Member {
                    instance_id: m.instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    session_timeout_ms: m.session_timeout_ms,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    protocols: m
                        .protocols
                        .iter()
                        .map(|(p, md)| (p.clone(), unb64(md)))
                        .collect(),
                    assignment: unb64(&m.assignment),
                    join_waiter: None,
                    sync_waiter: None,
                    last_seen_ms: now_ms,
                    joined_seq: seq as u64,
                },
            );
        }
        g.next_join_seq = g.members.len() as u64;
        g.state = if g.members.is_empty() {
            State::Empty
        } else {
            State::Stable
        };
        g
    }
}

/// Writes `g`'s settled state to meta in the background (best effort: a failure only
/// means a later coordinator starts the group over, as before).
fn save(kafka: &Arc<Kafka>, id: &str, g: &Group) {
    let text = match serde_json::to_string(&Saved::of(g)) {
        Ok(t) => t,
        Err(_) => return,
    };
    let kafka2 = kafka.clone();
    let id = id.to_owned();
    kafka.node.tracker.spawn(async move {
        if let Err(e) = kafka2.node.meta.put_kv(GROUPS_NS, &id, &text).await {
            tracing::debug!(group = %id, error = %e, "cannot save the group's state in meta");
        }
    });
}

/// Makes sure a group this node coordinates is in memory: loaded from meta as it last
/// stood, or empty (so a group is read from meta once per coordinator, not per request).
async fn ensure_loaded(kafka: &Kafka, id: &str) {
    if kafka.groups.groups.lock().contains_key(id) {
        return;
    }
    let saved = match kafka.node.meta.get_kv(GROUPS_NS, id).await {
        Ok(Some(text)) => serde_json::from_str::<Saved>(&text).ok(),
        Ok(None) => None,
        // Meta away: leave it absent so the next request tries again.
        Err(_) => return,
    };
    let now = kafka.node.clock.now_ms();
    let group = saved.map_or_else(Group::new, |s| s.into_group(now));
    kafka
        .groups
        .groups
        .lock()
        .entry(id.to_owned())
        .or_insert(group);
}

fn new_member_id(client_id: &str) -> String {
    format!("{client_id}-{}", uuid::Uuid::new_v4())
}

/// JoinGroup.
pub(crate) async fn join(
    kafka: &Arc<Kafka>,
    ctx: &Ctx,
    req: JoinGroupRequest,
) -> JoinGroupResponse {
    let id = req.group_id.as_str().to_owned();
    let member_id = req.member_id.as_str().to_owned();
    if id.is_empty() {
        return error_join(ResponseError::InvalidGroupId, &member_id);
    }
    if !coordinates(kafka, &id) {
        return error_join(ResponseError::NotCoordinator, &member_id);
    }
    ensure_loaded(kafka, &id).await;
    if (kafka.other_members.0)(&id) {
        // Both protocols' members would consume the same queues twice.
        tracing::info!(group = %id, "refused a Kafka member: the group has live RocketMQ consumers");
        return error_join(ResponseError::InconsistentGroupProtocol, &member_id);
    }
    let k = &kafka.node.config.kafka;
    let session = i64::from(req.session_timeout_ms);
    let min = i64::try_from(k.group_min_session_timeout.as_millis()).unwrap_or(i64::MAX);
    let max = i64::try_from(k.group_max_session_timeout.as_millis()).unwrap_or(i64::MAX);
    if session < min || session > max {
        return error_join(ResponseError::InvalidSessionTimeout, &member_id);
    }
    let rebalance = if ctx.version >= 1 {
        i64::from(req.rebalance_timeout_ms)
    } else {
        session
    };
    let protocols: Vec<(String, Bytes)> = req
        .protocols
        .iter()
        .map(|p| (p.name.as_str().to_owned(), p.metadata.clone()))
        .collect();
    let protocol_type = req.protocol_type.as_str().to_owned();
    let instance = req
        .group_instance_id
        .as_ref()
        .map(|s| s.as_str().to_owned());
    let now = kafka.node.clock.now_ms();
    let rx = {
        let mut groups = kafka.groups.groups.lock();
        let g = groups.entry(id.clone()).or_insert_with(Group::new);
        if protocols.is_empty()
            || (g.state != State::Empty
                && (g.protocol_type.as_deref() != Some(protocol_type.as_str())
                    || !protocols.iter().any(|(p, _)| {
                        g.members
                            .values()
                            .all(|m| m.protocols.iter().any(|(q, _)| q == p))
                    })))
        {
            return error_join(ResponseError::InconsistentGroupProtocol, &member_id);
        }
        let mut member_id = member_id;
        if member_id.is_empty() {
            member_id = new_member_id(&ctx.client_id);
            if let Some(inst) = &instance {
                // A static member back under a new member id takes its old place.
                let old = g
                    .members
                    .iter()
                    .find(|(_, m)| m.instance_id.as_deref() == Some(inst.as_str()))
                    .map(|(k, _)| k.clone());
                if let Some(old) = old
                    && let Some(mut m) = g.members.remove(&old)
                {
                    if let Some(w) = m.join_waiter.take() {
                        let _ = w.send(error_join(ResponseError::FencedInstanceId, &old));
                    }
                    if let Some(w) = m.sync_waiter.take() {
                        let _ = w.send(error_sync(ResponseError::FencedInstanceId));
                    }
                    let unchanged = m.protocols == protocols;
                    m.protocols = protocols.clone();
                    m.last_seen_ms = now;
                    g.members.insert(member_id.clone(), m);
                    if g.leader.as_deref() == Some(old.as_str()) {
                        g.leader = Some(member_id.clone());
                    }
                    if g.state == State::Stable
                        && unchanged
                        && g.leader.as_deref() != Some(member_id.as_str())
                    {
                        let mut r = JoinGroupResponse::default();
                        r.generation_id = g.generation;
                        r.protocol_type = g.protocol_type.clone().map(sb);
                        r.protocol_name = g.protocol.clone().map(sb);
                        r.leader = sb(g.leader.clone().unwrap_or_default());
                        r.member_id = sb(member_id);
                        return r;
                    }
                }
            } else if ctx.version >= 4 {
                g.pending.insert(member_id.clone(), now);
                return error_join(ResponseError::MemberIdRequired, &member_id);
            }
        } else if !g.members.contains_key(&member_id) && g.pending.remove(&member_id).is_none() {
            return error_join(ResponseError::UnknownMemberId, &member_id);
        }
        let existing = g.members.contains_key(&member_id);
        let unchanged = existing
            && g.members
                .get(&member_id)
                .is_some_and(|m| m.protocols == protocols);
        if !existing {
            let seq = g.next_join_seq;
            g.next_join_seq += 1;
            g.members.insert(
                member_id.clone(),
                Member {
                    instance_id: instance.clone(),
                    client_id: ctx.client_id.clone(),
                    client_host: format!("/{}", ctx.conn.peer.ip()),
                    session_timeout_ms: session,
                    rebalance_timeout_ms: rebalance,
                    protocols: protocols.clone(),
                    assignment: Bytes::new(),
                    join_waiter: None,
                    sync_waiter: None,
                    last_seen_ms: now,
                    joined_seq: seq,
                },
            );
        }
        let is_leader = g.leader.as_deref() == Some(member_id.as_str());
        match g.state {
            State::Stable | State::CompletingRebalance if unchanged && !is_leader => {
                let mut r = JoinGroupResponse::default();
                r.generation_id = g.generation;
                r.protocol_type = g.protocol_type.clone().map(sb);
                r.protocol_name = g.protocol.clone().map(sb);
                r.leader = sb(g.leader.clone().unwrap_or_default());
                r.member_id = sb(member_id);
                return r;
            }
            State::PreparingRebalance => {}
            _ => {
                g.protocol_type = Some(protocol_type.clone());
                prepare_rebalance(kafka, &id, g);
            }
        }
        if g.protocol_type.is_none() {
            g.protocol_type = Some(protocol_type);
        }
        let (tx, rx) = oneshot::channel();
        if let Some(m) = g.members.get_mut(&member_id) {
            m.protocols = protocols;
            m.session_timeout_ms = session;
            m.rebalance_timeout_ms = rebalance;
            m.last_seen_ms = now;
            if let Some(old) = m.join_waiter.replace(tx) {
                let _ = old.send(error_join(ResponseError::RebalanceInProgress, &member_id));
            }
        }
        maybe_complete_join(kafka, g);
        rx
    };
    match rx.await {
        Ok(r) => r,
        Err(_) => error_join(ResponseError::CoordinatorNotAvailable, ""),
    }
}

/// SyncGroup.
pub(crate) async fn sync(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: SyncGroupRequest,
) -> SyncGroupResponse {
    let id = req.group_id.as_str().to_owned();
    if !coordinates(kafka, &id) {
        return error_sync(ResponseError::NotCoordinator);
    }
    let member_id = req.member_id.as_str().to_owned();
    ensure_loaded(kafka, &id).await;
    let now = kafka.node.clock.now_ms();
    let rx = {
        let mut groups = kafka.groups.groups.lock();
        let Some(g) = groups.get_mut(&id) else {
            return error_sync(ResponseError::UnknownMemberId);
        };
        if !g.members.contains_key(&member_id) {
            return error_sync(ResponseError::UnknownMemberId);
        }
        if req.generation_id != g.generation {
            return error_sync(ResponseError::IllegalGeneration);
        }
        if req
            .protocol_type
            .as_ref()
            .is_some_and(|p| g.protocol_type.as_deref() != Some(p.as_str()))
            || req
                .protocol_name
                .as_ref()
                .is_some_and(|p| g.protocol.as_deref() != Some(p.as_str()))
        {
            return error_sync(ResponseError::InconsistentGroupProtocol);
        }
        match g.state {
            State::PreparingRebalance | State::Empty => {
                return error_sync(ResponseError::RebalanceInProgress);
            }
            State::Stable => {
                let mut r = SyncGroupResponse::default();
                r.protocol_type = g.protocol_type.clone().map(sb);
                r.protocol_name = g.protocol.clone().map(sb);
                r.assignment = g
                    .members
                    .get(&member_id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                return r;
            }
            State::CompletingRebalance => {}
        }
        let (tx, rx) = oneshot::channel();
        if let Some(m) = g.members.get_mut(&member_id) {
            m.last_seen_ms = now;
            m.sync_waiter = Some(tx);
        }
        if g.leader.as_deref() == Some(member_id.as_str()) {
            let given: HashMap<String, Bytes> = req
                .assignments
                .iter()
                .map(|a| (a.member_id.as_str().to_owned(), a.assignment.clone()))
                .collect();
            for (mid, m) in &mut g.members {
                m.assignment = given.get(mid).cloned().unwrap_or_default();
            }
            g.state = State::Stable;
            save(kafka, &id, g);
            for m in g.members.values_mut() {
                if let Some(w) = m.sync_waiter.take() {
                    let mut r = SyncGroupResponse::default();
                    r.protocol_type = g.protocol_type.clone().map(sb);
                    r.protocol_name = g.protocol.clone().map(sb);
                    r.assignment = m.assignment.clone();
                    let _ = w.send(r);
                }
            }
        }
        rx
    };
    match rx.await {
        Ok(r) => r,
        Err(_) => error_sync(ResponseError::RebalanceInProgress),
    }
}

/// Heartbeat.
pub(crate) async fn heartbeat(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: HeartbeatRequest,
) -> HeartbeatResponse {
    let mut r = HeartbeatResponse::default();
    let id = req.group_id.as_str();
    if !coordinates(kafka, id) {
        r.error_code = ResponseError::NotCoordinator.code();
        return r;
    }
    ensure_loaded(kafka, id).await;
    let now = kafka.node.clock.now_ms();
    let mut groups = kafka.groups.groups.lock();
    let code = match groups.get_mut(id) {
        None => ResponseError::UnknownMemberId.code(),
        Some(g) => match g.members.get_mut(req.member_id.as_str()) {
            None => ResponseError::UnknownMemberId.code(),
            Some(_) if req.generation_id != g.generation => ResponseError::IllegalGeneration.code(),
            Some(m) => {
                m.last_seen_ms = now;
                if g.state == State::PreparingRebalance {
                    ResponseError::RebalanceInProgress.code()
                } else {
                    0
                }
            }
        },
    };
    r.error_code = code;
    r
}

/// Removes `member` (by id, or by instance id when the id is empty); false if unknown.
fn remove_member(
    kafka: &Arc<Kafka>,
    id: &str,
    g: &mut Group,
    member: &str,
    instance: Option<&str>,
) -> bool {
    let key = if member.is_empty() {
        instance.and_then(|inst| {
            g.members
                .iter()
                .find(|(_, m)| m.instance_id.as_deref() == Some(inst))
                .map(|(k, _)| k.clone())
        })
    } else {
        Some(member.to_owned())
    };
    let Some(key) = key else { return false };
    let Some(mut m) = g.members.remove(&key) else {
        return g.pending.remove(&key).is_some();
    };
    if let Some(w) = m.join_waiter.take() {
        let _ = w.send(error_join(ResponseError::UnknownMemberId, &key));
    }
    if let Some(w) = m.sync_waiter.take() {
        let _ = w.send(error_sync(ResponseError::UnknownMemberId));
    }
    if g.members.is_empty() {
        g.state = State::Empty;
        g.generation += 1;
        g.leader = None;
        g.protocol = None;
        g.rebalance_seq += 1;
        save(kafka, id, g);
    } else if g.state == State::PreparingRebalance {
        maybe_complete_join(kafka, g);
    } else {
        prepare_rebalance(kafka, id, g);
    }
    true
}

/// LeaveGroup.
pub(crate) async fn leave(
    kafka: &Arc<Kafka>,
    ctx: &Ctx,
    req: LeaveGroupRequest,
) -> LeaveGroupResponse {
    let mut r = LeaveGroupResponse::default();
    let id = req.group_id.as_str().to_owned();
    if !coordinates(kafka, &id) {
        r.error_code = ResponseError::NotCoordinator.code();
        return r;
    }
    ensure_loaded(kafka, &id).await;
    let mut groups = kafka.groups.groups.lock();
    let Some(g) = groups.get_mut(&id) else {
        r.error_code = ResponseError::UnknownMemberId.code();
        return r;
    };
    if ctx.version < 3 {
        if !remove_member(kafka, &id, g, req.member_id.as_str(), None) {
            r.error_code = ResponseError::UnknownMemberId.code();
        }
        return r;
    }
    for m in &req.members {
        let mut mr = MemberResponse::default();
        mr.member_id = m.member_id.clone();
        mr.group_instance_id = m.group_instance_id.clone();
        let inst = m.group_instance_id.as_ref().map(|s| s.as_str());
        if !remove_member(kafka, &id, g, m.member_id.as_str(), inst) {
            mr.error_code = ResponseError::UnknownMemberId.code();
        }
        r.members.push(mr);
    }
    r
}

/// Removes members whose session expired; drops groups of shards no longer owned here.
/// Run every few hundred milliseconds by [`run_expiry`].
fn expire(kafka: &Arc<Kafka>) {
    kafka.groups.forget_unowned(kafka);
    let now = kafka.node.clock.now_ms();
    let mut groups = kafka.groups.groups.lock();
    for (id, g) in groups.iter_mut() {
        let expired: Vec<String> = g
            .members
            .iter()
            .filter(|(_, m)| m.join_waiter.is_none() && now - m.last_seen_ms > m.session_timeout_ms)
            .map(|(k, _)| k.clone())
            .collect();
        for m in expired {
            tracing::debug!(group = %id, member = %m, "kafka group member's session expired");
            remove_member(kafka, id, g, &m, None);
        }
        let rebalance_ms = g
            .members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0);
        g.pending
            .retain(|_, at| now - *at <= rebalance_ms.max(30_000));
    }
}

/// The expiry loop, until the node stops: group members every 250 ms, idempotent
/// producers not heard from within `kafka.producer_id_expiration` every minute (here and
/// in meta).
pub(crate) async fn run_expiry(kafka: Arc<Kafka>) {
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            () = kafka.node.clock.sleep(Duration::from_millis(250)) => {}
            () = kafka.node.cancel.cancelled() => return,
        }
        expire(&kafka);
        ticks += 1;
        if ticks.is_multiple_of(240) {
            let keep = crate::config::millis(kafka.node.config.kafka.producer_id_expiration);
            let before = kafka.node.clock.now_ms().saturating_sub(keep);
            kafka.producers.expire(before);
            if let Err(e) = kafka.node.meta.expire_producer_batches(before).await {
                tracing::debug!(error = %e, "cannot expire Kafka producers in meta; will retry");
            }
        }
    }
}

/// ListGroups: the groups coordinated by the shard this connection is for (every shard
/// owned here on the bootstrap port), Kafka's live ones and those with only offsets or a
/// RocketMQ subscription group.
pub(crate) async fn list(
    kafka: &Arc<Kafka>,
    ctx: &Ctx,
    req: ListGroupsRequest,
) -> ListGroupsResponse {
    let shards = kafka.shards();
    let mine = |g: &str| {
        let s = coordinator_shard(g, shards);
        match ctx.conn.shard {
            Some(conn) => conn == s && kafka.node.shards.epoch(s).is_some(),
            None => kafka.node.shards.epoch(s).is_some(),
        }
    };
    let mut listed: BTreeMap<String, (String, String)> = BTreeMap::new();
    if let Ok(rmq) = kafka.node.meta.list_groups().await {
        for g in rmq {
            let name = g.group.to_string();
            if mine(&name) {
                listed.insert(name, ("Empty".into(), String::new()));
            }
        }
    }
    for (name, g) in kafka.groups.groups.lock().iter() {
        if mine(name) && !g.is_phantom() {
            listed.insert(
                name.clone(),
                (
                    g.state.name().into(),
                    g.protocol_type.clone().unwrap_or_default(),
                ),
            );
        }
    }
    let mut r = ListGroupsResponse::default();
    for (name, (state, ptype)) in listed {
        if !req.states_filter.is_empty()
            && !req
                .states_filter
                .iter()
                .any(|s| s.as_str().eq_ignore_ascii_case(&state))
        {
            continue;
        }
        let mut lg = ListedGroup::default();
        lg.group_id = GroupId(sb(name));
        lg.protocol_type = sb(ptype);
        lg.group_state = sb(state);
        lg.group_type = sb("classic");
        r.groups.push(lg);
    }
    r
}

/// DescribeGroups.
pub(crate) async fn describe(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let mut r = DescribeGroupsResponse::default();
    for gid in &req.groups {
        if coordinates(kafka, gid.as_str()) {
            ensure_loaded(kafka, gid.as_str()).await;
        }
    }
    let groups = kafka.groups.groups.lock();
    for gid in &req.groups {
        let name = gid.as_str();
        let mut d = DescribedGroup::default();
        d.group_id = gid.clone();
        d.authorized_operations = i32::MIN;
        if !coordinates(kafka, name) {
            d.error_code = ResponseError::NotCoordinator.code();
            r.groups.push(d);
            continue;
        }
        match groups.get(name).filter(|g| !g.is_phantom()) {
            None => d.group_state = sb("Dead"),
            Some(g) => {
                d.group_state = sb(g.state.name());
                d.protocol_type = sb(g.protocol_type.clone().unwrap_or_default());
                d.protocol_data = sb(g.protocol.clone().unwrap_or_default());
                let proto = g.protocol.clone().unwrap_or_default();
                for (id, m) in &g.members {
                    let mut dm = DescribedGroupMember::default();
                    dm.member_id = sb(id.clone());
                    dm.group_instance_id = m.instance_id.clone().map(sb);
                    dm.client_id = sb(m.client_id.clone());
                    dm.client_host = sb(m.client_host.clone());
                    dm.member_metadata = m
                        .protocols
                        .iter()
                        .find(|(p, _)| *p == proto)
                        .map(|(_, md)| md.clone())
                        .unwrap_or_default();
                    dm.member_assignment = m.assignment.clone();
                    d.members.push(dm);
                }
            }
        }
        r.groups.push(d);
    }
    r
}

/// DeleteGroups: only groups without members; their offsets go from every shard.
pub(crate) async fn delete(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut r = DeleteGroupsResponse::default();
    for gid in req.groups_names {
        let name = gid.as_str().to_owned();
        let mut d = DeletableGroupResult::default();
        d.group_id = gid.clone();
        if !coordinates(kafka, &name) {
            d.error_code = ResponseError::NotCoordinator.code();
            r.results.push(d);
            continue;
        }
        ensure_loaded(kafka, &name).await;
        let live = kafka
            .groups
            .groups
            .lock()
            .get(&name)
            .filter(|g| !g.is_phantom())
            .map(|g| !g.members.is_empty());
        if live == Some(true) {
            d.error_code = ResponseError::NonEmptyGroup.code();
            r.results.push(d);
            continue;
        }
        let group = ConsumerGroup::new(name.clone());
        let mut found = live.is_some();
        let mut failed = false;
        for s in 0..kafka.shards() {
            match kafka
                .node
                .meta
                .delete_group_offsets(&group, ShardId(s))
                .await
            {
                Ok(n) => found |= n > 0,
                Err(_) => failed = true,
            }
        }
        kafka.groups.groups.lock().remove(&name);
        if kafka.node.meta.delete_kv(GROUPS_NS, &name).await.is_err() {
            failed = true;
        }
        d.error_code = if failed {
            ResponseError::CoordinatorNotAvailable.code()
        } else if found {
            0
        } else {
            ResponseError::GroupIdNotFound.code()
        };
        r.results.push(d);
    }
    r
}

/// For offset commits: whether `member` of `generation` may commit to `group` now.
pub(crate) async fn check_commit(kafka: &Kafka, group: &str, member: &str, generation: i32) -> i16 {
    if !coordinates(kafka, group) {
        return ResponseError::NotCoordinator.code();
    }
    ensure_loaded(kafka, group).await;
    let groups = kafka.groups.groups.lock();
    let Some(g) = groups.get(group) else {
        // No live group: only a standalone commit (generation -1) is allowed.
        return if generation < 0 {
            0
        } else {
            ResponseError::IllegalGeneration.code()
        };
    };
    if generation < 0 && member.is_empty() {
        return if g.members.is_empty() {
            0
        } else {
            ResponseError::UnknownMemberId.code()
        };
    }
    if !g.members.contains_key(member) {
        return ResponseError::UnknownMemberId.code();
    }
    if generation != g.generation {
        return ResponseError::IllegalGeneration.code();
    }
    if g.state == State::CompletingRebalance {
        return ResponseError::RebalanceInProgress.code();
    }
    0
}
