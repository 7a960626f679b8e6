//! RequestCode → processor, and the answer: errors become response codes here, through
//! `codes.rs`.
//!
//! Sends are prepared on the connection's reader task, in arrival order (validation and
//! the append do not await), and completed in a spawned task that awaits durability;
//! every other request is spawned whole.
//!
//! Every request holds an [`InFlight`] pair of permits, taken by the connection's reader
//! *before* it reads the frame: one of its connection's (`limits.max_in_flight_per_connection`)
//! and one of the node's (`limits.max_in_flight`). The node's permit is given back when
//! the work is done, before the answer is queued for the writer, so a client that does
//! not read its answers holds only its own connection's permits; the connection's permit
//! is given back once the answer is queued. A parked pull gives both back while it waits.

use std::sync::Arc;

use stratus_compat::code::LanguageCode;
use stratus_compat::command::{FLAG_RESPONSE, RemotingCommand};
use stratus_compat::{RequestCode, ResponseCode, SerializeType};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, debug_span, warn};

use crate::error::GatewayError;
use crate::remoting::Remoting;
use crate::remoting::net::Channel;
use crate::remoting::processor;

/// The two in-flight budgets a request draws from: its connection's and the node's.
#[derive(Debug, Clone)]
pub(crate) struct Budgets {
    pub(crate) connection: Arc<Semaphore>,
    pub(crate) node: Arc<Semaphore>,
}

impl Budgets {
    /// Waits for a permit of each, the connection's first (so a connection waits for the
    /// node's only with a slot of its own free, one waiter per connection: connections take
    /// turns in the node's first-come queue). `None` when a budget is closed.
    pub(crate) async fn acquire(&self) -> Option<InFlight> {
        let connection = self.connection.clone().acquire_owned().await.ok()?;
        let node = self.node.clone().acquire_owned().await.ok()?;
        Some(InFlight {
            budgets: Some(self.clone()),
            connection: Some(connection),
            node: Some(node),
        })
    }
}

/// The permits one request holds (none in processor unit tests).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    budgets: Option<Budgets>,
    connection: Option<OwnedSemaphorePermit>,
    node: Option<OwnedSemaphorePermit>,
}

impl InFlight {
    /// Gives both permits back (a pull about to park).
    pub(crate) fn release(&mut self) {
        self.node = None;
        self.connection = None;
    }

    /// Takes back what [`release`](Self::release) gave, in the same order.
    pub(crate) async fn reacquire(&mut self) {
        let Some(b) = &self.budgets else { return };
        if self.connection.is_none() {
            self.connection = b.connection.clone().acquire_owned().await.ok();
        }
        if self.node.is_none() {
            self.node = b.node.clone().acquire_owned().await.ok();
        }
    }

    /// The work is done: the node's permit goes back before the answer is queued.
    fn work_done(&mut self) {
        self.node = None;
    }
}

/// Handles one request from `channel`, which the reader read holding `permit`.
pub(crate) fn handle(
    rmq: &Arc<Remoting>,
    channel: &Arc<Channel>,
    cmd: RemotingCommand,
    mut permit: InFlight,
    tasks: &TaskTracker,
) {
    let code = RequestCode::from_i32(cmd.code);
    let reply = Reply {
        request: code,
        opaque: cmd.opaque,
        oneway: cmd.is_oneway(),
        serialize_type: if cmd.language == LanguageCode::Cpp {
            SerializeType::Json
        } else {
            cmd.serialize_type
        },
    };
    let span = debug_span!("req", code = %code, opaque = cmd.opaque);
    tracing::trace!(parent: &span, "request");
    let rmq = rmq.clone();
    let ch = channel.clone();
    // Access control, once, before any processor (sends included).
    if rmq.auth.active()
        && let Err(e) = rmq.auth.check(&cmd, ch.peer.ip())
    {
        tasks.spawn(
            async move {
                permit.work_done();
                reply.send(&ch, Err(e)).await;
                drop(permit);
            }
            .instrument(span),
        );
        return;
    }
    match code {
        RequestCode::SendMessage | RequestCode::SendMessageV2 | RequestCode::SendBatchMessage => {
            processor::reply::note_request(&rmq, &ch, &cmd);
            let prepared = span.in_scope(|| processor::send::prepare(&rmq, &ch, &cmd));
            tasks.spawn(
                async move {
                    let res = processor::send::complete(&rmq, prepared, cmd).await;
                    permit.work_done();
                    reply.send(&ch, res).await;
                    drop(permit);
                }
                .instrument(span),
            );
        }
        RequestCode::EndTransaction => {
            tasks.spawn(
                async move {
                    // The reference answers nothing for "still unknown".
                    let res = crate::remoting::rewrite::transaction::end(&rmq, &cmd).await;
                    permit.work_done();
                    match res {
                        Ok(None) => {}
                        Ok(Some(r)) => reply.send(&ch, Ok(r)).await,
                        Err(e) => reply.send(&ch, Err(e)).await,
                    }
                    drop(permit);
                }
                .instrument(span),
            );
        }
        _ => {
            tasks.spawn(
                async move {
                    let res = route(&rmq, &ch, code, cmd, &mut permit).await;
                    permit.work_done();
                    reply.send(&ch, res).await;
                    drop(permit);
                }
                .instrument(span),
            );
        }
    }
}

async fn route(
    rmq: &Arc<Remoting>,
    ch: &Arc<Channel>,
    code: RequestCode,
    cmd: RemotingCommand,
    permit: &mut InFlight,
) -> Result<RemotingCommand, GatewayError> {
    use RequestCode as C;
    match code {
        C::GetRouteinfoByTopic => processor::route::get_route(rmq, &cmd).await,
        C::GetBrokerClusterInfo => processor::route::cluster_info(rmq),
        C::GetAllTopicListFromNameserver => processor::route::topic_list(rmq, None),
        C::GetTopicsByCluster => processor::route::topic_list(rmq, Some(&cmd)),
        C::PutKvConfig | C::GetKvConfig | C::DeleteKvConfig => {
            processor::admin::kv(rmq, code, &cmd).await
        }
        C::PullMessage | C::LitePullMessage => {
            processor::pull::handle_holding(rmq, ch, cmd, permit).await
        }
        C::QueryConsumerOffset => processor::offset::query_consumer_offset(rmq, ch, &cmd).await,
        C::UpdateConsumerOffset => processor::offset::update_consumer_offset(rmq, ch, &cmd).await,
        C::GetMaxOffset => processor::offset::max_offset(rmq, ch, &cmd),
        C::GetMinOffset => processor::offset::min_offset(rmq, ch, &cmd),
        C::GetEarliestMsgStoretime => processor::offset::earliest_store_time(rmq, ch, &cmd).await,
        C::SearchOffsetByTimestamp => processor::offset::search_by_time(rmq, ch, &cmd).await,
        C::HeartBeat => processor::client::heartbeat(rmq, ch, &cmd).await,
        C::UnregisterClient => processor::client::unregister(rmq, ch, &cmd),
        C::GetConsumerListByGroup => processor::client::consumer_list(rmq, &cmd),
        C::ConsumerSendMsgBack => crate::remoting::rewrite::retry::send_back(rmq, &cmd).await,
        C::LockBatchMq => processor::client::lock_batch(rmq, &cmd),
        C::UnlockBatchMq => processor::client::unlock_batch(rmq, &cmd),
        C::CheckClientConfig => processor::client::check_client_config(&cmd),
        C::UpdateAndCreateTopic => processor::admin::create_topic(rmq, &cmd).await,
        C::DeleteTopicInBroker | C::DeleteTopicInNamesrv => {
            processor::admin::delete_topic(rmq, &cmd).await
        }
        C::GetAllTopicConfig => processor::admin::all_topic_config(rmq),
        C::GetBrokerRuntimeInfo => processor::stats::runtime_info(rmq, ch, &cmd).await,
        C::ViewBrokerStatsData => processor::stats::view_broker_stats_data(rmq, ch, &cmd),
        C::GetConsumeStats => processor::stats::consume_stats(rmq, ch, &cmd).await,
        C::GetBrokerConsumeStats => processor::stats::broker_consume_stats(rmq, ch, &cmd).await,
        C::GetAllProducerInfo => processor::stats::all_producer_info(rmq),
        C::GetBrokerConfig => processor::broker_config::get(rmq).await,
        C::UpdateBrokerConfig => processor::broker_config::update(rmq, &cmd).await,
        C::ViewMessageById => processor::admin::view_message(rmq, &cmd).await,
        C::GetConsumerRunningInfo => {
            processor::relay::consumer_running_info(rmq, &cmd, permit).await
        }
        C::ConsumeMessageDirectly => {
            processor::relay::consume_message_directly(rmq, &cmd, permit).await
        }
        C::InvokeBrokerToResetOffset => processor::reset::reset_offset(rmq, ch, &cmd).await,
        C::InvokeBrokerToGetConsumerStatus => {
            processor::reset::consumer_status(rmq, &cmd, permit).await
        }
        C::SendReplyMessage | C::SendReplyMessageV2 => {
            processor::reply::send_reply(rmq, ch, cmd, permit).await
        }
        // Operators' group and consumer views (processor/group.rs, processor/topic_admin.rs).
        C::UpdateAndCreateSubscriptionGroup => processor::group::update_and_create(rmq, &cmd).await,
        C::GetAllSubscriptionGroupConfig => processor::group::all(rmq).await,
        C::GetSubscriptionGroupConfig => processor::group::get(rmq, &cmd).await,
        C::DeleteSubscriptionGroup => processor::group::delete(rmq, ch, &cmd).await,
        C::GetConsumerConnectionList => processor::group::consumer_connections(rmq, ch, &cmd),
        C::GetProducerConnectionList => processor::group::producer_connections(rmq, ch, &cmd),
        C::QueryTopicConsumeByWho => processor::group::consumed_by(rmq, ch, &cmd).await,
        C::QueryTopicsByConsumer => processor::group::topics_of(rmq, ch, &cmd).await,
        C::CloneGroupOffset => processor::group::clone_offsets(rmq, ch, &cmd).await,
        C::GetTopicStatsInfo => processor::topic_admin::stats(rmq, ch, &cmd).await,
        C::GetTopicConfig => processor::topic_admin::config(rmq, &cmd),
        C::GetSystemTopicListFromNs => processor::topic_admin::from_namesrv(rmq),
        C::GetSystemTopicListFromBroker => processor::topic_admin::from_broker(rmq, ch, &cmd),
        C::QueryMessage => processor::query::query_message(rmq, ch, &cmd).await,
        C::AuthCreateUser
        | C::AuthUpdateUser
        | C::AuthDeleteUser
        | C::AuthGetUser
        | C::AuthListUser
        | C::AuthCreateAcl
        | C::AuthUpdateAcl
        | C::AuthDeleteAcl
        | C::AuthGetAcl
        | C::AuthListAcl => processor::auth::handle(rmq, code, &cmd).await,
        other => Err(GatewayError::NotSupported {
            code: other.to_i32(),
        }),
    }
}

/// How to answer a request.
#[derive(Debug, Clone, Copy)]
struct Reply {
    /// Counted with the response code in `stratus_gateway_requests_total`.
    request: RequestCode,
    opaque: i32,
    oneway: bool,
    serialize_type: SerializeType,
}

impl Reply {
    async fn send(self, ch: &Channel, res: Result<RemotingCommand, GatewayError>) {
        if matches!(res, Err(GatewayError::ConnectionClosed)) {
            // Given up because the connection is closing (a parked pull): no answer.
            return;
        }
        let mut resp = match res {
            Ok(r) => r,
            Err(e) => {
                let code = e.response_code();
                match &e {
                    GatewayError::Segment(_) | GatewayError::Meta(_) => {
                        warn!(error = %e, "request failed")
                    }
                    _ => debug!(error = %e, code = %code, "request refused"),
                }
                RemotingCommand::response(self.opaque, code, Some(e.remark()))
            }
        };
        crate::metrics::observe_response(self.request, resp.code);
        if self.oneway {
            return;
        }
        resp.opaque = self.opaque;
        resp.flag = FLAG_RESPONSE;
        resp.serialize_type = self.serialize_type;
        ch.send(resp).await;
    }
}

/// A SUCCESS response with no header (processors add fields).
pub(crate) fn success() -> RemotingCommand {
    RemotingCommand::response(0, ResponseCode::Success, None)
}

/// A response with `code` and a remark.
pub(crate) fn respond(code: ResponseCode, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(0, code, Some(remark.into()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn budgets(connection: usize, node: usize) -> Budgets {
        Budgets {
            connection: Arc::new(Semaphore::new(connection)),
            node: Arc::new(Semaphore::new(node)),
        }
    }

    async fn pending(b: &Budgets) -> bool {
        tokio::time::timeout(Duration::from_millis(20), b.acquire())
            .await
            .is_err()
    }

    #[tokio::test]
    async fn a_connection_at_its_limit_waits_and_the_answer_path_frees_the_node_first() {
        let node = Arc::new(Semaphore::new(3));
        let a = Budgets {
            connection: Arc::new(Semaphore::new(2)),
            node: node.clone(),
        };
        let b = Budgets {
            connection: Arc::new(Semaphore::new(2)),
            node: node.clone(),
        };
        let mut a1 = a.acquire().await.unwrap();
        let _a2 = a.acquire().await.unwrap();
        assert!(pending(&a).await, "a third request on a is not read");
        let _b1 = b.acquire().await.unwrap();
        assert!(pending(&b).await, "the node is full");
        // a1's work is done and its answer waits for the writer: the node's slot is free,
        // its connection's is not.
        a1.work_done();
        assert_eq!(node.available_permits(), 1);
        assert!(pending(&a).await);
        let _b2 = b.acquire().await.unwrap();
        drop(a1);
        assert_eq!(a.connection.available_permits(), 1);
    }

    #[tokio::test]
    async fn a_parked_request_holds_nothing_and_takes_both_back() {
        let b = budgets(1, 1);
        let mut p = b.acquire().await.unwrap();
        p.release();
        assert_eq!(b.connection.available_permits(), 1);
        assert_eq!(b.node.available_permits(), 1);
        let other = b.acquire().await.unwrap();
        let mut back = Box::pin(p.reacquire());
        assert!(
            tokio::time::timeout(Duration::from_millis(20), &mut back)
                .await
                .is_err(),
            "waits while another request holds the slots"
        );
        drop(other);
        back.await;
        assert_eq!(b.connection.available_permits(), 0);
        assert_eq!(b.node.available_permits(), 0);
        // Without budgets (processor unit tests) it is a no-op.
        let mut none = InFlight::default();
        none.release();
        none.reacquire().await;
    }
}
