//! Periodic work: drop client channels whose heartbeats stopped (every 10 s, as the
//! reference's `ClientHousekeepingService`).

use std::sync::Arc;
use std::time::Duration;

use tracing::info;

use crate::app::Broker;

/// Runs until cancelled.
pub(crate) async fn run(broker: Arc<Broker>) {
    let expiry = crate::config::millis(broker.settings.broker.channel_expired_timeout);
    loop {
        tokio::select! {
            () = broker.cancel.cancelled() => return,
            () = broker.clock.sleep(Duration::from_secs(10)) => {}
        }
        let now = broker.clock.now_ms();
        let n = broker.registry.expire(now, expiry);
        let lock_expiry = crate::config::millis(broker.settings.broker.queue_lock_expiry);
        broker.locks.expire(now, lock_expiry);
        if n > 0 {
            info!(expired = n, "dropped client channels without heartbeat");
        }
    }
}
