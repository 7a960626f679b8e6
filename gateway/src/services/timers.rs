//! The timer service: every 50 ms, each owned shard delivers its due timer messages, found
//! through meta's due-time index (never by scanning); the delivery and the removal of the
//! index row commit together.

use std::sync::Arc;
use std::time::Duration;

use stratus_compat::message::record::MessageExt;
use stratus_meta::{SegmentEffect, ShardId};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::error::{GatewayError, Result};
use crate::node::Node;
use crate::remoting::rewrite::delivered;

/// The timer loop: every 50 ms, each owned shard delivers its due timer messages (found
/// through meta's due-time index, never by scanning).
pub(crate) async fn run(node: Arc<Node>, cancel: CancellationToken) {
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.clock.sleep(Duration::from_millis(50)) => {}
        }
        for (shard, _) in node.shards.all() {
            if let Err(e) = deliver_timers(&node, shard).await {
                warn!(%shard, error = %e, "timer delivery failed; will retry");
            }
        }
    }
}

async fn deliver_timers(node: &Node, shard: ShardId) -> Result<()> {
    for (handle, _due) in node
        .meta
        .due_timers(shard, node.clock.now_ms(), 256)
        .await?
    {
        let Some(record) = node.read_by_handle(handle).await? else {
            warn!(%shard, handle = handle.0, "timer record missing");
            continue;
        };
        let m =
            MessageExt::decode(&mut record.clone()).map_err(|e| GatewayError::CorruptRecord {
                what: "timer message",
                detail: e.to_string(),
            })?;
        let Some(msg) = delivered(&m, node.store_host) else {
            warn!(%shard, handle = handle.0, "timer message without a valid real topic");
            continue;
        };
        node.append_durable(shard, vec![msg], |_, _, _| {
            vec![SegmentEffect::TimerDelivered { shard, handle }]
        })
        .await?;
    }
    Ok(())
}
