//! Periodic work: drop client channels whose heartbeats stopped (every 10 s, as the
//! reference's `ClientHousekeepingService`).

use std::sync::Arc;
use std::time::Duration;

use tracing::info;

use crate::app::Broker;

/// Runs until cancelled.
pub(crate) async fn run(broker: Arc<Broker>) {
    let expiry = i64::try_from(broker.settings.broker.channel_expired_timeout.as_millis())
        .unwrap_or(i64::MAX);
    loop {
        tokio::select! {
            () = broker.cancel.cancelled() => return,
            () = broker.clock.sleep(Duration::from_secs(10)) => {}
        }
        let n = broker.registry.expire(broker.clock.now_ms(), expiry);
        if n > 0 {
            info!(expired = n, "dropped client channels without heartbeat");
        }
    }
}
