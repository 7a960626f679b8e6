//! END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39) headers
//! (`docs/remoting-protocol.md#transactions`).

use crate::command::RemotingCommand;
use crate::error::HeaderError;

use super::{opt_bool, opt_str, req_num, req_str};

/// `commitOrRollback`: still pending (no action).
pub const TRANSACTION_NOT_TYPE: i32 = 0;
/// `commitOrRollback`: commit.
pub const TRANSACTION_COMMIT_TYPE: i32 = 8;
/// `commitOrRollback`: roll back.
pub const TRANSACTION_ROLLBACK_TYPE: i32 = 12;

/// EndTransactionRequestHeader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTransactionRequestHeader {
    /// Must equal the half message's `PGROUP`.
    pub producer_group: String,
    /// The half message's offset in the half queue (send response `queueOffset`).
    pub tran_state_table_offset: i64,
    /// The half message's commit-log handle (decoded from the send response `msgId`).
    pub commit_log_offset: i64,
    /// 0, 8 or 12.
    pub commit_or_rollback: i32,
    /// True when answering a check-back (C++ sends "1").
    pub from_transaction_check: bool,
    /// UNIQ_KEY of the message.
    pub msg_id: String,
    /// Transaction id.
    pub transaction_id: Option<String>,
    /// Broker name the client targets.
    pub broker_name: Option<String>,
}

impl EndTransactionRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            producer_group: req_str(cmd, "producerGroup")?,
            tran_state_table_offset: req_num(cmd, "tranStateTableOffset")?,
            commit_log_offset: req_num(cmd, "commitLogOffset")?,
            commit_or_rollback: req_num(cmd, "commitOrRollback")?,
            from_transaction_check: opt_bool(cmd, "fromTransactionCheck").unwrap_or(false),
            msg_id: req_str(cmd, "msgId")?,
            transaction_id: opt_str(cmd, "transactionId").filter(|s| !s.is_empty()),
            broker_name: opt_str(cmd, "bname"),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("producerGroup", &self.producer_group);
        cmd.put_ext("tranStateTableOffset", self.tran_state_table_offset);
        cmd.put_ext("commitLogOffset", self.commit_log_offset);
        cmd.put_ext("commitOrRollback", self.commit_or_rollback);
        cmd.put_ext("fromTransactionCheck", self.from_transaction_check);
        cmd.put_ext("msgId", &self.msg_id);
        if let Some(t) = &self.transaction_id {
            cmd.put_ext("transactionId", t);
        }
        if let Some(b) = &self.broker_name {
            cmd.put_ext("bname", b);
        }
    }
}

/// CheckTransactionStateRequestHeader (server → producer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckTransactionStateRequestHeader {
    /// Half-queue offset.
    pub tran_state_table_offset: i64,
    /// Half message commit-log handle.
    pub commit_log_offset: i64,
    /// UNIQ_KEY.
    pub msg_id: String,
    /// Transaction id (= UNIQ_KEY).
    pub transaction_id: String,
    /// Offset message id of the half message.
    pub offset_msg_id: String,
    /// Half-queue topic (5.x).
    pub topic: Option<String>,
    /// Broker name, echoed by Java clients in their END_TRANSACTION.
    pub broker_name: Option<String>,
}

impl CheckTransactionStateRequestHeader {
    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("tranStateTableOffset", self.tran_state_table_offset);
        cmd.put_ext("commitLogOffset", self.commit_log_offset);
        cmd.put_ext("msgId", &self.msg_id);
        cmd.put_ext("transactionId", &self.transaction_id);
        cmd.put_ext("offsetMsgId", &self.offset_msg_id);
        if let Some(t) = &self.topic {
            cmd.put_ext("topic", t);
        }
        if let Some(b) = &self.broker_name {
            cmd.put_ext("bname", b);
        }
    }

    /// Decodes (client side).
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            tran_state_table_offset: req_num(cmd, "tranStateTableOffset")?,
            commit_log_offset: req_num(cmd, "commitLogOffset")?,
            msg_id: req_str(cmd, "msgId")?,
            transaction_id: opt_str(cmd, "transactionId").unwrap_or_default(),
            offset_msg_id: opt_str(cmd, "offsetMsgId").unwrap_or_default(),
            topic: opt_str(cmd, "topic"),
            broker_name: opt_str(cmd, "bname"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_end_transaction_with_numeric_and_one_zero_booleans_decodes() {
        let mut cmd = RemotingCommand::request(37, 1);
        for (k, v) in [
            ("producerGroup", "PG"),
            ("tranStateTableOffset", "3"),
            ("commitLogOffset", "1234"),
            ("commitOrRollback", "8"),
            ("fromTransactionCheck", "1"),
            ("msgId", "ABC"),
            ("transactionId", ""),
        ] {
            cmd.put_ext(k, v);
        }
        let h = EndTransactionRequestHeader::from_command(&cmd).unwrap();
        assert_eq!(h.commit_or_rollback, TRANSACTION_COMMIT_TYPE);
        assert!(h.from_transaction_check);
        assert_eq!(h.transaction_id, None);
        let mut out = RemotingCommand::request(37, 2);
        h.write_to(&mut out);
        assert_eq!(EndTransactionRequestHeader::from_command(&out).unwrap(), h);
    }
}
