//! Samples the node's statistics once a second (`node/stats.rs`: store rates every second,
//! the minute, hour and day windows when due, the day totals at midnight).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::node::Node;

/// Ticks the statistics until `cancel`.
pub(crate) async fn run(node: Arc<Node>, cancel: CancellationToken) {
    loop {
        node.stats.tick(node.clock.now_ms());
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.clock.sleep(Duration::from_secs(1)) => {}
        }
    }
}
