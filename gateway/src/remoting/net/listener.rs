//! Accept loop. Every connection is accepted at once (nothing queues at `accept`) and
//! admitted by the node's connection table (`node/connections.rs`): within
//! `limits.max_connections_per_ip` for its address and `limits.max_connections` for the
//! node, where a full node evicts the connection that has gone longest without a request.
//! A refused connection is closed at once, logged at debug and counted. Accept errors
//! (out of file descriptors) back off instead of spinning. With TLS on, each connection's
//! task shakes hands (or, permissive, tells TLS from plaintext) before it is served. A shard's listener stops, with
//! its connections, when the shard leaves this node.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use stratus_meta::ShardId;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::remoting::Remoting;
use crate::tls::Stream;

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
    let mut backoff = Duration::from_millis(5);
    loop {
        let accepted = tokio::select! {
            () = rmq.node.cancel.cancelled() => return,
            () = serves.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = Duration::from_millis(5);
                let admitted = match rmq
                    .node
                    .connections
                    .admit(peer.ip(), rmq.node.clock.now_ms())
                {
                    Ok(a) => a,
                    Err(why) => {
                        debug!(%peer, reason = why.label(), "connection refused");
                        crate::metrics::CONNECTIONS_REFUSED
                            .with_label_values(&[why.label()])
                            .inc();
                        drop(stream);
                        continue;
                    }
                };
                if admitted.evicted_other {
                    crate::metrics::CONNECTIONS_EVICTED.inc();
                }
                let _ = stream.set_nodelay(true);
                let id = NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed);
                let span = info_span!("conn", id, %peer);
                let rmq = rmq.clone();
                let serves = serves.clone();
                rmq.node.tracker.clone().spawn(
                    async move {
                        // The handshake runs in the connection's task, not the accept loop.
                        let stream = match &rmq.node.tls {
                            None => Stream::Plain(stream),
                            Some(tls) => match tls.accept(stream).await {
                                Ok(s) => s,
                                Err(e) => {
                                    debug!(error = %e, "connection closed: TLS handshake failed");
                                    crate::metrics::CONNECTIONS_REFUSED
                                        .with_label_values(&["tls_handshake"])
                                        .inc();
                                    return;
                                }
                            },
                        };
                        super::connection::serve(stream, peer, rmq, id, admitted, serves).await;
                    }
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
