//! The node's group commit: one open segment buffer for every shard the node owns.
//!
//! [`Writer::append`] is synchronous and non-blocking: callers invoke it in request arrival
//! order; under one short lock it assigns queue offsets and commit-log handles and adds the
//! encoded records to the open buffer. A flusher task (`flusher.rs`) seals the buffer on size
//! or linger, uploads it as one object (parallel uploads, bounded), commits every section in
//! meta strictly in seal order, then fills the caches, advances [`QueueHeads`] and resolves
//! the [`AppendTicket`]s of that segment.
//!
//! Metadata effects ([`Writer::append_with`], e.g. a transactional half message's pending
//! row) travel with their shard's section of the open buffer and are committed in the same
//! meta transaction as that section, so they land exactly when their records do.
//!
//! Failure model: when a shard's upload or commit fails, the shard is marked failed and every
//! later segment's section of that shard fails too (it was built on offsets that are now
//! wrong); appends fail with the same error ([`SegmentError::Fenced`] after a lost lease,
//! otherwise the upload or meta error) until the gateway calls [`Writer::open_shard`] again
//! with a fresh [`ShardState`] from meta. Other shards are not affected.

mod flusher;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use stratus_compat::message::record::MessageExt;
use stratus_compat::types::{CommitLogOffset, QueueId, QueueOffset, Topic};
use stratus_meta::{
    Epoch, KeyIndexEntry, NodeId, SegmentCatalog, SegmentEffect, ShardId, ShardState,
};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;

use crate::SegmentError;
use crate::cache::Cache;
use crate::clock::Clock;
use crate::format::{EntryMeta, SegmentBuilder};
use crate::heads::QueueHeads;
use crate::store::SegmentStore;
use crate::{handle, keys, metrics, paths};

/// Group-commit settings.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Seal the open buffer when it reaches this many record bytes.
    pub max_segment_bytes: usize,
    /// Least time between two seals: a buffer is sealed at once after a quiet linger, else
    /// when the current linger ends (so at most one object per linger, by time).
    pub linger: Duration,
    /// Bytes appended but not yet durable; above it appends fail with [`SegmentError::Busy`].
    pub max_buffered_bytes: usize,
    /// Segment uploads in flight at once.
    pub upload_concurrency: usize,
    /// [`AppendTicket::durable`] gives up with [`SegmentError::Timeout`] after this.
    pub durable_timeout: Duration,
    /// Prefix of every object key (e.g. `cluster-a/`); empty for none.
    pub key_prefix: String,
    /// Attempts of a meta commit that fails with a retryable error.
    pub meta_attempts: u32,
    /// Pause between meta commit attempts.
    pub meta_backoff: Duration,
    /// Index each record's keys ([`crate::keys`]) with its section.
    pub index_keys: bool,
}

impl Default for WriterConfig {
    fn default() -> Self {
        Self {
            max_segment_bytes: 4 << 20,
            linger: Duration::from_millis(5),
            max_buffered_bytes: 64 << 20,
            upload_concurrency: 4,
            durable_timeout: Duration::from_secs(10),
            key_prefix: String::new(),
            meta_attempts: 3,
            meta_backoff: Duration::from_millis(100),
            index_keys: true,
        }
    }
}

/// One message to store, as the send processor prepared it.
#[derive(Debug, Clone)]
pub struct MessageToStore {
    /// Topic (after retry/delay/transaction rewriting).
    pub topic: Topic,
    /// Queue id.
    pub queue_id: QueueId,
    /// User flag.
    pub flag: i32,
    /// MessageSysFlag.
    pub sys_flag: i32,
    /// Client send time, ms.
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// This node's advertised address.
    pub store_host: SocketAddr,
    /// Previous delivery failures.
    pub reconsume_times: i32,
    /// Half-message handle of a committed transactional message, else 0.
    pub prepared_transaction_offset: i64,
    /// Body as stored.
    pub body: Bytes,
    /// Properties string (`docs/remoting-protocol.md#properties`).
    pub properties: String,
    /// Tags hash code (0 without a tag).
    pub tags_code: i64,
}

type Outcome = watch::Receiver<Option<Result<(), SegmentError>>>;

/// The result of an append: offsets are assigned; durability is awaited with
/// [`AppendTicket::durable`].
#[derive(Debug)]
pub struct AppendTicket {
    /// Shard.
    pub shard: ShardId,
    /// Queue of the messages.
    pub queue_id: QueueId,
    /// Queue offset of the first message.
    pub first_offset: QueueOffset,
    /// Commit-log handle of each message, in order.
    pub handles: Vec<CommitLogOffset>,
    /// Store time given to every message, ms.
    pub store_timestamp: i64,
    outcome: Outcome,
    timeout: Duration,
    clock: Arc<dyn Clock>,
}

impl AppendTicket {
    /// Waits until the messages are durable: uploaded and committed in meta.
    ///
    /// # Errors
    /// The segment's failure ([`SegmentError::Fenced`], object store or meta errors),
    /// [`SegmentError::Timeout`] after the configured durable timeout (the messages may still
    /// become durable later), [`SegmentError::ShuttingDown`] if the writer stopped first.
    pub async fn durable(mut self) -> Result<(), SegmentError> {
        let timeout = self.timeout;
        let sleep = self.clock.sleep(timeout);
        tokio::select! {
            r = self.outcome.wait_for(Option::is_some) => match r {
                Ok(v) => v.clone().unwrap_or(Err(SegmentError::ShuttingDown)),
                Err(_) => Err(SegmentError::ShuttingDown),
            },
            () = sleep => Err(SegmentError::Timeout(timeout)),
        }
    }
}

/// A shard's state as the writer sees it.
#[derive(Debug, Clone)]
pub enum ShardStatus {
    /// Accepting appends under `epoch`.
    Open {
        /// Lease epoch.
        epoch: Epoch,
    },
    /// A commit failed; appends fail with this error until the shard is re-opened.
    Failed(SegmentError),
}

/// The node's writer. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Writer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: WriterConfig,
    store: SegmentStore,
    meta: Arc<dyn SegmentCatalog>,
    clock: Arc<dyn Clock>,
    heads: Arc<QueueHeads>,
    cache: Arc<Cache>,
    node: NodeId,
    /// Random per start: makes object keys unique across restarts.
    incarnation: String,
    state: Mutex<State>,
    /// Wakes the flusher: first append into an empty buffer, buffer full, flush, close.
    wake: Notify,
    /// Highest segment sequence whose outcome is known (segments finish in order).
    done_seq: watch::Sender<u64>,
    /// Stops the flusher; it drains (seals, uploads, commits) what was appended first.
    cancel: CancellationToken,
    /// Cancelled when the flusher has exited.
    stopped: CancellationToken,
    tracker: TaskTracker,
}

#[derive(Debug, Default)]
struct State {
    shards: HashMap<ShardId, ShardWriter>,
    open: OpenSegment,
    /// Swapped-out buffers waiting for the flusher, in seal order.
    sealed: std::collections::VecDeque<PendingSegment>,
    /// Sequence of the next segment (first is 1).
    next_seq: u64,
    next_generation: u64,
    /// Record bytes appended and not yet durable (or failed).
    buffered: usize,
    failures: u64,
    last_failure: Option<SegmentError>,
    /// No more appends (shutting down).
    closing: bool,
}

#[derive(Debug)]
struct ShardWriter {
    epoch: Epoch,
    /// Distinguishes successive `open_shard` calls, so a stale segment never touches a
    /// re-opened shard.
    generation: u64,
    status: Result<(), SegmentError>,
    commit_log_next: u64,
    next_offsets: HashMap<Topic, HashMap<QueueId, QueueOffset>>,
}

#[derive(Debug, Default)]
struct OpenSegment {
    builder: SegmentBuilder,
    waiters: HashMap<ShardId, Waiter>,
}

#[derive(Debug)]
struct Waiter {
    generation: u64,
    tx: watch::Sender<Option<Result<(), SegmentError>>>,
}

/// A swapped-out buffer on its way to the object store.
#[derive(Debug)]
struct PendingSegment {
    seq: u64,
    builder: SegmentBuilder,
    waiters: HashMap<ShardId, Waiter>,
}

impl State {
    /// Moves the open buffer to the sealed queue if it holds anything.
    fn swap_open(&mut self) {
        if self.open.builder.is_empty() {
            return;
        }
        let open = std::mem::take(&mut self.open);
        self.next_seq += 1;
        self.sealed.push_back(PendingSegment {
            seq: self.next_seq,
            builder: open.builder,
            waiters: open.waiters,
        });
    }

    /// Drops a shard's part of the open buffer, failing its waiters with `err`.
    fn drop_open_section(&mut self, shard: ShardId, err: &SegmentError) {
        let n = self.open.builder.remove_section(shard);
        self.release(n);
        if let Some(w) = self.open.waiters.remove(&shard) {
            w.tx.send_replace(Some(Err(err.clone())));
        }
    }

    fn release(&mut self, bytes: usize) {
        self.buffered = self.buffered.saturating_sub(bytes);
        metrics::BUFFERED_BYTES.set(i64::try_from(self.buffered).unwrap_or(i64::MAX));
    }
}

/// Byte positions of QUEUEOFFSET and PHYSICALOFFSET in a record
/// (`docs/remoting-protocol.md#message-records`; the same in V1 and V2 and for both host
/// forms, since they precede every variable-length field).
const QUEUE_OFFSET_POS: usize = 20;
const PHYSICAL_OFFSET_POS: usize = 28;

impl Writer {
    /// Starts the writer and its flusher task (owned by the writer's tracker, stopped by
    /// `cancel`; on cancellation it first drains what was appended).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        config: WriterConfig,
        store: SegmentStore,
        meta: Arc<dyn SegmentCatalog>,
        clock: Arc<dyn Clock>,
        heads: Arc<QueueHeads>,
        cache: Arc<Cache>,
        node: NodeId,
        cancel: CancellationToken,
    ) -> Self {
        let incarnation = paths::new_incarnation(clock.now_ms());
        let inner = Arc::new(Inner {
            config,
            store,
            meta,
            clock,
            heads,
            cache,
            node,
            incarnation,
            state: Mutex::default(),
            wake: Notify::new(),
            done_seq: watch::channel(0).0,
            cancel,
            stopped: CancellationToken::new(),
            tracker: TaskTracker::new(),
        });
        inner.tracker.spawn(flusher::run(inner.clone()));
        Self { inner }
    }

    /// This writer's incarnation (part of every key it writes).
    pub fn incarnation(&self) -> &str {
        &self.inner.incarnation
    }

    /// Starts accepting appends for `shard` under `epoch`, continuing from `state` (the
    /// shard's commit-log end and queue max offsets in meta), and loads its queue heads.
    /// Re-opening an open shard first closes it (its pending appends fail).
    pub fn open_shard(&self, shard: ShardId, epoch: Epoch, state: ShardState) {
        let commit_log_next = u64::try_from(state.commit_log_end.0).unwrap_or_else(|_| {
            warn!(%shard, end = state.commit_log_end.0, "negative commit-log end in meta");
            0
        });
        let mut next_offsets: HashMap<Topic, HashMap<QueueId, QueueOffset>> = HashMap::new();
        for r in &state.queues {
            next_offsets
                .entry(r.queue.topic.clone())
                .or_default()
                .insert(r.queue.queue_id, r.max_offset);
        }
        let mut st = self.inner.state.lock();
        if st.shards.remove(&shard).is_some() {
            st.drop_open_section(shard, &SegmentError::NotOwned(shard));
        }
        st.next_generation += 1;
        let generation = st.next_generation;
        st.shards.insert(
            shard,
            ShardWriter {
                epoch,
                generation,
                status: Ok(()),
                commit_log_next,
                next_offsets,
            },
        );
        // Under the state lock, so a racing commit of the old generation cannot interleave.
        self.inner.heads.remove_shard(shard);
        self.inner.heads.load(&state);
        self.inner.cache.forget_shard(shard);
    }

    /// Stops accepting appends for `shard`; its appends not yet sealed fail with
    /// [`SegmentError::NotOwned`], and sealed ones fail unless already committing.
    pub fn close_shard(&self, shard: ShardId) {
        let mut st = self.inner.state.lock();
        if st.shards.remove(&shard).is_some() {
            st.drop_open_section(shard, &SegmentError::NotOwned(shard));
        }
        self.inner.heads.remove_shard(shard);
        self.inner.cache.forget_shard(shard);
    }

    /// The writer's view of a shard; `None` when not open here.
    pub fn shard_status(&self, shard: ShardId) -> Option<ShardStatus> {
        let st = self.inner.state.lock();
        let s = st.shards.get(&shard)?;
        Some(match &s.status {
            Ok(()) => ShardStatus::Open { epoch: s.epoch },
            Err(e) => ShardStatus::Failed(e.clone()),
        })
    }

    /// Appends messages of one queue to the open buffer, assigning consecutive queue
    /// offsets and commit-log handles. Synchronous and non-blocking: call it in request
    /// arrival order; await durability on the returned ticket.
    ///
    /// # Errors
    /// [`SegmentError::NotOwned`] if the shard is not open here, the shard's failure if one
    /// of its commits failed ([`SegmentError::Fenced`] after a lost lease),
    /// [`SegmentError::Busy`] when the write buffer is full, [`SegmentError::ShuttingDown`].
    pub fn append(
        &self,
        shard: ShardId,
        messages: Vec<MessageToStore>,
    ) -> Result<AppendTicket, SegmentError> {
        self.append_with(shard, messages, |_, _, _| Vec::new())
    }

    /// Like `append`, and `effects` is called (under the append lock, once) with the first queue
    /// offset, the handles and the store timestamp assigned to `messages`; the effects it returns
    /// are committed in meta together with the section holding these messages.
    ///
    /// The effects are carried in the open buffer's section of `shard`, after those of
    /// earlier appends to it, and become that section's [`SegmentCommit::effects`]: they are
    /// applied exactly when the ticket's messages are committed (before
    /// [`AppendTicket::durable`] resolves `Ok`), and never when the append fails. Each
    /// effect must name `shard` (meta refuses the section otherwise, failing the shard).
    ///
    /// `effects` runs while the writer's lock is held, after every check passed and before
    /// anything is appended: keep it short and do not call the writer from it; should it
    /// panic, nothing is appended. It is not called when the append fails, nor for an empty
    /// `messages` (no section is committed then).
    ///
    /// # Errors
    /// As [`Writer::append`].
    ///
    /// [`SegmentCommit::effects`]: stratus_meta::SegmentCommit::effects
    pub fn append_with(
        &self,
        shard: ShardId,
        messages: Vec<MessageToStore>,
        effects: impl FnOnce(QueueOffset, &[CommitLogOffset], i64) -> Vec<SegmentEffect>,
    ) -> Result<AppendTicket, SegmentError> {
        let inner = &self.inner;
        let now = inner.clock.now_ms();
        if messages.is_empty() {
            return self.empty_ticket(shard, now);
        }
        let queue_id = messages.first().map_or(QueueId(0), |m| m.queue_id);
        // Encode outside the lock with placeholder offsets; they are patched in below.
        let mut encoded = Vec::with_capacity(messages.len());
        let mut total = 0usize;
        let mut metas = Vec::with_capacity(messages.len());
        let mut key_hashes: Vec<Vec<(i64, Option<i64>)>> = Vec::with_capacity(messages.len());
        for m in messages {
            key_hashes.push(if inner.config.index_keys {
                keys::record_key_entries(m.topic.as_str(), &m.properties)
            } else {
                Vec::new()
            });
            let mut buf = BytesMut::new();
            let record = MessageExt {
                queue_id: m.queue_id.0,
                flag: m.flag,
                queue_offset: 0,
                commit_log_offset: 0,
                sys_flag: m.sys_flag,
                born_timestamp: m.born_timestamp,
                born_host: m.born_host,
                store_timestamp: now,
                store_host: m.store_host,
                reconsume_times: m.reconsume_times,
                prepared_transaction_offset: m.prepared_transaction_offset,
                body: m.body,
                topic: m.topic.as_str().to_owned(),
                properties: m.properties,
            };
            record.encode(&mut buf);
            total += buf.len();
            encoded.push(buf);
            metas.push((m.topic, m.queue_id, m.tags_code));
        }

        let mut st = inner.state.lock();
        if st.closing {
            return Err(SegmentError::ShuttingDown);
        }
        let Some(sw) = st.shards.get(&shard) else {
            return Err(SegmentError::NotOwned(shard));
        };
        if let Err(e) = &sw.status {
            return Err(e.clone());
        }
        let generation = sw.generation;
        let section_room = (u32::MAX as usize).saturating_sub(st.open.builder.section_len(shard));
        if st.buffered + total > inner.config.max_buffered_bytes || total > section_room {
            return Err(SegmentError::Busy);
        }
        // 1. Assign offsets and handles without changing anything, so that `effects` runs
        //    before the append takes effect: should it panic, nothing was appended. Per queue
        //    of the batch (usually one), the next offset to give.
        let mut cursors: Vec<(&Topic, QueueId, QueueOffset)> = Vec::new();
        let mut assigned = Vec::with_capacity(encoded.len());
        let mut handles = Vec::with_capacity(encoded.len());
        let mut local = sw.commit_log_next;
        for (buf, (topic, qid, _)) in encoded.iter().zip(&metas) {
            let offset = match cursors.iter_mut().find(|(t, q, _)| *t == topic && q == qid) {
                Some((_, _, next)) => std::mem::replace(next, next.add(1)),
                None => {
                    let next = sw
                        .next_offsets
                        .get(topic)
                        .and_then(|m| m.get(qid))
                        .copied()
                        .unwrap_or_default();
                    cursors.push((topic, *qid, next.add(1)));
                    next
                }
            };
            assigned.push((offset, local));
            handles.push(handle::encode(shard, local));
            local += buf.len() as u64;
        }
        let first_offset = assigned.first().map(|a| a.0).unwrap_or_default();
        let effects = effects(first_offset, &handles, now);

        // 2. Apply: advance the shard's offsets, patch and push the records and the effects.
        let State { shards, open, .. } = &mut *st;
        let sw = shards
            .get_mut(&shard)
            .expect("checked above under the same lock");
        for (topic, qid, next) in cursors {
            match sw.next_offsets.get_mut(topic) {
                Some(m) => {
                    m.insert(qid, next);
                }
                None => {
                    sw.next_offsets
                        .entry(topic.clone())
                        .or_default()
                        .insert(qid, next);
                }
            }
        }
        sw.commit_log_next = local;
        let was_empty = open.builder.is_empty();
        let mut meta: Option<EntryMeta> = None;
        for ((mut buf, (topic, qid, tags_code)), (&(offset, local), h)) in encoded
            .into_iter()
            .zip(metas)
            .zip(assigned.iter().zip(&handles))
        {
            buf[QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8].copy_from_slice(&offset.0.to_be_bytes());
            buf[PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8].copy_from_slice(&h.0.to_be_bytes());
            let same_queue = matches!(&meta, Some(m) if m.topic == topic && m.queue_id == qid);
            if !same_queue {
                meta = Some(EntryMeta {
                    topic,
                    queue_id: qid,
                    queue_offset: offset,
                    tags_code,
                    store_ts: now,
                });
            }
            let m = meta.as_mut().expect("set just above");
            m.queue_offset = offset;
            m.tags_code = tags_code;
            open.builder.push(shard, local, buf.freeze(), m);
        }
        let entries = key_hashes
            .iter()
            .zip(&assigned)
            .flat_map(|(hashes, &(_, local))| {
                hashes
                    .iter()
                    .map(move |&(key_hash, id_time)| KeyIndexEntry {
                        key_hash,
                        log_offset: CommitLogOffset(i64::try_from(local).unwrap_or(i64::MAX)),
                        store_ts: now,
                        id_time,
                    })
            });
        open.builder.push_keys(shard, entries);
        if !effects.is_empty() {
            let pushed = open.builder.push_effects(shard, effects);
            debug_assert!(pushed, "the section holds the records pushed above");
        }
        let outcome = open
            .waiters
            .entry(shard)
            .or_insert_with(|| Waiter {
                generation,
                tx: watch::channel(None).0,
            })
            .tx
            .subscribe();
        st.buffered += total;
        metrics::BUFFERED_BYTES.set(i64::try_from(st.buffered).unwrap_or(i64::MAX));
        let full = st.open.builder.len() >= inner.config.max_segment_bytes;
        if full {
            st.swap_open();
        }
        drop(st);
        if full || was_empty {
            inner.wake.notify_one();
        }
        Ok(AppendTicket {
            shard,
            queue_id,
            first_offset,
            handles,
            store_timestamp: now,
            outcome,
            timeout: inner.config.durable_timeout,
            clock: inner.clock.clone(),
        })
    }

    /// A ticket for an append of nothing: resolved at once if the shard accepts appends.
    fn empty_ticket(&self, shard: ShardId, now: i64) -> Result<AppendTicket, SegmentError> {
        let st = self.inner.state.lock();
        if st.closing {
            return Err(SegmentError::ShuttingDown);
        }
        let sw = st.shards.get(&shard).ok_or(SegmentError::NotOwned(shard))?;
        sw.status.clone()?;
        let (_, outcome) = watch::channel(Some(Ok(())));
        Ok(AppendTicket {
            shard,
            queue_id: QueueId(0),
            first_offset: QueueOffset(0),
            handles: Vec::new(),
            store_timestamp: now,
            outcome,
            timeout: self.inner.config.durable_timeout,
            clock: self.inner.clock.clone(),
        })
    }

    /// Seals the open buffer now and waits until everything appended before the call is
    /// durable or failed.
    ///
    /// # Errors
    /// The last segment failure seen while waiting; [`SegmentError::ShuttingDown`] if the
    /// flusher stopped before finishing.
    pub async fn flush(&self) -> Result<(), SegmentError> {
        let (target, failures) = {
            let mut st = self.inner.state.lock();
            st.swap_open();
            (st.next_seq, st.failures)
        };
        self.inner.wake.notify_one();
        let mut done = self.inner.done_seq.subscribe();
        tokio::select! {
            r = done.wait_for(|d| *d >= target) => {
                if r.is_err() {
                    return Err(SegmentError::ShuttingDown);
                }
            }
            () = self.inner.stopped.cancelled() => {
                if *self.inner.done_seq.borrow() < target {
                    return Err(SegmentError::ShuttingDown);
                }
            }
        }
        let st = self.inner.state.lock();
        match &st.last_failure {
            Some(e) if st.failures > failures => Err(e.clone()),
            _ => Ok(()),
        }
    }

    /// Flushes, then stops the flusher and waits for it. Appends fail afterwards.
    ///
    /// # Errors
    /// As [`Writer::flush`].
    pub async fn shutdown(&self) -> Result<(), SegmentError> {
        self.inner.state.lock().closing = true;
        let r = self.flush().await;
        self.inner.cancel.cancel();
        self.inner.tracker.close();
        self.inner.tracker.wait().await;
        r
    }
}

#[cfg(test)]
mod flaky_meta;
#[cfg(test)]
mod tests;
