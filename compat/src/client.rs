//! Small async client used by tests and the bench tool.
//!
//! One TCP connection, two tasks: a reader that decodes frames and routes responses to their
//! waiting callers by `opaque` (requests from the server go to a bounded queue), and a writer
//! fed through a bounded channel. Many requests may be in flight at once from several tasks;
//! replies may come back in any order.
//!
//! Ownership and shutdown: the client owns both tasks. Dropping it closes the writer's
//! channel (the writer flushes what is queued, then shuts the socket down) and aborts the
//! reader. When the reader stops (EOF, I/O error or a bad frame) every waiting call fails
//! with [`ClientError::Closed`] and later calls fail at once.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use thiserror::Error;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

pub use crate::codec::{CodecError, RemotingCodec};
use crate::command::{FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand};
use crate::error::FrameError;
use crate::limits::FrameLimits;

/// Capacity of the writer queue (frames waiting to be written).
const WRITE_QUEUE: usize = 256;
/// Capacity of the queue of requests received from the server.
const SERVER_REQUEST_QUEUE: usize = 256;

/// Why a call failed.
#[derive(Debug, Error)]
pub enum ClientError {
    /// Connecting, reading or writing failed.
    #[error("connection i/o failed: {0}")]
    Io(#[from] io::Error),
    /// No response arrived in time.
    #[error("request timed out")]
    Timeout,
    /// The connection is closed (see [`RemotingClient::close_reason`]).
    #[error("connection closed")]
    Closed,
    /// The command could not be encoded.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

#[derive(Debug, Default)]
struct State {
    pending: HashMap<i32, oneshot::Sender<RemotingCommand>>,
    closed: Option<String>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the map inconsistent (every critical
        // section is a single insert/remove), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn register(
        &self,
        opaque: i32,
        tx: oneshot::Sender<RemotingCommand>,
    ) -> Result<(), ClientError> {
        let mut state = self.lock();
        if state.closed.is_some() {
            return Err(ClientError::Closed);
        }
        state.pending.insert(opaque, tx);
        Ok(())
    }

    fn take(&self, opaque: i32) -> Option<oneshot::Sender<RemotingCommand>> {
        self.lock().pending.remove(&opaque)
    }

    fn close(&self, reason: String) {
        let mut state = self.lock();
        state.closed.get_or_insert(reason);
        // Dropping the senders wakes every waiter with an error.
        state.pending.clear();
    }
}

/// Removes a pending entry when its call ends early (timeout or cancellation).
struct PendingGuard<'a> {
    shared: &'a Shared,
    opaque: i32,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.take(self.opaque);
    }
}

/// A remoting connection to a server.
#[derive(Debug)]
pub struct RemotingClient {
    /// Encoded frames for the writer task; closing it stops the writer after a flush.
    outgoing: mpsc::Sender<Bytes>,
    /// Pending calls by opaque, and whether the connection is closed.
    shared: Arc<Shared>,
    /// Next opaque to assign.
    next_opaque: AtomicI32,
    /// Requests the server sent, until taken by [`Self::server_requests`].
    server_requests: Mutex<Option<mpsc::Receiver<RemotingCommand>>>,
    /// The reader task, aborted on drop.
    reader: JoinHandle<()>,
    local_addr: SocketAddr,
    peer_addr: SocketAddr,
}

impl RemotingClient {
    /// Connects with the default [`FrameLimits`].
    ///
    /// # Errors
    /// When the TCP connection cannot be made.
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<Self> {
        Self::connect_with(addr, FrameLimits::default()).await
    }

    /// Connects, applying `limits` to frames from the server.
    ///
    /// # Errors
    /// When the TCP connection cannot be made.
    pub async fn connect_with(addr: impl ToSocketAddrs, limits: FrameLimits) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        Self::from_stream(stream, limits)
    }

    /// Wraps a connected stream; spawns the reader and writer tasks on the current runtime.
    ///
    /// # Errors
    /// When the socket's addresses cannot be read.
    pub fn from_stream(stream: TcpStream, limits: FrameLimits) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        let local_addr = stream.local_addr()?;
        let peer_addr = stream.peer_addr()?;
        let (read_half, write_half) = stream.into_split();
        let shared = Arc::new(Shared::default());
        let (out_tx, out_rx) = mpsc::channel(WRITE_QUEUE);
        let (req_tx, req_rx) = mpsc::channel(SERVER_REQUEST_QUEUE);
        let frames = FramedRead::new(read_half, RemotingCodec::new(limits));
        let reader = tokio::spawn(read_loop(frames, Arc::clone(&shared), req_tx));
        // The writer ends by itself once `outgoing` is dropped.
        drop(tokio::spawn(write_loop(
            out_rx,
            write_half,
            Arc::clone(&shared),
        )));
        Ok(Self {
            outgoing: out_tx,
            shared,
            next_opaque: AtomicI32::new(1),
            server_requests: Mutex::new(Some(req_rx)),
            reader,
            local_addr,
            peer_addr,
        })
    }

    /// This end's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The server's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer_addr
    }

    /// The next opaque this client will use.
    fn next_opaque(&self) -> i32 {
        self.next_opaque.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a request and waits for its response: assigns a fresh opaque, clears the
    /// response bit, and matches the reply by opaque.
    ///
    /// # Errors
    /// [`ClientError::Timeout`] when no reply came within `timeout`;
    /// [`ClientError::Closed`] when the connection closed first;
    /// [`ClientError::Frame`] when the command cannot be encoded.
    pub async fn invoke(
        &self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        cmd.opaque = self.next_opaque();
        cmd.flag &= !FLAG_RESPONSE;
        let frame = encode(&cmd)?;
        let (tx, rx) = oneshot::channel();
        self.shared.register(cmd.opaque, tx)?;
        let _guard = PendingGuard {
            shared: &self.shared,
            opaque: cmd.opaque,
        };
        let call = async {
            self.outgoing
                .send(frame)
                .await
                .map_err(|_| ClientError::Closed)?;
            rx.await.map_err(|_| ClientError::Closed)
        };
        // The test client has no Clock; a real-time bound on each call is what callers want.
        #[allow(clippy::disallowed_methods)]
        let result = tokio::time::timeout(timeout, call).await;
        result.map_err(|_| ClientError::Timeout)?
    }

    /// Sends a one-way request (flag bit 1 set, fresh opaque); no reply is expected.
    ///
    /// # Errors
    /// [`ClientError::Closed`] or [`ClientError::Frame`].
    pub async fn invoke_oneway(&self, mut cmd: RemotingCommand) -> Result<(), ClientError> {
        cmd.opaque = self.next_opaque();
        cmd.flag = (cmd.flag & !FLAG_RESPONSE) | FLAG_ONEWAY;
        self.send(&cmd).await
    }

    /// Writes a command exactly as given (its opaque and flag untouched): replies to server
    /// requests, or requests that mimic clients which never set the one-way bit.
    ///
    /// # Errors
    /// [`ClientError::Closed`] or [`ClientError::Frame`].
    pub async fn send(&self, cmd: &RemotingCommand) -> Result<(), ClientError> {
        let frame = encode(cmd)?;
        self.outgoing
            .send(frame)
            .await
            .map_err(|_| ClientError::Closed)
    }

    /// Writes arbitrary bytes to the connection (malformed-input tests).
    ///
    /// # Errors
    /// [`ClientError::Closed`] when the writer has stopped.
    pub async fn send_raw(&self, bytes: impl Into<Bytes>) -> Result<(), ClientError> {
        self.outgoing
            .send(bytes.into())
            .await
            .map_err(|_| ClientError::Closed)
    }

    /// The queue of requests the server sent on this connection (NOTIFY_CONSUMER_IDS_CHANGED,
    /// CHECK_TRANSACTION_STATE, …). Returns it once; `None` afterwards. Requests arriving
    /// while the queue is full are dropped, so the reader never stalls replies.
    pub fn server_requests(&self) -> Option<mpsc::Receiver<RemotingCommand>> {
        self.server_requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// True once the reader has stopped.
    pub fn is_closed(&self) -> bool {
        self.shared.lock().closed.is_some()
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<String> {
        self.shared.lock().closed.clone()
    }
}

impl Drop for RemotingClient {
    fn drop(&mut self) {
        self.reader.abort();
        self.shared.close("client dropped".to_owned());
    }
}

fn encode(cmd: &RemotingCommand) -> Result<Bytes, ClientError> {
    let mut buf = BytesMut::new();
    cmd.try_encode(&mut buf)?;
    Ok(buf.freeze())
}

async fn read_loop(
    mut frames: FramedRead<OwnedReadHalf, RemotingCodec>,
    shared: Arc<Shared>,
    requests: mpsc::Sender<RemotingCommand>,
) {
    let reason = loop {
        match frames.next().await {
            Some(Ok(cmd)) if cmd.is_response() => match shared.take(cmd.opaque) {
                Some(waiter) => {
                    // The caller may have given up (timeout); nothing to do then.
                    let _ = waiter.send(cmd);
                }
                None => tracing::debug!(opaque = cmd.opaque, "response with no pending request"),
            },
            Some(Ok(cmd)) => {
                if let Err(e) = requests.try_send(cmd) {
                    tracing::debug!(error = %e, "server request dropped");
                }
            }
            Some(Err(e)) => break e.to_string(),
            None => break "connection closed by the server".to_owned(),
        }
    };
    shared.close(reason);
}

async fn write_loop(
    mut frames: mpsc::Receiver<Bytes>,
    mut socket: OwnedWriteHalf,
    shared: Arc<Shared>,
) {
    while let Some(frame) = frames.recv().await {
        if let Err(e) = socket.write_all(&frame).await {
            shared.close(format!("write failed: {e}"));
            return;
        }
    }
    let _ = socket.shutdown().await;
}
