//! END_TRANSACTION (37, `rewrite/transaction.rs` `end`, through dispatch): half messages,
//! commit, rollback, "unknown" and the checks, against the test core.

use std::sync::Arc;

use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::keys;
use stratus_compat::message::sysflag;
use stratus_compat::request::transaction::{
    EndTransactionRequestHeader, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
};
use stratus_compat::topic::HALF_TOPIC;
use stratus_compat::types::CommitLogOffset;
use stratus_compat::{RequestCode, ResponseCode};
use stratus_meta::{HalfMessage, ShardId};
use tokio::sync::mpsc;

use crate::remoting::net::Channel;
use crate::remoting::rewrite::transaction;
use crate::remoting::testing::{
    TestFront, channel, code_of, dispatch, front, handle_of, props, request, send_ok, send_request,
    stored,
};

/// A half message sent to Orders queue 2 by producer group `pg`.
struct Half {
    t: TestFront,
    ch: Arc<Channel>,
    rx: mpsc::Receiver<RemotingCommand>,
    /// Commit-log handle of the half record.
    handle: i64,
    /// Offset in the half queue, as answered.
    queue_offset: i64,
    /// UNIQ_KEY, as answered.
    msg_id: String,
}

async fn half_sent() -> Half {
    let t = front().await;
    let (ch, rx) = channel(1);
    let p = props(&[(keys::TRAN_MSG, "true"), (keys::PGROUP, "pg")]);
    let h = send_ok(&t.rmq, &ch, send_request("Orders", 2, &p, b"order #1")).await;
    assert_eq!(h.queue_id, 2, "answered with the requested queue");
    Half {
        handle: handle_of(&h),
        queue_offset: h.queue_offset,
        msg_id: h.transaction_id.clone().expect("transaction id"),
        t,
        ch,
        rx,
    }
}

impl Half {
    fn end_request(&self, group: &str, commit_or_rollback: i32) -> RemotingCommand {
        request(RequestCode::EndTransaction, |cmd| {
            EndTransactionRequestHeader {
                producer_group: group.into(),
                tran_state_table_offset: self.queue_offset,
                commit_log_offset: self.handle,
                commit_or_rollback,
                from_transaction_check: false,
                msg_id: self.msg_id.clone(),
                transaction_id: Some(self.msg_id.clone()),
                broker_name: None,
            }
            .write_to(cmd);
        })
    }

    /// Runs an END_TRANSACTION through dispatch; what the producer is answered.
    async fn end(&mut self, group: &str, commit_or_rollback: i32) -> Option<RemotingCommand> {
        let cmd = self.end_request(group, commit_or_rollback);
        dispatch(&self.t.rmq, &self.ch, &mut self.rx, cmd).await
    }

    async fn pending(&self) -> Option<HalfMessage> {
        let handle = CommitLogOffset(self.handle);
        self.t
            .rmq
            .node
            .meta
            .half_message(ShardId(0), handle)
            .await
            .unwrap()
    }
}

fn code(resp: Option<RemotingCommand>) -> ResponseCode {
    resp.expect("an answer").response_code()
}

#[tokio::test]
async fn a_half_message_waits_in_the_half_topic_not_in_its_real_topic() {
    let h = half_sent().await;
    assert!(stored(&h.t.rmq, "Orders", 2).await.is_empty());
    let half = stored(&h.t.rmq, HALF_TOPIC, 0).await;
    assert_eq!(half.len(), 1);
    assert_eq!(
        (half[0].queue_offset, half[0].commit_log_offset),
        (h.queue_offset, h.handle)
    );
    let p = half[0].parsed_properties();
    assert_eq!(p.get(keys::REAL_TOPIC), Some("Orders"));
    assert_eq!(p.get(keys::REAL_QID), Some("2"));
    assert_eq!(p.get(keys::TRANSACTION_ID), Some(h.msg_id.as_str()));
    let row = h.pending().await.expect("pending row");
    assert_eq!(row.producer_group.as_str(), "pg");
    assert_eq!(
        (row.real_topic.as_str(), row.real_queue_id.0),
        ("Orders", 2)
    );
    assert_eq!(row.queue_offset.0, h.queue_offset);
}

#[tokio::test]
async fn a_commit_stores_the_real_message_once() {
    let mut h = half_sent().await;
    assert_eq!(
        code(h.end("pg", TRANSACTION_COMMIT_TYPE).await),
        ResponseCode::Success
    );
    let real = stored(&h.t.rmq, "Orders", 2).await;
    assert_eq!(real.len(), 1);
    let m = &real[0];
    assert_eq!(&m.body[..], b"order #1");
    assert_eq!(m.prepared_transaction_offset, h.handle);
    assert_eq!(
        sysflag::transaction_type(m.sys_flag),
        sysflag::TRANSACTION_COMMIT_TYPE
    );
    let p = m.parsed_properties();
    assert_eq!(p.get(keys::UNIQ_KEY), Some(h.msg_id.as_str()));
    for gone in [keys::REAL_TOPIC, keys::REAL_QID, keys::TRAN_MSG] {
        assert_eq!(p.get(gone), None, "{gone} kept");
    }
    assert!(h.pending().await.is_none());
    assert_eq!(
        code(h.end("pg", TRANSACTION_COMMIT_TYPE).await),
        ResponseCode::SystemError
    );
    assert_eq!(stored(&h.t.rmq, "Orders", 2).await.len(), 1);
}

#[tokio::test]
async fn two_commits_at_once_store_the_message_once() {
    let h = half_sent().await;
    let (a, b) = (
        h.end_request("pg", TRANSACTION_COMMIT_TYPE),
        h.end_request("pg", TRANSACTION_COMMIT_TYPE),
    );
    let (ra, rb) = tokio::join!(
        transaction::end(&h.t.rmq, &a),
        transaction::end(&h.t.rmq, &b)
    );
    let codes = [ra.is_ok(), rb.is_ok()];
    assert_eq!(codes.iter().filter(|ok| **ok).count(), 1, "{ra:?} {rb:?}");
    assert_eq!(stored(&h.t.rmq, "Orders", 2).await.len(), 1);
}

#[tokio::test]
async fn a_rollback_never_stores_the_message_and_drops_the_pending_row() {
    let mut h = half_sent().await;
    assert_eq!(
        code(h.end("pg", TRANSACTION_ROLLBACK_TYPE).await),
        ResponseCode::Success
    );
    assert!(h.pending().await.is_none());
    assert_eq!(
        code(h.end("pg", TRANSACTION_COMMIT_TYPE).await),
        ResponseCode::SystemError
    );
    assert!(stored(&h.t.rmq, "Orders", 2).await.is_empty());
}

#[tokio::test]
async fn an_unknown_state_is_not_answered_and_stays_pending() {
    let mut h = half_sent().await;
    assert!(h.end("pg", TRANSACTION_NOT_TYPE).await.is_none());
    let direct = transaction::end(&h.t.rmq, &h.end_request("pg", TRANSACTION_NOT_TYPE)).await;
    assert!(matches!(direct, Ok(None)), "{direct:?}");
    assert!(h.pending().await.is_some());
    assert!(stored(&h.t.rmq, "Orders", 2).await.is_empty());
}

#[tokio::test]
async fn a_wrong_producer_group_is_a_system_error() {
    let mut h = half_sent().await;
    let resp = h
        .end("other", TRANSACTION_COMMIT_TYPE)
        .await
        .expect("an answer");
    assert_eq!(resp.response_code(), ResponseCode::SystemError);
    assert_eq!(resp.remark.as_deref(), Some("The producer group wrong"));
    assert!(h.pending().await.is_some());
    assert!(stored(&h.t.rmq, "Orders", 2).await.is_empty());
}

#[tokio::test]
async fn a_wrong_half_queue_offset_is_a_system_error() {
    let h = half_sent().await;
    let mut cmd = h.end_request("pg", TRANSACTION_COMMIT_TYPE);
    cmd.put_ext("tranStateTableOffset", h.queue_offset + 1);
    let res = transaction::end(&h.t.rmq, &cmd)
        .await
        .map(|r| r.expect("answer"));
    assert_eq!(code_of(&res), ResponseCode::SystemError);
    assert!(h.pending().await.is_some());
}
