//! One client connection: a reader task (this function) that decodes frames and dispatches
//! requests, and a writer task that drains a bounded queue of outgoing frames. Responses
//! may go out of order (clients match them by opaque).
//!
//! Bounds. The reader takes a request's in-flight permits (its connection's, then the
//! node's; see `dispatch.rs`) *before* it reads the frame, so a connection with
//! `limits.max_in_flight_per_connection` requests in progress is not read at all: the
//! client is held back by TCP, not answered SYSTEM_BUSY by a task per frame. Answers wait
//! for room in the writer queue (`limits.writer_queue`) holding their connection's permit,
//! so a client that does not read stalls only itself.
//!
//! Closing. The reader stops on a bad frame, the peer's close, `limits.idle_timeout`
//! without a request, eviction (the node is full and this is the connection that has gone
//! longest without a request), its shard leaving, or the node stopping. Then at once its
//! parked pulls give up (they wait on `Channel::closed`) and answer nothing; requests
//! still working (sends awaiting durability) are let finish and answered while the socket
//! takes writes, within `storage.durable_timeout` (the longest a send waits). Past that the
//! writer is stopped and what is left unanswered is dropped: a send already appended is
//! still made durable, the client sees the connection close and retries.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use stratus_compat::codec::RemotingCodec;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info};

use super::Channel;
use crate::node::connections::Admitted;
use crate::remoting::Remoting;
use crate::remoting::dispatch::Budgets;
use crate::tls::Stream;

/// Why the reader stopped.
#[derive(Debug)]
enum Stop {
    NodeStopping,
    ShardLeft,
    Evicted,
    WriteFailed,
    Idle,
    PeerClosed,
    BadFrame(String),
}

/// Serves one connection until it closes, idles out, is evicted, or the node stops.
pub(crate) async fn serve(
    stream: Stream,
    peer: SocketAddr,
    rmq: Arc<Remoting>,
    id: u64,
    admitted: Admitted,
    serves: super::listener::Serves,
) {
    match stream {
        // A TCP stream splits into owned halves without a lock between reader and writer.
        Stream::Plain(tcp) => {
            let (r, w) = tcp.into_split();
            serve_halves(r, w, peer, rmq, id, admitted, serves).await;
        }
        Stream::Tls(tls) => {
            let (r, w) = tokio::io::split(*tls);
            serve_halves(r, w, peer, rmq, id, admitted, serves).await;
        }
    }
}

async fn serve_halves<R, W>(
    r: R,
    w: W,
    peer: SocketAddr,
    rmq: Arc<Remoting>,
    id: u64,
    admitted: Admitted,
    serves: super::listener::Serves,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let _open = crate::metrics::ConnectionOpen::new();
    let limits = rmq.node.config.frame_limits;
    let mut frames = FramedRead::new(r, RemotingCodec::new(limits));
    let mut sink = FramedWrite::new(w, RemotingCodec::new(limits));
    let (tx, mut rx) = mpsc::channel(rmq.node.config.limits.writer_queue);
    let channel = Arc::new(Channel::new(id, peer, serves.shard, tx));
    let budgets = Budgets {
        connection: Arc::new(Semaphore::new(
            rmq.node.config.limits.max_in_flight_per_connection,
        )),
        node: rmq.node.in_flight.clone(),
    };
    let requests = TaskTracker::new();

    // Cancelled once no request of this connection will queue an answer any more.
    let answered = CancellationToken::new();
    let closed = channel.closed.clone();
    let writer_done = answered.clone();
    let mut writer = tokio::spawn(async move {
        // Owned by this connection: joined (or aborted) below before the connection ends.
        loop {
            // Queued frames first: answers of requests that finished before the close (for
            // example sends failed when the connection's shard left) still go out.
            tokio::select! {
                biased;
                cmd = rx.recv() => match cmd {
                    Some(cmd) => {
                        if let Err(e) = sink.send(cmd).await {
                            debug!(error = %e, "write failed");
                            break;
                        }
                    }
                    None => break,
                },
                () = writer_done.cancelled() => break,
            }
        }
        closed.cancel();
    });

    let idle = rmq.node.config.limits.idle_timeout;
    let clock = rmq.node.clock.clone();
    let stop = loop {
        let since = clock.now_ms().saturating_sub(admitted.last_request_ms());
        let idle_left =
            idle.saturating_sub(Duration::from_millis(u64::try_from(since).unwrap_or(0)));
        // One idle deadline for both waits below (a timer per request, not two).
        let mut idle_sleep = clock.sleep(idle_left);
        // The permits first: a connection at its limit is not read (TCP backpressure).
        let permit = tokio::select! {
            biased;
            () = rmq.node.cancel.cancelled() => break Stop::NodeStopping,
            () = serves.stop.cancelled() => break Stop::ShardLeft,
            () = admitted.evict.cancelled() => break Stop::Evicted,
            () = channel.closed.cancelled() => break Stop::WriteFailed,
            () = &mut idle_sleep => break Stop::Idle,
            p = budgets.acquire() => match p {
                Some(p) => p,
                None => break Stop::NodeStopping,
            },
        };
        let next = tokio::select! {
            biased;
            () = rmq.node.cancel.cancelled() => break Stop::NodeStopping,
            () = serves.stop.cancelled() => break Stop::ShardLeft,
            () = admitted.evict.cancelled() => break Stop::Evicted,
            () = channel.closed.cancelled() => break Stop::WriteFailed,
            () = &mut idle_sleep => break Stop::Idle,
            next = frames.next() => next,
        };
        match next {
            None => break Stop::PeerClosed,
            Some(Err(e)) => break Stop::BadFrame(e.to_string()),
            Some(Ok(cmd)) => {
                if cmd.is_response() {
                    let (opaque, code) = (cmd.opaque, cmd.code);
                    if !channel.complete(cmd) {
                        debug!(
                            opaque,
                            code, "response from client matches no pending request"
                        );
                    }
                    continue;
                }
                admitted.touch(clock.now_ms());
                crate::remoting::dispatch::handle(&rmq, &channel, cmd, permit, &requests);
            }
        }
    };
    drop(frames);
    match &stop {
        Stop::NodeStopping | Stop::WriteFailed => {}
        Stop::ShardLeft => info!("closing connection: its shard left this node"),
        Stop::Evicted => debug!("closing connection: evicted for a new one (node full)"),
        Stop::Idle => info!("closing idle connection"),
        Stop::PeerClosed => debug!("peer closed"),
        Stop::BadFrame(e) => info!(error = %e, "closing connection on a bad frame"),
    }
    rmq.registry.channel_closed(id);
    // Parked pulls (and anything else waiting on the connection) give up now.
    channel.closed.cancel();
    requests.close();
    let drain = rmq.node.config.storage.durable_timeout;
    let started = clock.now_ms();
    let drained = tokio::select! {
        () = requests.wait() => true,
        () = clock.sleep(drain) => false,
    };
    answered.cancel();
    let spent = Duration::from_millis(u64::try_from(clock.now_ms() - started).unwrap_or(0));
    let left = if drained {
        drain.saturating_sub(spent)
    } else {
        Duration::ZERO
    };
    tokio::select! {
        _ = &mut writer => {}
        () = clock.sleep(left) => {
            debug!("closing connection with answers unwritten (the client does not read)");
            writer.abort();
            let _ = writer.await;
        }
    }
}
