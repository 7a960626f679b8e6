//! Background services, each a loop `run(…, cancel)` that ends when its token is
//! cancelled. [`start`] is the one place they are started; every token is a child of the
//! node's root token, so cancelling it (the first step of shutdown, in `app.rs`) stops them
//! all, and the node's task tracker awaits them.
//!
//! | service | what it does |
//! | --- | --- |
//! | [`membership`] | heartbeat, lease renewal, fair-share rebalancing, routes, topic reload |
//! | [`delay`] | delivers delay-level messages when due |
//! | [`timers`] | delivers timer messages when due |
//! | [`transaction_check`] | asks producers about half messages left pending |
//! | [`retention`] | drops old sections and deletes unreferenced objects |
//! | [`housekeeping`] | expires client channels and queue locks without heartbeats |
//! | [`metrics_http`] | serves `/metrics` |
//! | [`tls_reload`] | reads the TLS certificate and key again when they change |
//! | [`stats`] | samples the broker statistics |
//! | [`auth_refresh`] | reloads users and ACLs when their version in meta changes |

pub(crate) mod auth_refresh;
pub(crate) mod delay;
pub(crate) mod housekeeping;
pub(crate) mod membership;
pub(crate) mod metrics_http;
pub(crate) mod retention;
pub(crate) mod rocketmq_metrics;
pub(crate) mod stats;
pub(crate) mod timers;
pub(crate) mod tls_reload;
pub(crate) mod transaction_check;

use std::sync::Arc;

use crate::node::Node;
use crate::node::shards::ShardServer;
use crate::remoting::Remoting;

/// Starts every background service on the node's tracker.
pub(crate) fn start(
    node: &Arc<Node>,
    remoting: &Arc<Remoting>,
    front_ends: Vec<Arc<dyn ShardServer>>,
    contact: membership::MetaContact,
    metrics: Option<tokio::net::TcpListener>,
) {
    let t = &node.tracker;
    let token = || node.cancel.child_token();
    t.spawn(membership::run(node.clone(), front_ends, contact, token()));
    t.spawn(retention::run(node.clone(), token()));
    t.spawn(retention::run_orphan_scan(node.clone(), token()));
    t.spawn(delay::run(node.clone(), token()));
    t.spawn(timers::run(node.clone(), token()));
    t.spawn(transaction_check::run(remoting.clone(), token()));
    t.spawn(housekeeping::run(remoting.clone(), token()));
    if remoting.auth.active() {
        t.spawn(auth_refresh::run(remoting.clone(), token()));
    }
    if let Some(tls) = &node.tls {
        t.spawn(tls_reload::run(node.clone(), tls.clone(), token()));
    }
    t.spawn(stats::run(node.clone(), token()));
    if let Some(l) = metrics {
        let state = metrics_http::ScrapeState {
            cache: node.cache.clone(),
            parked: node.parked.clone(),
            max_parked: node.config.limits.max_parked_pulls,
            in_flight: node.in_flight.clone(),
            max_in_flight: node.config.limits.max_in_flight,
            node: Some(node.clone()),
        };
        let tls = node.tls.clone().map(|t| (t, node.clock.clone()));
        t.spawn(metrics_http::run(l, state, tls, token()));
    }
}
