//! The transaction check service: every `transaction.check_interval`, each owned shard's
//! half messages pending past their check time are sent to one live producer of their group
//! (CHECK_TRANSACTION_STATE, one-way), at most `transaction.max_checks` times. Mirrors
//! `TransactionalMessageServiceImpl#check`.

use std::sync::Arc;

use stratus_compat::RequestCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::id::create_offset_msg_id;
use stratus_compat::request::transaction::CheckTransactionStateRequestHeader;
use stratus_compat::topic::HALF_TOPIC;
use stratus_meta::ShardId;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::error::Result;
use crate::node::shards::shard_name;
use crate::remoting::Remoting;
use crate::remoting::rewrite::transaction::check_body;

/// The check-back loop: every `transaction.check_interval`, each owned shard's due half
/// messages are checked with one live producer of their group.
pub(crate) async fn run(rmq: Arc<Remoting>, cancel: CancellationToken) {
    let every = rmq.node.config.transaction.check_interval;
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = rmq.node.clock.sleep(every) => {}
        }
        for (shard, _) in rmq.node.shards.all() {
            if let Err(e) = check_shard(&rmq, shard).await {
                warn!(%shard, error = %e, "transaction check round failed; will retry");
            }
        }
    }
}

async fn check_shard(rmq: &Arc<Remoting>, shard: ShardId) -> Result<()> {
    let now = rmq.node.clock.now_ms();
    let cfg = &rmq.node.config.transaction;
    let interval_ms = crate::config::millis(cfg.check_interval);
    for half in rmq.node.meta.due_half_messages(shard, now, 1000).await? {
        if rmq.transactions.is_ending(shard, half.handle) {
            continue;
        }
        if half.check_times >= cfg.max_checks {
            if cfg.discard_after_max_checks {
                warn!(%shard, handle = half.handle.0, group = %half.producer_group, checks = half.check_times,
                    "half message discarded after the last check-back");
                rmq.node
                    .meta
                    .resolve_half_message(shard, half.handle)
                    .await?;
            } else {
                warn!(%shard, handle = half.handle.0, group = %half.producer_group, checks = half.check_times,
                    "half message kept pending; no more check-backs");
                rmq.node
                    .meta
                    .record_half_check(shard, half.handle, half.check_times, i64::MAX)
                    .await?;
            }
            continue;
        }
        let Some(channel) = rmq
            .registry
            .producer_channels(half.producer_group.as_str())
            .into_iter()
            .next()
        else {
            debug!(%shard, group = %half.producer_group, "no live producer of the group; check later");
            continue;
        };
        let Some(record) = rmq.node.read_by_handle(half.handle).await? else {
            warn!(%shard, handle = half.handle.0, "half message record missing; dropping its pending state");
            rmq.node
                .meta
                .resolve_half_message(shard, half.handle)
                .await?;
            continue;
        };
        let checks = half.check_times + 1;
        let body = check_body(&half, record, checks)?;
        let mut cmd = RemotingCommand::request(RequestCode::CheckTransactionState.to_i32(), 0);
        CheckTransactionStateRequestHeader {
            tran_state_table_offset: half.queue_offset.0,
            commit_log_offset: half.handle.0,
            msg_id: half.transaction_id.clone(),
            transaction_id: half.transaction_id.clone(),
            offset_msg_id: create_offset_msg_id(rmq.node.store_host, half.handle.0),
            topic: Some(HALF_TOPIC.to_owned()),
            broker_name: Some(shard_name(shard)),
        }
        .write_to(&mut cmd);
        cmd.body = body;
        channel.oneway(cmd);
        rmq.node
            .meta
            .record_half_check(shard, half.handle, checks, now.saturating_add(interval_ms))
            .await?;
        info!(%shard, handle = half.handle.0, group = %half.producer_group, checks, peer = %channel.peer, "transaction check-back sent");
    }
    Ok(())
}
