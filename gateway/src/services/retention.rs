//! Retention and cleanup of segment objects (`[retention]`).
//!
//! Every `interval`, for each shard owned here, one fenced meta transaction
//! ([`MetaStore::apply_retention`]) drops the queue index rows older than the topic's
//! retention (`topics.retention_hours`, else `retention.time`), then whole sections oldest
//! first while the shard holds more than `retention.shard_bytes`, and moves the queues' min
//! offsets. Then, in this order: the queue heads' min offsets are raised (pulls below them
//! get PULL_OFFSET_MOVED / OFFSET_TOO_SMALL from then on), the released objects leave every
//! cache, and they are deleted from the object store. Objects whose delete failed are
//! retried at the next pass.
//!
//! Every `orphan_scan_interval`, the `segments/` objects are listed and those older than
//! `orphan_grace` that no section references are deleted: uploads whose commit never
//! happened (a crash between PUT and meta commit, a failed commit) and released objects
//! whose delete was lost. Objects of this process's own writer incarnation are never
//! treated as orphans: an upload of ours may be waiting for its commit whatever its age,
//! and ours that did fail are cleaned by the first scan after a restart (any node's).
//!
//! Invariants: nothing is deleted from the object store that a section in meta references
//! (meta decides, under the shard's epoch); a pass on a shard this node no longer holds is
//! refused by meta (fenced) and changes nothing.
//!
//! [`MetaStore::apply_retention`]: stratus_meta::MetaStore::apply_retention

use std::sync::Arc;

use parking_lot::Mutex;
use stratus_meta::{MetaError, RetentionOutcome, RetentionPolicy, ShardId};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::config::millis;
use crate::metrics;
use crate::node::Node;

/// Keys asked of meta per `unreferenced_objects` call.
const KEYS_PER_LOOKUP: usize = 500;
/// Most failed deletes remembered for the next pass (beyond it, the orphan scan finds them).
const MAX_PENDING_DELETES: usize = 10_000;
/// Where segment objects live (`segments/src/paths.rs`).
const SEGMENTS_PREFIX: &str = "segments";

/// Released objects whose delete failed, retried at the next pass.
#[derive(Debug, Default)]
pub(crate) struct PendingDeletes(Mutex<Vec<String>>);

/// The retention loop: one pass every `retention.interval` until cancelled.
pub(crate) async fn run(node: Arc<Node>, cancel: CancellationToken) {
    let pending = PendingDeletes::default();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.clock.sleep(node.config.retention.interval) => {}
        }
        pass(&node, &pending).await;
    }
}

/// The orphan scan loop: one scan every `retention.orphan_scan_interval` until cancelled.
pub(crate) async fn run_orphan_scan(node: Arc<Node>, cancel: CancellationToken) {
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.clock.sleep(node.config.retention.orphan_scan_interval) => {}
        }
        match scan_orphans(&node).await {
            Ok(0) => debug!("orphan scan found nothing"),
            Ok(n) => info!(deleted = n, "orphan scan deleted unreferenced objects"),
            Err(e) => warn!(error = %e, "orphan scan failed; will retry"),
        }
    }
}

fn policy(node: &Node) -> RetentionPolicy {
    let r = &node.config.retention;
    RetentionPolicy {
        default_retention_ms: millis(r.time),
        max_shard_bytes: Some(r.shard_bytes.as_u64()).filter(|b| *b > 0),
    }
}

/// One retention pass over every owned shard.
pub(crate) async fn pass(node: &Node, pending: &PendingDeletes) {
    let retry: Vec<String> = std::mem::take(&mut *pending.0.lock());
    let failed = delete_objects(node, &retry, "retention").await;
    let node_id = node.id();
    let policy = policy(node);
    let mut failed_all = failed;
    for (shard, epoch) in node.shards.all() {
        let now = node.clock.now_ms();
        match node
            .meta
            .apply_retention(shard, &node_id, epoch, now, &policy)
            .await
        {
            Ok(outcome) => {
                metrics::RETENTION_PASSES.with_label_values(&["ok"]).inc();
                failed_all.extend(apply_outcome(node, shard, outcome).await);
            }
            Err(MetaError::Fenced { .. }) => {
                // The lease keeper notices too and stops the shard here.
                metrics::RETENTION_PASSES
                    .with_label_values(&["error"])
                    .inc();
                info!(%shard, epoch = epoch.0, "retention skipped: shard no longer ours");
            }
            Err(e) => {
                metrics::RETENTION_PASSES
                    .with_label_values(&["error"])
                    .inc();
                warn!(%shard, error = %e, "retention pass failed; will retry");
            }
        }
    }
    failed_all.truncate(MAX_PENDING_DELETES);
    *pending.0.lock() = failed_all;
}

/// Publishes a pass's outcome: min offsets first (so pulls stop asking for what goes),
/// then caches, then the object store. Returns the keys whose delete failed.
async fn apply_outcome(node: &Node, shard: ShardId, outcome: RetentionOutcome) -> Vec<String> {
    let RetentionOutcome {
        sections_deleted,
        queues,
        released_objects,
    } = outcome;
    if sections_deleted == 0 && queues.is_empty() && released_objects.is_empty() {
        return Vec::new();
    }
    metrics::RETENTION_SECTIONS.inc_by(sections_deleted);
    for (queue, min) in &queues {
        node.heads.set_min(queue, *min);
    }
    node.cache.invalidate_objects(&released_objects).await;
    let failed = delete_objects(node, &released_objects, "retention").await;
    info!(
        %shard,
        sections = sections_deleted,
        queues = queues.len(),
        objects = released_objects.len() - failed.len(),
        "retention removed old sections"
    );
    failed
}

/// Deletes objects (a missing one counts as deleted); returns those that failed.
async fn delete_objects(node: &Node, keys: &[String], reason: &str) -> Vec<String> {
    let mut failed = Vec::new();
    for key in keys {
        match node.store.delete(key).await {
            Ok(()) => metrics::OBJECTS_DELETED.with_label_values(&[reason]).inc(),
            Err(e) => {
                warn!(key, error = %e, "cannot delete object; will retry");
                failed.push(key.clone());
            }
        }
    }
    failed
}

/// Lists segment objects and deletes the unreferenced ones older than the grace period;
/// returns how many were deleted.
///
/// # Errors
/// The listing or meta lookup failure (deletes that fail are logged and left for the next
/// scan).
pub(crate) async fn scan_orphans(node: &Node) -> Result<usize, crate::error::GatewayError> {
    let grace = millis(node.config.retention.orphan_grace);
    let cutoff = node.clock.now_ms().saturating_sub(grace);
    let ours = format!("/{}/", node.writer.incarnation());
    let candidates: Vec<String> = node
        .store
        .list(SEGMENTS_PREFIX)
        .await?
        .into_iter()
        .filter(|o| o.last_modified_ms <= cutoff && !o.key.contains(&ours))
        .map(|o| o.key)
        .collect();
    let mut deleted = 0;
    for chunk in candidates.chunks(KEYS_PER_LOOKUP) {
        let orphans = node.meta.unreferenced_objects(chunk).await?;
        if orphans.is_empty() {
            continue;
        }
        node.cache.invalidate_objects(&orphans).await;
        let failed = delete_objects(node, &orphans, "orphan").await;
        deleted += orphans.len() - failed.len();
    }
    Ok(deleted)
}
