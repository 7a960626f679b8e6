//! Accept loop: a connection permit is taken before `accept`, so at most
//! `limits.max_connections` connections exist; accept errors back off instead of spinning.
//! A shard's listener stops, with its connections, when the shard leaves this node.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use stratus_meta::ShardId;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span, warn};

use crate::app::Broker;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

/// What a listener serves: the name-server port (`shard: None`, stops with the broker) or
/// one shard's port (stops when `stop` is cancelled).
#[derive(Debug, Clone)]
pub(crate) struct Serves {
    pub(crate) shard: Option<ShardId>,
    pub(crate) stop: CancellationToken,
}

/// Accepts until the broker or `serves.stop` is cancelled.
pub(crate) async fn run(
    listener: TcpListener,
    broker: Arc<Broker>,
    limit: Arc<Semaphore>,
    serves: Serves,
) {
    let mut backoff = Duration::from_millis(5);
    loop {
        let permit = tokio::select! {
            () = broker.cancel.cancelled() => return,
            () = serves.stop.cancelled() => return,
            p = limit.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
        };
        let accepted = tokio::select! {
            () = broker.cancel.cancelled() => return,
            () = serves.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = Duration::from_millis(5);
                let _ = stream.set_nodelay(true);
                let id = NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed);
                let span = info_span!("conn", id, %peer);
                broker.tracker.spawn(
                    super::connection::serve(
                        stream,
                        peer,
                        broker.clone(),
                        id,
                        permit,
                        serves.clone(),
                    )
                    .instrument(span),
                );
            }
            Err(e) => {
                warn!(error = %e, "accept failed; backing off");
                broker.clock.sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}
