//! The flusher task: seals the open buffer on size, linger, flush or shutdown; uploads up
//! to `upload_concurrency` segments at once; commits them in meta strictly in seal order
//! (each segment waits for its predecessor's outcome before committing); then fills the
//! caches, advances the queue heads and resolves the tickets.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesOrdered;
use stratus_compat::types::CommitLogOffset;
use stratus_meta::{MetaError, QueueKey, QueueSegment, SegmentCommit, SegmentRef, ShardId};
use tokio::sync::oneshot;
use tracing::{debug, error, warn};

use super::{Inner, PendingSegment, Waiter};
use crate::SegmentError;
use crate::format::{SealedSection, SealedSegment};
use crate::{metrics, paths};

/// Sealing is paced, not delayed: the open buffer is sealed as soon as it holds something,
/// unless a seal happened less than `linger` ago; then it is sealed when that linger ends. So
/// a send after a quiet period waits for one upload and commit only, a busy node still puts
/// at most one object per linger (object-store requests cost money), and everything that
/// arrives during a linger goes into the same object.
type Cooldown = Pin<Box<dyn Future<Output = ()> + Send>>;

enum Event {
    Progress,
    CooldownOver,
    Cancelled,
}

/// The flusher loop. On cancellation it stops taking appends, drains everything already
/// appended, then exits.
pub(super) async fn run(inner: Arc<Inner>) {
    let mut inflight = FuturesOrdered::new();
    let mut prev_done: Option<oneshot::Receiver<()>> = None;
    let mut cooldown: Option<Cooldown> = None;
    let mut draining = false;
    let cap = inner.config.upload_concurrency.max(1);
    loop {
        while inflight.len() < cap {
            let Some(seg) = inner.state.lock().sealed.pop_front() else {
                break;
            };
            let (tx, rx) = oneshot::channel();
            inflight.push_back(process(inner.clone(), seg, prev_done.replace(rx), tx));
        }
        metrics::UPLOADS_IN_FLIGHT.set(inflight.len() as i64);
        {
            let mut st = inner.state.lock();
            if !st.open.builder.is_empty() && cooldown.is_none() {
                st.swap_open();
                cooldown = Some(inner.clock.sleep(inner.config.linger));
                continue;
            }
            if draining && st.sealed.is_empty() && st.open.builder.is_empty() && inflight.is_empty()
            {
                break;
            }
        }
        let event = tokio::select! {
            biased;
            Some(()) = inflight.next(), if !inflight.is_empty() => Event::Progress,
            () = inner.wake.notified() => Event::Progress,
            () = async {
                match cooldown.as_mut() {
                    Some(sleep) => sleep.as_mut().await,
                    None => std::future::pending().await,
                }
            } => Event::CooldownOver,
            () = inner.cancel.cancelled(), if !draining => Event::Cancelled,
        };
        match event {
            Event::Progress => {}
            Event::CooldownOver => cooldown = None,
            Event::Cancelled => {
                draining = true;
                let mut st = inner.state.lock();
                st.closing = true;
                st.swap_open();
            }
        }
    }
    inner.stopped.cancel();
    debug!("segment flusher stopped");
}

/// Uploads one segment, waits for its predecessor, commits it, and publishes the outcome.
async fn process(
    inner: Arc<Inner>,
    seg: PendingSegment,
    prev: Option<oneshot::Receiver<()>>,
    done: oneshot::Sender<()>,
) {
    let started = Instant::now();
    let PendingSegment {
        seq,
        builder,
        waiters,
    } = seg;
    let bytes_len = builder.len();
    let key = paths::segment_key(
        &inner.config.key_prefix,
        &inner.node,
        &inner.incarnation,
        seq,
    );
    let sealed = builder.seal();
    let upload = inner.store.put_create(&key, sealed.bytes.clone()).await;
    if let Some(prev) = prev {
        // An error only means the predecessor's task is gone; its outcome is settled.
        let _ = prev.await;
    }
    let failure = match upload {
        Ok(()) => commit(&inner, &key, &sealed, waiters).await,
        Err(e) => {
            error!(key, error = %e, "segment upload failed");
            let shards: Vec<ShardId> = sealed.sections.iter().map(|s| s.shard).collect();
            fail_waiters(&inner, waiters, &shards, &e);
            Some(e)
        }
    };
    {
        let mut st = inner.state.lock();
        st.release(bytes_len);
        if let Some(e) = failure {
            st.failures += 1;
            st.last_failure = Some(e);
            metrics::SEGMENTS_FAILED.inc();
        } else {
            metrics::SEGMENTS_COMMITTED.inc();
            metrics::COMMIT_SECONDS.observe(started.elapsed().as_secs_f64());
        }
    }
    inner.done_seq.send_modify(|d| *d = (*d).max(seq));
    let _ = done.send(());
}

/// Fails every waiter with `err` and marks their shards failed.
fn fail_waiters(
    inner: &Inner,
    waiters: HashMap<ShardId, Waiter>,
    shards: &[ShardId],
    err: &SegmentError,
) {
    let mut st = inner.state.lock();
    for (shard, w) in waiters {
        if shards.contains(&shard) {
            mark_failed(&mut st, shard, w.generation, SegmentError::NotOwned(shard));
        }
        w.tx.send_replace(Some(Err(err.clone())));
    }
}

/// Marks a shard failed (if still the same generation): appends fail with `status` and its
/// part of the open buffer is dropped.
fn mark_failed(st: &mut super::State, shard: ShardId, generation: u64, status: SegmentError) {
    let Some(sw) = st.shards.get_mut(&shard) else {
        return;
    };
    if sw.generation != generation || sw.status.is_err() {
        return;
    }
    warn!(%shard, error = %status, "shard stops accepting appends until re-opened");
    sw.status = Err(status.clone());
    st.drop_open_section(shard, &status);
}

struct Part<'a> {
    section: &'a SealedSection,
    waiter: Waiter,
    commit: SegmentCommit,
}

/// Commits the sections whose shard is still open under the same generation; returns the
/// first failure, if any section failed.
async fn commit(
    inner: &Inner,
    key: &str,
    sealed: &SealedSegment,
    mut waiters: HashMap<ShardId, Waiter>,
) -> Option<SegmentError> {
    let committed_at_ms = inner.clock.now_ms();
    let mut failure = None;
    let mut parts = Vec::with_capacity(sealed.sections.len());
    {
        let st = inner.state.lock();
        for section in &sealed.sections {
            let Some(waiter) = waiters.remove(&section.shard) else {
                continue;
            };
            match st.shards.get(&section.shard) {
                Some(sw) if sw.generation == waiter.generation && sw.status.is_ok() => {
                    let commit = segment_commit(inner, key, section, sw.epoch, committed_at_ms);
                    parts.push(Part {
                        section,
                        waiter,
                        commit,
                    });
                }
                Some(sw) if sw.generation == waiter.generation => {
                    let e = sw
                        .status
                        .clone()
                        .err()
                        .unwrap_or(SegmentError::NotOwned(section.shard));
                    waiter.tx.send_replace(Some(Err(e.clone())));
                    failure.get_or_insert(e);
                }
                _ => {
                    let e = SegmentError::NotOwned(section.shard);
                    waiter.tx.send_replace(Some(Err(e.clone())));
                    failure.get_or_insert(e);
                }
            }
        }
    }
    for (shard, w) in waiters {
        w.tx.send_replace(Some(Err(SegmentError::NotOwned(shard))));
    }

    let mut attempts = 1;
    let mut ambiguous = false;
    loop {
        if parts.is_empty() {
            return failure;
        }
        let commits: Vec<SegmentCommit> = parts.iter().map(|p| p.commit.clone()).collect();
        match inner.meta.commit_segment(&commits).await {
            Ok(()) => break,
            Err(MetaError::Fenced {
                shard,
                ours,
                stored,
            }) if parts.iter().any(|p| p.section.shard == shard) => {
                error!(%shard, ?ours, ?stored, key, "segment commit fenced: shard lost");
                let idx = parts
                    .iter()
                    .position(|p| p.section.shard == shard)
                    .expect("checked by the guard");
                let part = parts.swap_remove(idx);
                let e = SegmentError::Fenced(shard);
                mark_failed(
                    &mut inner.state.lock(),
                    shard,
                    part.waiter.generation,
                    e.clone(),
                );
                part.waiter.tx.send_replace(Some(Err(e.clone())));
                failure.get_or_insert(e);
            }
            Err(e) if e.is_retryable() && attempts < inner.config.meta_attempts => {
                warn!(key, attempts, error = %e, "segment commit failed, retrying");
                attempts += 1;
                ambiguous = true;
                inner.clock.sleep(inner.config.meta_backoff).await;
            }
            Err(MetaError::Conflict(c)) if ambiguous && all_applied(inner, &parts).await => {
                debug!(key, conflict = %c, "retried segment commit had already been applied");
                break;
            }
            Err(e) => {
                error!(key, error = %e, "segment commit failed");
                let e = SegmentError::Meta(Arc::new(e));
                let mut st = inner.state.lock();
                for p in parts {
                    mark_failed(
                        &mut st,
                        p.section.shard,
                        p.waiter.generation,
                        SegmentError::NotOwned(p.section.shard),
                    );
                    p.waiter.tx.send_replace(Some(Err(e.clone())));
                }
                return Some(failure.unwrap_or(e));
            }
        }
    }

    // Committed: publish to the caches, then to readers, then to senders.
    inner.cache.insert_tail(key, sealed.bytes.clone()).await;
    for p in &parts {
        inner
            .cache
            .insert_footer(key, p.section.footer_pos, p.section.footer.clone())
            .await;
    }
    {
        let st = inner.state.lock();
        for p in &parts {
            let s = p.section;
            let current = st
                .shards
                .get(&s.shard)
                .is_some_and(|sw| sw.generation == p.waiter.generation);
            if !current {
                continue;
            }
            for q in &s.queues {
                let queue = QueueKey {
                    shard: s.shard,
                    topic: q.topic.clone(),
                    queue_id: q.queue_id,
                };
                let end = q.first_offset.add(i64::from(q.count));
                inner.cache.record_commit(
                    queue.clone(),
                    QueueSegment {
                        segment: segment_ref(key, s),
                        first_offset: q.first_offset,
                        count: q.count,
                        min_store_ts: q.min_store_ts,
                        max_store_ts: q.max_store_ts,
                    },
                );
                inner.heads.set_max(&queue, end);
            }
        }
    }
    for p in parts {
        p.waiter.tx.send_replace(Some(Ok(())));
    }
    failure
}

/// After an ambiguous (retried) commit met a conflict: true when meta shows every section
/// applied (each shard's commit-log end is exactly this section's end).
async fn all_applied(inner: &Inner, parts: &[Part<'_>]) -> bool {
    for p in parts {
        match inner.meta.shard_state(p.section.shard).await {
            Ok(s) if s.commit_log_end == p.commit.commit_log_end => {}
            _ => return false,
        }
    }
    true
}

fn local(v: u64) -> CommitLogOffset {
    // Local offsets are below 2^48.
    CommitLogOffset(i64::try_from(v).unwrap_or(i64::MAX))
}

fn segment_commit(
    inner: &Inner,
    key: &str,
    s: &SealedSection,
    epoch: stratus_meta::Epoch,
    at: i64,
) -> SegmentCommit {
    SegmentCommit {
        shard: s.shard,
        epoch,
        node: inner.node.clone(),
        object_key: key.to_owned(),
        section_pos: s.section_pos,
        section_len: s.section_len,
        footer_pos: s.footer_pos,
        footer_len: s.footer_len,
        commit_log_start: local(s.commit_log_start),
        commit_log_end: local(s.commit_log_end),
        queues: s.queues.clone(),
        committed_at_ms: at,
        effects: s.effects.clone(),
    }
}

fn segment_ref(key: &str, s: &SealedSection) -> SegmentRef {
    SegmentRef {
        object_key: key.to_owned(),
        shard: s.shard,
        section_pos: s.section_pos,
        section_len: s.section_len,
        footer_pos: s.footer_pos,
        footer_len: s.footer_len,
        commit_log_start: local(s.commit_log_start),
        commit_log_end: local(s.commit_log_end),
    }
}
