//! Kafka connections: the accept loop (admission by the node's connection table, TLS as on
//! every listener) and one connection's reader and writer.
//!
//! A frame is `length:i32 | request`; a request longer than `kafka.max_request_bytes` closes
//! the connection, as the reference's `socket.request.max.bytes` does. Requests of one
//! connection run concurrently (up to `limits.max_in_flight_per_connection`) but are
//! answered in the order they came: Kafka clients match an answer to their oldest request
//! in flight. Three stages, joined by bounded queues, so a connection at its limit is not
//! read (TCP holds the client back): the reader cuts frames and spawns each one's decoding
//! (a Produce's decompression, CRC checks and conversion to stored messages run there, in
//! parallel for pipelined requests); the sequencer takes the decoded requests in arrival
//! order and starts each (a Produce appends then, so a partition's batches keep their
//! order); the writer writes the answers in the same order. A request that must not be
//! answered (a Produce with `acks = 0`) still takes its turn. Each request takes one of the
//! node's in-flight permits while it works.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use stratus_meta::ShardId;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use super::Kafka;
use super::dispatch::{self, Answer, Staged};
use crate::tls::Stream;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

/// What a listener serves: the bootstrap port (`shard: None`) or one shard's port.
#[derive(Debug, Clone)]
pub(crate) struct Serves {
    pub(crate) shard: Option<ShardId>,
    pub(crate) stop: CancellationToken,
}

/// The connection a request came on.
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    pub(crate) peer: SocketAddr,
    /// The shard whose port it is (`None`: the bootstrap port).
    pub(crate) shard: Option<ShardId>,
    /// Cancelled when the connection closes.
    pub(crate) closed: CancellationToken,
}

/// Accepts until the node or `serves.stop` is cancelled.
pub(crate) async fn run(listener: TcpListener, kafka: Arc<Kafka>, serves: Serves) {
    let mut backoff = Duration::from_millis(5);
    loop {
        let accepted = tokio::select! {
            () = kafka.node.cancel.cancelled() => return,
            () = serves.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "kafka accept failed; backing off");
                kafka.node.clock.sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        backoff = Duration::from_millis(5);
        let admitted = match kafka
            .node
            .connections
            .admit(peer.ip(), kafka.node.clock.now_ms())
        {
            Ok(a) => a,
            Err(why) => {
                debug!(%peer, reason = why.label(), "kafka connection refused");
                crate::metrics::CONNECTIONS_REFUSED
                    .with_label_values(&[why.label()])
                    .inc();
                continue;
            }
        };
        if admitted.evicted_other {
            crate::metrics::CONNECTIONS_EVICTED.inc();
        }
        let _ = stream.set_nodelay(true);
        let id = NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed);
        let span = info_span!("kafka_conn", id, %peer);
        let kafka = kafka.clone();
        let serves = serves.clone();
        kafka.node.tracker.clone().spawn(
            async move {
                let stream = match &kafka.node.tls {
                    None => Stream::Plain(stream),
                    Some(tls) => match tls.accept(stream).await {
                        Ok(s) => s,
                        Err(e) => {
                            debug!(error = %e, "kafka connection closed: TLS handshake failed");
                            crate::metrics::CONNECTIONS_REFUSED
                                .with_label_values(&["tls_handshake"])
                                .inc();
                            return;
                        }
                    },
                };
                let evict = admitted.evict.clone();
                serve(stream, peer, kafka, serves, evict, admitted).await;
            }
            .instrument(span),
        );
    }
}

/// Why the reader stopped.
#[derive(Debug)]
enum Stop {
    Closed,
    Idle,
    Bad(String),
    Stopping,
}

async fn serve(
    stream: Stream,
    peer: SocketAddr,
    kafka: Arc<Kafka>,
    serves: Serves,
    evict: CancellationToken,
    admitted: crate::node::connections::Admitted,
) {
    let (mut rd, mut wr) = tokio::io::split(stream);
    let limits = &kafka.node.config.limits;
    let depth = limits.max_in_flight_per_connection;
    let (tx, mut rx) = mpsc::channel::<tokio::task::JoinHandle<Answer>>(depth);
    type Decoding = tokio::task::JoinHandle<Result<Staged, String>>;
    let (staged_tx, mut staged_rx) = mpsc::channel::<Decoding>(depth);
    let closed = CancellationToken::new();
    // Set by the sequencer on a request that cannot be served: stop reading.
    let bad = CancellationToken::new();
    let conn = Conn {
        peer,
        shard: serves.shard,
        closed: closed.clone(),
    };
    let writer_closed = closed.clone();
    let writer = tokio::spawn(async move {
        while let Some(handle) = rx.recv().await {
            let answer = match handle.await {
                Ok(a) => a,
                Err(e) => {
                    warn!(error = %e, "kafka request task failed; closing");
                    break;
                }
            };
            let frame = match answer {
                Answer::Frame(f) => f,
                Answer::Silent => continue,
                Answer::Close(why) => {
                    debug!(%why, "closing kafka connection");
                    break;
                }
            };
            if wr.write_all(&frame).await.is_err() {
                break;
            }
        }
        writer_closed.cancel();
        let _ = wr.shutdown().await;
    });
    let sequencer = {
        let kafka = kafka.clone();
        let bad = bad.clone();
        tokio::spawn(async move {
            while let Some(handle) = staged_rx.recv().await {
                let staged = match handle.await {
                    Ok(Ok(s)) => s,
                    Ok(Err(why)) => {
                        debug!(%why, "closing kafka connection: bad request");
                        break;
                    }
                    Err(e) => {
                        warn!(error = %e, "kafka request decoding failed; closing");
                        break;
                    }
                };
                let task = dispatch::start_staged(&kafka, staged);
                let permits = kafka.node.in_flight.clone();
                let handle = tokio::spawn(async move {
                    let _permit = permits.acquire_owned().await;
                    task.await
                });
                if tx.send(handle).await.is_err() {
                    break;
                }
            }
            bad.cancel();
        })
    };
    let max = kafka.node.config.kafka.max_request_bytes.as_usize();
    let idle = limits.idle_timeout;
    let stop = loop {
        let mut len = [0u8; 4];
        let read_len = async { rd.read_exact(&mut len).await };
        let got = tokio::select! {
            () = kafka.node.cancel.cancelled() => break Stop::Stopping,
            () = serves.stop.cancelled() => break Stop::Stopping,
            () = evict.cancelled() => break Stop::Stopping,
            () = closed.cancelled() => break Stop::Closed,
            () = bad.cancelled() => break Stop::Closed,
            () = kafka.node.clock.sleep(idle) => break Stop::Idle,
            r = read_len => r,
        };
        if got.is_err() {
            break Stop::Closed;
        }
        let n = i32::from_be_bytes(len);
        let Ok(n) = usize::try_from(n) else {
            break Stop::Bad(format!("negative request size {n}"));
        };
        if n > max {
            break Stop::Bad(format!(
                "request of {n} bytes is larger than kafka.max_request_bytes ({max})"
            ));
        }
        if n < 8 {
            break Stop::Bad(format!("request of {n} bytes has no header"));
        }
        let mut buf = BytesMut::zeroed(n);
        if rd.read_exact(&mut buf).await.is_err() {
            break Stop::Closed;
        }
        admitted.touch(kafka.node.clock.now_ms());
        let frame: Bytes = buf.freeze();
        let (k, c) = (kafka.clone(), conn.clone());
        let decoding = tokio::spawn(async move { dispatch::stage(&k, &c, frame) });
        if staged_tx.send(decoding).await.is_err() {
            break Stop::Closed;
        }
    };
    match &stop {
        Stop::Bad(why) => debug!(%why, "closing kafka connection: bad request"),
        Stop::Idle => debug!("closing kafka connection: idle"),
        Stop::Closed | Stop::Stopping => {}
    }
    drop(staged_tx);
    // Requests still working (produces awaiting durability) are answered while the
    // socket takes writes, within the longest a produce waits.
    let grace = kafka.node.config.storage.durable_timeout;
    let (mut sequencer, mut writer) = (sequencer, writer);
    let drained = async {
        let _ = (&mut sequencer).await;
        (&mut writer).await.is_ok()
    };
    let done = tokio::select! {
        ok = drained => ok,
        () = kafka.node.clock.sleep(grace) => false,
    };
    if !done {
        sequencer.abort();
        writer.abort();
    }
    closed.cancel();
}
