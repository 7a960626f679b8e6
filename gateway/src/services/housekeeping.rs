//! Periodic work: drop client channels whose heartbeats stopped (every 10 s, as the
//! reference's `ClientHousekeepingService`).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::remoting::Remoting;

/// Runs until cancelled.
pub(crate) async fn run(rmq: Arc<Remoting>, cancel: CancellationToken) {
    let expiry = crate::config::millis(rmq.node.config.broker.channel_expired_timeout);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = rmq.node.clock.sleep(Duration::from_secs(10)) => {}
        }
        let now = rmq.node.clock.now_ms();
        let n = rmq.registry.expire(now, expiry);
        let lock_expiry = crate::config::millis(rmq.node.config.broker.queue_lock_expiry);
        rmq.locks.expire(now, lock_expiry);
        if n > 0 {
            info!(expired = n, "dropped client channels without heartbeat");
        }
    }
}
