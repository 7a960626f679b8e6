//! The delay-level service: every 100 ms, each owned shard's levels deliver what is due,
//! in queue order. A delivered message and the level's progress
//! (`SegmentEffect::ScheduleProgress`) commit in one meta transaction, so a restart neither
//! repeats nor loses a delivery.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use stratus_compat::message::record::MessageExt;
use stratus_compat::topic::SCHEDULE_TOPIC;
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_meta::{QueueKey, SegmentEffect, ShardId};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::error::{GatewayError, Result};
use crate::node::Node;
use crate::remoting::rewrite::delivered;

/// The scheduler loop: every 100 ms, each owned shard's levels deliver what is due.
pub(crate) async fn run(node: Arc<Node>, cancel: CancellationToken) {
    let levels = node.config.delay_levels.clone();
    let mut progress: HashMap<(ShardId, i32), QueueOffset> = HashMap::new();
    let mut loaded: Vec<ShardId> = Vec::new();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.clock.sleep(Duration::from_millis(100)) => {}
        }
        let owned: Vec<ShardId> = node.shards.all().into_iter().map(|(s, _)| s).collect();
        loaded.retain(|s| owned.contains(s));
        progress.retain(|(s, _), _| owned.contains(s));
        for shard in owned {
            if !loaded.contains(&shard) {
                match node.meta.schedule_progress(shard).await {
                    Ok(p) => {
                        for (level, next) in p {
                            progress.insert((shard, level), next);
                        }
                        loaded.push(shard);
                    }
                    Err(e) => {
                        warn!(%shard, error = %e, "cannot load delay progress; will retry");
                        continue;
                    }
                }
            }
            for (i, delay) in levels.iter().enumerate() {
                let level = i32::try_from(i + 1).unwrap_or(i32::MAX);
                let next = progress.entry((shard, level)).or_insert(QueueOffset(0));
                if let Err(e) = deliver_due(&node, shard, level, *delay, next).await {
                    warn!(%shard, level, error = %e, "delayed delivery failed; will retry");
                }
            }
        }
    }
}

async fn deliver_due(
    node: &Node,
    shard: ShardId,
    level: i32,
    delay: Duration,
    next: &mut QueueOffset,
) -> Result<()> {
    let queue = QueueKey {
        shard,
        topic: Topic::new(SCHEDULE_TOPIC),
        queue_id: QueueId(level - 1),
    };
    let delay_ms = crate::config::millis(delay);
    let min = node.heads.min_offset(&queue);
    if *next < min {
        *next = min;
    }
    while *next < node.heads.max_offset(&queue) {
        let batch = node.read(&queue, *next, 32, 4 << 20, &|_| true).await?;
        if batch.messages.is_empty() {
            *next = batch.next_offset;
            continue;
        }
        for record in batch.messages {
            let m = MessageExt::decode(&mut record.clone()).map_err(|e| {
                GatewayError::CorruptRecord {
                    what: "scheduled message",
                    detail: e.to_string(),
                }
            })?;
            if m.store_timestamp.saturating_add(delay_ms) > node.clock.now_ms() {
                return Ok(());
            }
            let after = QueueOffset(m.queue_offset + 1);
            match delivered(&m, node.store_host) {
                Some(msg) => {
                    node.append_durable(shard, vec![msg], |_, _, _| {
                        vec![SegmentEffect::ScheduleProgress {
                            shard,
                            level,
                            next_offset: after,
                        }]
                    })
                    .await?;
                }
                None => {
                    warn!(%shard, level, offset = m.queue_offset, "scheduled message without a valid real topic; skipped")
                }
            }
            *next = after;
        }
    }
    Ok(())
}
