//! Reloads users and ACLs when their version token in meta changes
//! (`auth.refresh_interval`), so a change made through any node is enforced by every node
//! within about one interval. A failed read keeps the rules in force (never opens up); the
//! first failure of a run of them is logged at warn, the rest at debug.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::remoting::Remoting;

/// Polls until `cancel`.
pub(crate) async fn run(rmq: Arc<Remoting>, cancel: CancellationToken) {
    let every = rmq.node.config.auth.refresh_interval;
    let mut failing = false;
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = rmq.node.clock.sleep(every) => {}
        }
        match rmq.auth.refresh(rmq.node.meta.as_ref()).await {
            Ok(reloaded) => {
                if failing {
                    info!("users and ACLs readable in meta again");
                }
                failing = false;
                if reloaded {
                    debug!("users and ACLs reloaded");
                }
            }
            Err(e) if !failing => {
                failing = true;
                warn!(error = %e, "cannot read users and ACLs from meta; the last ones stay in force");
            }
            Err(e) => debug!(error = %e, "users and ACLs still unreadable"),
        }
    }
}
