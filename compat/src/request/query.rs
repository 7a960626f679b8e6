//! QUERY_MESSAGE (12): messages by key or by unique key (the client-side message id).
//!
//! Field names and rules follow Apache RocketMQ 5.3.3's `QueryMessageRequestHeader` /
//! `QueryMessageResponseHeader` (every field `@CFNotNull`) and `QueryMessageProcessor`: the
//! `_UNIQUE_KEY_QUERY` ext field (`MixAll.UNIQUE_MSG_QUERY_FLAG`) set to `true` makes it a
//! unique-key query, for which the broker replaces `maxNum` with its `defaultQueryMaxNum`
//! ([`DEFAULT_QUERY_MAX_NUM`]).

use crate::command::RemotingCommand;
use crate::error::HeaderError;

use super::{opt_str, parse_bool, req_num, req_str};

/// The ext field that marks a unique-key query (`MixAll.UNIQUE_MSG_QUERY_FLAG`).
pub const UNIQUE_KEY_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

/// `MessageStoreConfig.defaultQueryMaxNum`: the answer size of a unique-key query.
pub const DEFAULT_QUERY_MAX_NUM: i32 = 32;

/// `MessageStoreConfig.maxMsgsNumBatch`: the most messages one answer holds.
pub const MAX_MSGS_NUM_BATCH: i32 = 64;

/// QUERY_MESSAGE request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryMessageRequestHeader {
    /// Topic the key was sent to.
    pub topic: String,
    /// A key of the `KEYS` property, or (unique-key query) a `UNIQ_KEY`.
    pub key: String,
    /// Most messages wanted.
    pub max_num: i32,
    /// Earliest store time, ms.
    pub begin_timestamp: i64,
    /// Latest store time, ms.
    pub end_timestamp: i64,
    /// `_UNIQUE_KEY_QUERY` is `true`: `key` is a message's `UNIQ_KEY`.
    pub unique_key: bool,
}

impl QueryMessageRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `topic`, `key`, `maxNum`, `beginTimestamp` or `endTimestamp` is
    /// missing, or a number is malformed.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            topic: req_str(cmd, "topic")?,
            key: req_str(cmd, "key")?,
            max_num: req_num(cmd, "maxNum")?,
            begin_timestamp: req_num(cmd, "beginTimestamp")?,
            end_timestamp: req_num(cmd, "endTimestamp")?,
            unique_key: opt_str(cmd, UNIQUE_KEY_QUERY_FLAG).is_some_and(|v| parse_bool(&v)),
        })
    }

    /// Writes into ext fields (the flag as the Java client does: `true` or `false`).
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("key", &self.key);
        cmd.put_ext("maxNum", self.max_num);
        cmd.put_ext("beginTimestamp", self.begin_timestamp);
        cmd.put_ext("endTimestamp", self.end_timestamp);
        cmd.put_ext(UNIQUE_KEY_QUERY_FLAG, self.unique_key);
    }

    /// How many messages the broker answers with at most: `maxNum`, or
    /// [`DEFAULT_QUERY_MAX_NUM`] for a unique-key query, at most [`MAX_MSGS_NUM_BATCH`]
    /// (as the reference broker and its index service), never below 0.
    pub fn effective_max(&self) -> usize {
        let n = if self.unique_key {
            DEFAULT_QUERY_MAX_NUM
        } else {
            self.max_num
        };
        usize::try_from(n.min(MAX_MSGS_NUM_BATCH)).unwrap_or(0)
    }
}

/// QUERY_MESSAGE response header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryMessageResponseHeader {
    /// Store time up to which the index is complete, ms.
    pub index_last_update_timestamp: i64,
    /// Commit-log offset up to which the index is complete.
    pub index_last_update_phyoffset: i64,
}

impl QueryMessageResponseHeader {
    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("indexLastUpdateTimestamp", self.index_last_update_timestamp);
        cmd.put_ext("indexLastUpdatePhyoffset", self.index_last_update_phyoffset);
    }

    /// Decodes (client side).
    ///
    /// # Errors
    /// [`HeaderError`] when a field is missing or not a number.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            index_last_update_timestamp: req_num(cmd, "indexLastUpdateTimestamp")?,
            index_last_update_phyoffset: req_num(cmd, "indexLastUpdatePhyoffset")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn java_request() -> RemotingCommand {
        let mut cmd = RemotingCommand::request(12, 7);
        for (k, v) in [
            ("topic", "T"),
            ("key", "order-1"),
            ("maxNum", "64"),
            ("beginTimestamp", "0"),
            ("endTimestamp", "9223372036854775807"),
            ("_UNIQUE_KEY_QUERY", "false"),
        ] {
            cmd.put_ext(k, v);
        }
        cmd
    }

    #[test]
    fn java_request_decodes_and_round_trips() {
        let h = QueryMessageRequestHeader::from_command(&java_request()).unwrap();
        assert_eq!(h.topic, "T");
        assert_eq!(h.key, "order-1");
        assert_eq!(h.max_num, 64);
        assert_eq!(h.end_timestamp, i64::MAX);
        assert!(!h.unique_key);
        assert_eq!(h.effective_max(), 64);
        let mut out = RemotingCommand::request(12, 8);
        h.write_to(&mut out);
        assert_eq!(QueryMessageRequestHeader::from_command(&out).unwrap(), h);
    }

    #[test]
    fn unique_key_query_answers_the_default_max_whatever_max_num_says() {
        let mut cmd = java_request();
        cmd.put_ext("_UNIQUE_KEY_QUERY", "true");
        cmd.put_ext("maxNum", "1");
        let h = QueryMessageRequestHeader::from_command(&cmd).unwrap();
        assert!(h.unique_key);
        assert_eq!(h.effective_max(), 32);
    }

    #[test]
    fn a_missing_flag_is_a_key_query_and_a_negative_max_is_zero() {
        let mut cmd = java_request();
        cmd.ext_fields.remove("_UNIQUE_KEY_QUERY");
        cmd.put_ext("maxNum", "-3");
        let h = QueryMessageRequestHeader::from_command(&cmd).unwrap();
        assert!(!h.unique_key);
        assert_eq!(h.effective_max(), 0);
        cmd.put_ext("maxNum", "1000");
        let h = QueryMessageRequestHeader::from_command(&cmd).unwrap();
        assert_eq!(h.effective_max(), 64, "capped at maxMsgsNumBatch");
    }

    #[test]
    fn every_field_is_required_and_numbers_must_parse() {
        for field in ["topic", "key", "maxNum", "beginTimestamp", "endTimestamp"] {
            let mut cmd = java_request();
            cmd.ext_fields.remove(field);
            assert_eq!(
                QueryMessageRequestHeader::from_command(&cmd),
                Err(HeaderError::Missing(field)),
                "{field}"
            );
        }
        for field in ["maxNum", "beginTimestamp", "endTimestamp"] {
            let mut cmd = java_request();
            cmd.put_ext(field, "soon");
            assert!(
                matches!(
                    QueryMessageRequestHeader::from_command(&cmd),
                    Err(HeaderError::Invalid { field: f, .. }) if f == field
                ),
                "{field}"
            );
        }
    }

    #[test]
    fn response_header_round_trips_and_requires_both_fields() {
        let h = QueryMessageResponseHeader {
            index_last_update_timestamp: 1_700_000_000_000,
            index_last_update_phyoffset: 1 << 48 | 77,
        };
        let mut cmd = RemotingCommand::response(1, crate::ResponseCode::Success, None);
        h.write_to(&mut cmd);
        assert_eq!(QueryMessageResponseHeader::from_command(&cmd).unwrap(), h);
        cmd.ext_fields.remove("indexLastUpdatePhyoffset");
        assert!(QueryMessageResponseHeader::from_command(&cmd).is_err());
    }

    proptest! {
        #[test]
        fn request_round_trips(
            topic in "\\PC{0,40}",
            key in "\\PC{0,60}",
            max_num: i32,
            begin: i64,
            end: i64,
            unique: bool,
        ) {
            let h = QueryMessageRequestHeader {
                topic,
                key,
                max_num,
                begin_timestamp: begin,
                end_timestamp: end,
                unique_key: unique,
            };
            let mut cmd = RemotingCommand::request(12, 1);
            h.write_to(&mut cmd);
            prop_assert_eq!(QueryMessageRequestHeader::from_command(&cmd).unwrap(), h);
        }

        #[test]
        fn arbitrary_fields_never_panic(
            fields in proptest::collection::vec(
                (
                    prop_oneof![
                        Just("topic".to_owned()),
                        Just("key".to_owned()),
                        Just("maxNum".to_owned()),
                        Just("beginTimestamp".to_owned()),
                        Just("endTimestamp".to_owned()),
                        Just("_UNIQUE_KEY_QUERY".to_owned()),
                        "\\PC{0,8}",
                    ],
                    "\\PC{0,24}",
                ),
                0..8,
            )
        ) {
            let mut cmd = RemotingCommand::request(12, 1);
            for (k, v) in fields {
                cmd.put_ext(&k, v);
            }
            if let Ok(h) = QueryMessageRequestHeader::from_command(&cmd) {
                let _ = h.effective_max();
            }
            let _ = QueryMessageResponseHeader::from_command(&cmd);
        }
    }
}
