//! Accept loop: a connection permit is taken before `accept`, so at most
//! `limits.max_connections` connections exist; accept errors back off instead of spinning.
//! A shard's listener stops, with its connections, when the shard leaves this node.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use stratus_meta::ShardId;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span, warn};

use crate::remoting::Remoting;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

/// What a listener serves: the name-server port (`shard: None`, stops with the node) or
/// one shard's port (stops when `stop` is cancelled).
#[derive(Debug, Clone)]
pub(crate) struct Serves {
    pub(crate) shard: Option<ShardId>,
    pub(crate) stop: CancellationToken,
}

/// Accepts until the node or `serves.stop` is cancelled.
pub(crate) async fn run(listener: TcpListener, rmq: Arc<Remoting>, serves: Serves) {
    let limit = rmq.node.conn_limit.clone();
    let mut backoff = Duration::from_millis(5);
    loop {
        let permit = tokio::select! {
            () = rmq.node.cancel.cancelled() => return,
            () = serves.stop.cancelled() => return,
            p = limit.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
        };
        let accepted = tokio::select! {
            () = rmq.node.cancel.cancelled() => return,
            () = serves.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = Duration::from_millis(5);
                let _ = stream.set_nodelay(true);
                let id = NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed);
                let span = info_span!("conn", id, %peer);
                rmq.node.tracker.spawn(
                    super::connection::serve(stream, peer, rmq.clone(), id, permit, serves.clone())
                        .instrument(span),
                );
            }
            Err(e) => {
                warn!(error = %e, "accept failed; backing off");
                rmq.node.clock.sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}
