//! The `/metrics` HTTP endpoint (`metrics.addr`): the Prometheus default registry in the text
//! exposition format, with the gateway's and the storage layer's metrics. Gauges that are
//! cheaper to read than to maintain (cache sizes, parked pulls) are set on each scrape.
//!
//! The server task belongs to the node's tracker and stops with the node's token; a
//! scrape never blocks request handling (it reads atomics and moka counters only).

use std::net::SocketAddr;
use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus::{Encoder, TEXT_FORMAT, TextEncoder};
use stratus_segments::cache::Cache;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::metrics;
use crate::tls::{Stream, Tls};
use stratus_segments::clock::Clock;

/// What a scrape reads besides the registry.
#[derive(Debug, Clone)]
pub(crate) struct ScrapeState {
    /// The node's caches (capacities and weighted sizes).
    pub(crate) cache: Arc<Cache>,
    /// The parked-pull budget and its size: parked = size − available.
    pub(crate) parked: Arc<Semaphore>,
    pub(crate) max_parked: usize,
    /// The node's in-flight budget and its size: in flight = size − available.
    pub(crate) in_flight: Arc<Semaphore>,
    pub(crate) max_in_flight: usize,
    /// The node whose statistics give the per-topic and per-group families
    /// (`rocketmq_metrics.rs`); none in unit tests of the endpoint.
    pub(crate) node: Option<Arc<crate::node::Node>>,
}

/// Registers every metric family, so a scrape lists them before their first use.
fn register_all() {
    use stratus_segments::metrics as seg;
    LazyLock::force(&metrics::REQUESTS);
    LazyLock::force(&metrics::SENDS);
    LazyLock::force(&metrics::CONNECTIONS);
    LazyLock::force(&metrics::PARKED_PULLS);
    LazyLock::force(&metrics::CONNECTIONS_REFUSED);
    LazyLock::force(&metrics::CONNECTIONS_EVICTED);
    LazyLock::force(&metrics::REQUESTS_IN_FLIGHT);
    LazyLock::force(&metrics::RETENTION_PASSES);
    LazyLock::force(&metrics::RETENTION_SECTIONS);
    LazyLock::force(&metrics::OBJECTS_DELETED);
    LazyLock::force(&seg::OBJECT_STORE_REQUESTS);
    LazyLock::force(&seg::OBJECT_STORE_SECONDS);
    LazyLock::force(&seg::OBJECT_STORE_BYTES);
    LazyLock::force(&seg::CACHE_REQUESTS);
    LazyLock::force(&seg::COMMIT_SECONDS);
    LazyLock::force(&seg::SEGMENTS_COMMITTED);
    LazyLock::force(&seg::SEGMENTS_FAILED);
    LazyLock::force(&seg::BUFFERED_BYTES);
    LazyLock::force(&seg::UPLOADS_IN_FLIGHT);
    LazyLock::force(&seg::CACHE_CAPACITY_BYTES);
    LazyLock::force(&seg::CACHE_WEIGHTED_BYTES);
    LazyLock::force(&seg::CACHE_ENTRIES);
}

/// Serves `/metrics` on `listener` until `cancel`, over TLS when `tls` is set (the node's
/// `[tls]`, the same mode as every other listener).
pub(crate) async fn run(
    listener: TcpListener,
    state: ScrapeState,
    tls: Option<(Arc<Tls>, Arc<dyn Clock>)>,
    cancel: CancellationToken,
) {
    register_all();
    let addr = listener.local_addr().ok();
    info!(addr = ?addr, tls = tls.is_some(), "metrics endpoint listening");
    let app = Router::new()
        .route("/metrics", get(scrape))
        .with_state(state);
    let served = match tls {
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(cancel.cancelled_owned())
                .await
        }
        Some((tls, clock)) => {
            let listener = TlsListener::start(listener, tls, clock, cancel.clone());
            axum::serve(listener, app)
                .with_graceful_shutdown(cancel.cancelled_owned())
                .await
        }
    };
    if let Err(e) = served {
        warn!(error = %e, "metrics endpoint stopped");
    }
}

/// `/metrics` over TLS: a task accepts and shakes hands with each connection on its own
/// (a slow handshake holds up no other scrape) and hands the finished ones to the server.
struct TlsListener {
    ready: mpsc::Receiver<(Stream, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    fn start(
        listener: TcpListener,
        tls: Arc<Tls>,
        clock: Arc<dyn Clock>,
        cancel: CancellationToken,
    ) -> Self {
        let local = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, ready) = mpsc::channel(16);
        tokio::spawn(async move {
            // Stops with the node's token or when the server drops the receiver.
            loop {
                let accepted = tokio::select! {
                    () = cancel.cancelled() => return,
                    a = listener.accept() => a,
                };
                let (tcp, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        warn!(error = %e, "metrics accept failed; backing off");
                        clock.sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (tls, tx) = (tls.clone(), tx.clone());
                tokio::spawn(async move {
                    // Ends with the handshake (bounded by tls.handshake_timeout).
                    if let Ok(stream) = tls.accept(tcp).await {
                        let _ = tx.send((stream, peer)).await;
                    }
                });
            }
        });
        Self { ready, local }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = Stream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(next) => next,
            // The accept task stopped (the node is stopping): wait for the shutdown.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

async fn scrape(State(state): State<ScrapeState>) -> Response {
    state.cache.publish_metrics().await;
    let parked = state
        .max_parked
        .saturating_sub(state.parked.available_permits());
    metrics::PARKED_PULLS.set(i64::try_from(parked).unwrap_or(i64::MAX));
    let in_flight = state
        .max_in_flight
        .saturating_sub(state.in_flight.available_permits());
    metrics::REQUESTS_IN_FLIGHT.set(i64::try_from(in_flight).unwrap_or(i64::MAX));
    let mut families = prometheus::gather();
    if let Some(node) = &state.node {
        families.extend(super::rocketmq_metrics::families(node).await);
    }
    let mut body = Vec::new();
    match TextEncoder::new().encode(&families, &mut body) {
        Ok(()) => ([(header::CONTENT_TYPE, TEXT_FORMAT)], body).into_response(),
        Err(e) => {
            warn!(error = %e, "cannot encode metrics");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics").into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scrape_lists_gateway_and_storage_metrics() {
        let state = ScrapeState {
            cache: Arc::new(Cache::new(stratus_segments::cache::CacheConfig::default())),
            parked: Arc::new(Semaphore::new(10)),
            max_parked: 10,
            in_flight: Arc::new(Semaphore::new(8)),
            max_in_flight: 8,
            node: None,
        };
        let _held = state.parked.clone().try_acquire_many_owned(3).unwrap();
        let _working = state.in_flight.clone().try_acquire_many_owned(2).unwrap();
        register_all();
        let resp = scrape(State(state)).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let body = axum::body::to_bytes(resp.into_body(), 1 << 24)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(text.contains("stratus_gateway_parked_pulls 3"), "{text}");
        assert!(
            text.contains("stratus_gateway_requests_in_flight 2"),
            "{text}"
        );
        assert!(
            text.contains("stratus_gateway_connections_evicted_total"),
            "{text}"
        );
        assert!(text.contains("stratus_gateway_connections"), "{text}");
        assert!(
            text.contains("stratus_segments_cache_capacity_bytes{cache=\"tail\"}"),
            "{text}"
        );
        assert!(text.contains("stratus_segments_buffered_bytes"), "{text}");
    }
}
