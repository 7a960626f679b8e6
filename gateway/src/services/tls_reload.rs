//! Reads the TLS files again when they change (`tls.reload_interval`), so a renewed
//! certificate is served to new connections without a restart.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::node::Node;
use crate::tls::Tls;

/// Checks the files every `tls.reload_interval` until `cancel`.
pub(crate) async fn run(node: Arc<Node>, tls: Arc<Tls>, cancel: CancellationToken) {
    let every = tls.settings().reload_interval;
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.clock.sleep(every) => {}
        }
        tls.reload_if_changed();
    }
}
