//! One client connection: a reader task (this function) that decodes frames and dispatches
//! requests, and a writer task that drains a bounded queue of outgoing frames. Responses
//! may go out of order (clients match them by opaque); a full writer queue slows the
//! reader (backpressure). A frame error closes only this connection.

use std::net::SocketAddr;
use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use stratus_compat::codec::RemotingCodec;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::task::TaskTracker;
use tracing::{debug, info};

use super::Channel;
use crate::remoting::Remoting;

/// Serves one connection until it closes, idles out, or the node stops.
pub(crate) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    rmq: Arc<Remoting>,
    id: u64,
    _permit: OwnedSemaphorePermit,
    serves: super::listener::Serves,
) {
    let _open = crate::metrics::ConnectionOpen::new();
    let limits = rmq.node.config.frame_limits;
    let (r, w) = stream.into_split();
    let mut frames = FramedRead::new(r, RemotingCodec::new(limits));
    let mut sink = FramedWrite::new(w, RemotingCodec::new(limits));
    let (tx, mut rx) = mpsc::channel(rmq.node.config.limits.writer_queue);
    let channel = Arc::new(Channel::new(id, peer, serves.shard, tx));
    let in_flight = Arc::new(Semaphore::new(
        rmq.node.config.limits.max_in_flight_per_connection,
    ));
    let requests = TaskTracker::new();

    let closed = channel.closed.clone();
    let writer = tokio::spawn(async move {
        // Owned by this connection: joined below before the connection task ends.
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
                () = closed.cancelled() => break,
            }
        }
        closed.cancel();
    });

    let idle = rmq.node.config.limits.idle_timeout;
    loop {
        tokio::select! {
            () = rmq.node.cancel.cancelled() => break,
            () = serves.stop.cancelled() => {
                info!("closing connection: its shard left this node");
                break;
            }
            () = channel.closed.cancelled() => break,
            () = rmq.node.clock.sleep(idle) => {
                info!("closing idle connection");
                break;
            }
            next = frames.next() => match next {
                None => {
                    debug!("peer closed");
                    break;
                }
                Some(Err(e)) => {
                    info!(error = %e, "closing connection on a bad frame");
                    break;
                }
                Some(Ok(cmd)) => {
                    if cmd.is_response() {
                        debug!(opaque = cmd.opaque, code = cmd.code, "response from client");
                        continue;
                    }
                    crate::remoting::dispatch::handle(&rmq, &channel, cmd, &in_flight, &requests);
                }
            },
        }
    }
    rmq.registry.channel_closed(id);
    requests.close();
    // Let in-flight requests finish (their sends are durable work) before closing.
    requests.wait().await;
    channel.closed.cancel();
    let _ = writer.await;
}
