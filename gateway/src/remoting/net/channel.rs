//! A client connection as seen by the rest of the front end: where to send responses and
//! server→client requests (one-way, or awaiting the client's answer), and whether the
//! connection is still open.
//!
//! Server→client requests with an answer ([`Channel::invoke`]) wait in a per-channel table
//! of pending opaques, which the connection's reader completes when a response frame
//! arrives ([`Channel::complete`]). The table is bounded ([`MAX_PENDING`]); an entry leaves
//! it when answered, on timeout, when the connection closes, or when the waiting future is
//! dropped. A response whose opaque is not pending is dropped.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use stratus_compat::command::{FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand};
use stratus_compat::request::heartbeat::ConsumerGroupHeader;
use stratus_compat::{RequestCode, SerializeType};
use stratus_meta::ShardId;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Most server→client requests awaiting an answer on one connection.
pub(crate) const MAX_PENDING: usize = 64;

/// Why a server→client request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InvokeError {
    /// No answer within the timeout.
    #[error("wait response timeout {0:?}")]
    Timeout(Duration),
    /// The connection closed before the answer.
    #[error("connection closed")]
    Closed,
    /// Too many requests already await an answer on this connection.
    #[error("too many requests awaiting an answer on this connection ({MAX_PENDING})")]
    Busy,
}

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
    /// Server→client requests awaiting the client's answer, by opaque.
    pending: Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>,
}

/// Removes a pending entry when its `invoke` ends, however it ends.
struct PendingGuard<'a> {
    channel: &'a Channel,
    opaque: i32,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.channel.pending.lock().remove(&self.opaque);
    }
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
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Sends a request to the client and waits for its answer, at most `timeout` (queueing
    /// the frame included). Server-initiated requests are JSON: every client reads it.
    ///
    /// # Errors
    /// [`InvokeError`]: no answer in time, the connection closed, or too many requests
    /// already await an answer on this connection.
    pub(crate) async fn invoke(
        &self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, InvokeError> {
        if self.closed.is_cancelled() {
            return Err(InvokeError::Closed);
        }
        let opaque = self.fresh_opaque();
        cmd.opaque = opaque;
        cmd.flag &= !(FLAG_ONEWAY | FLAG_RESPONSE);
        cmd.serialize_type = SerializeType::Json;
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock();
            if pending.len() >= MAX_PENDING {
                return Err(InvokeError::Busy);
            }
            pending.insert(opaque, tx);
        }
        let _guard = PendingGuard {
            channel: self,
            opaque,
        };
        let exchange = async {
            self.tx.send(cmd).await.map_err(|_| InvokeError::Closed)?;
            rx.await.map_err(|_| InvokeError::Closed)
        };
        tokio::select! {
            () = self.closed.cancelled() => Err(InvokeError::Closed),
            r = tokio::time::timeout(timeout, exchange) => r.unwrap_or(Err(InvokeError::Timeout(timeout))),
        }
    }

    /// A response frame from the client: completes the request awaiting it. Returns false
    /// (and drops the frame) when no request of this opaque is pending.
    pub(crate) fn complete(&self, cmd: RemotingCommand) -> bool {
        let waiter = self.pending.lock().remove(&cmd.opaque);
        match waiter {
            Some(tx) => tx.send(cmd).is_ok(),
            None => false,
        }
    }

    /// How many requests await an answer (tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.lock().len()
    }

    /// A fresh opaque for a server→client request (never one still pending).
    fn fresh_opaque(&self) -> i32 {
        loop {
            let o = self.next_opaque.fetch_add(1, Ordering::Relaxed);
            if !self.pending.lock().contains_key(&o) {
                return o;
            }
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
        cmd.opaque = self.fresh_opaque();
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn channel() -> (Arc<Channel>, mpsc::Receiver<RemotingCommand>) {
        let (tx, rx) = mpsc::channel(8);
        let peer = "127.0.0.1:1".parse().expect("address");
        (Arc::new(Channel::new(1, peer, None, tx)), rx)
    }

    fn answer_to(req: &RemotingCommand, code: i32) -> RemotingCommand {
        let mut r = RemotingCommand::request(code, req.opaque);
        r.flag = FLAG_RESPONSE;
        r
    }

    #[tokio::test]
    async fn the_answer_of_the_same_opaque_completes_the_request() {
        let (ch, mut rx) = channel();
        let c = ch.clone();
        let client = tokio::spawn(async move {
            let req = rx.recv().await.expect("request sent");
            assert!(!req.is_response() && !req.is_oneway());
            // An unknown opaque is dropped, nothing panics, the real answer still counts.
            let mut stray = answer_to(&req, 7);
            stray.opaque = req.opaque.wrapping_add(1000);
            assert!(!c.complete(stray));
            assert!(c.complete(answer_to(&req, 0)));
            rx
        });
        let resp = ch
            .invoke(RemotingCommand::request(307, 0), Duration::from_secs(5))
            .await
            .expect("answered");
        assert_eq!(resp.code, 0);
        assert_eq!(ch.pending_len(), 0);
        let _rx = client.await.expect("client task");
    }

    #[tokio::test]
    async fn no_answer_times_out_and_leaves_nothing_pending() {
        let (ch, mut rx) = channel();
        let r = ch
            .invoke(RemotingCommand::request(307, 0), Duration::from_millis(30))
            .await;
        assert_eq!(
            r.unwrap_err(),
            InvokeError::Timeout(Duration::from_millis(30))
        );
        assert_eq!(ch.pending_len(), 0);
        // A late answer finds nothing pending.
        let req = rx.recv().await.expect("request was sent");
        assert!(!ch.complete(answer_to(&req, 0)));
    }

    #[tokio::test]
    async fn closing_the_connection_ends_the_wait() {
        let (ch, _rx) = channel();
        let c = ch.clone();
        let waiter = tokio::spawn(async move {
            c.invoke(RemotingCommand::request(307, 0), Duration::from_secs(30))
                .await
        });
        while ch.pending_len() == 0 {
            tokio::task::yield_now().await;
        }
        ch.closed.cancel();
        assert_eq!(
            waiter.await.expect("task").unwrap_err(),
            InvokeError::Closed
        );
        assert_eq!(ch.pending_len(), 0);
        assert_eq!(
            ch.invoke(RemotingCommand::request(307, 0), Duration::from_secs(1))
                .await
                .unwrap_err(),
            InvokeError::Closed
        );
    }

    #[tokio::test]
    async fn pending_requests_are_capped_and_a_dropped_wait_frees_its_slot() {
        let (tx, _rx) = mpsc::channel(MAX_PENDING + 8);
        let peer = "127.0.0.1:1".parse().expect("address");
        let ch = Arc::new(Channel::new(1, peer, None, tx));
        let mut waits = Vec::new();
        for _ in 0..MAX_PENDING {
            let c = ch.clone();
            waits.push(tokio::spawn(async move {
                c.invoke(RemotingCommand::request(307, 0), Duration::from_secs(30))
                    .await
            }));
        }
        while ch.pending_len() < MAX_PENDING {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            ch.invoke(RemotingCommand::request(307, 0), Duration::from_secs(1))
                .await
                .unwrap_err(),
            InvokeError::Busy
        );
        for w in &waits {
            w.abort();
        }
        for w in waits {
            let _ = w.await;
        }
        assert_eq!(ch.pending_len(), 0, "aborted waits remove their entries");
    }
}
