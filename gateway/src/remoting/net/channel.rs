//! A client connection as seen by the rest of the front end: where to send responses and
//! server→client requests (one-way), and whether the connection is still open.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};

use stratus_compat::command::{FLAG_ONEWAY, RemotingCommand};
use stratus_compat::request::heartbeat::ConsumerGroupHeader;
use stratus_compat::{RequestCode, SerializeType};
use stratus_meta::ShardId;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A client connection as seen by the rest of the gateway.
#[derive(Debug)]
pub(crate) struct Channel {
    /// Connection id, unique in this process.
    pub(crate) id: u64,
    /// Peer address (the message's born host).
    pub(crate) peer: SocketAddr,
    /// The shard whose port the connection came in on (`None`: the name-server port).
    pub(crate) shard: Option<ShardId>,
    /// Outgoing frames, drained by the connection's writer task.
    tx: mpsc::Sender<RemotingCommand>,
    /// Opaque counter for server→client requests.
    next_opaque: AtomicI32,
    /// Cancelled when the connection closes.
    pub(crate) closed: CancellationToken,
}

impl Channel {
    pub(crate) fn new(
        id: u64,
        peer: SocketAddr,
        shard: Option<ShardId>,
        tx: mpsc::Sender<RemotingCommand>,
    ) -> Self {
        Self {
            id,
            peer,
            shard,
            tx,
            next_opaque: AtomicI32::new(1),
            closed: CancellationToken::new(),
        }
    }

    /// Queues a response; waits while the writer queue is full (backpressure).
    pub(crate) async fn send(&self, cmd: RemotingCommand) {
        // A closed connection drops the response: the client is gone.
        let _ = self.tx.send(cmd).await;
    }

    /// Sends a one-way request to the client without waiting; dropped if the writer queue
    /// is full or closed. Server-initiated requests are JSON: every client reads it.
    pub(crate) fn oneway(&self, mut cmd: RemotingCommand) {
        cmd.opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
        cmd.flag |= FLAG_ONEWAY;
        cmd.serialize_type = SerializeType::Json;
        let _ = self.tx.try_send(cmd);
    }

    /// NOTIFY_CONSUMER_IDS_CHANGED (40) for `group`.
    pub(crate) fn notify_consumer_ids_changed(&self, group: &str) {
        let mut cmd = RemotingCommand::request(RequestCode::NotifyConsumerIdsChanged.to_i32(), 0);
        ConsumerGroupHeader {
            consumer_group: group.to_owned(),
        }
        .write_to(&mut cmd);
        self.oneway(cmd);
    }
}
