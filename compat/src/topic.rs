//! Topic vocabulary of the protocol: permission bits, the auto-create template, retry and
//! dead-letter prefixes, the broker's system topics and the name rules.
//!
//! Mirrors `PermName`, `TopicValidator` and `MixAll` (retry/DLQ prefixes) of Apache RocketMQ.

use thiserror::Error;

/// Permission bit: the topic may act as an auto-create template (`PermName.PERM_INHERIT`).
pub const PERM_INHERIT: i32 = 1;
/// Permission bit: writable (`PermName.PERM_WRITE`).
pub const PERM_WRITE: i32 = 2;
/// Permission bit: readable (`PermName.PERM_READ`).
pub const PERM_READ: i32 = 4;

/// The auto-create template topic (`TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const TBW102: &str = "TBW102";
/// Prefix of a consumer group's retry topic (`MixAll.RETRY_GROUP_TOPIC_PREFIX`).
pub const RETRY_PREFIX: &str = "%RETRY%";
/// Prefix of a consumer group's dead-letter topic (`MixAll.DLQ_GROUP_TOPIC_PREFIX`).
pub const DLQ_PREFIX: &str = "%DLQ%";
/// Where delay-level messages wait, one queue per level.
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// Where half (prepared) transactional messages are stored.
pub const HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
/// The reference's op-queue of ended half messages (not used by Stratus, reserved).
pub const OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
/// Where 5.x timer messages wait.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
/// Prefix of every 5.x system topic.
pub const SYSTEM_PREFIX: &str = "rmq_sys_";

/// Longest topic name (127 keeps V1 records readable by every client).
pub const MAX_TOPIC_LEN: usize = 127;

/// Topics clients may not send to (`TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`).
const NOT_SENDABLE: [&str; 6] = [
    SCHEDULE_TOPIC,
    HALF_TOPIC,
    OP_HALF_TOPIC,
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
];

/// System topics never created by users (`TopicValidator.SYSTEM_TOPIC_SET`).
const SYSTEM_TOPICS: [&str; 10] = [
    TBW102,
    SCHEDULE_TOPIC,
    "BenchmarkTest",
    HALF_TOPIC,
    "RMQ_SYS_TRACE_TOPIC",
    OP_HALF_TOPIC,
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC",
];

/// Why a topic name is refused, worded as the reference broker words it.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TopicNameError {
    /// Empty or only whitespace.
    #[error("The specified topic is blank.")]
    Blank,
    /// Longer than [`MAX_TOPIC_LEN`].
    #[error("The specified topic is longer than topic max length {MAX_TOPIC_LEN}.")]
    TooLong,
    /// A character outside `[%|a-zA-Z0-9_-]`.
    #[error(
        "The specified topic[{0}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    )]
    IllegalCharacters(String),
}

/// Checks a topic name: non-blank, `[%|a-zA-Z0-9_-]`, at most [`MAX_TOPIC_LEN`] bytes.
///
/// # Errors
/// [`TopicNameError`] for the first rule broken.
pub fn validate_name(name: &str) -> Result<(), TopicNameError> {
    if name.trim().is_empty() {
        return Err(TopicNameError::Blank);
    }
    if name.len() > MAX_TOPIC_LEN {
        return Err(TopicNameError::TooLong);
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        return Err(TopicNameError::IllegalCharacters(name.to_owned()));
    }
    Ok(())
}

/// True for topics clients may not send to.
pub fn is_not_sendable(name: &str) -> bool {
    NOT_SENDABLE.contains(&name)
}

/// The reference's static system topic set (`TopicValidator.SYSTEM_TOPIC_SET` before a
/// broker adds its own), in its order.
pub fn system_topic_set() -> &'static [&'static str] {
    &SYSTEM_TOPICS
}

/// Suffix of a cluster's request-reply topic (`MixAll.REPLY_TOPIC_POSTFIX`).
pub const REPLY_TOPIC_POSTFIX: &str = "REPLY_TOPIC";

/// Prefix of a cluster's POP revive topic (`PopAckConstants.REVIVE_TOPIC`).
pub const REVIVE_TOPIC_PREFIX: &str = "rmq_sys_REVIVE_LOG_";

/// Prefix of a broker's member-sync topic (`TopicValidator.SYNC_BROKER_MEMBER_GROUP_PREFIX`).
pub const SYNC_BROKER_MEMBER_PREFIX: &str = "rmq_sys_SYNC_BROKER_MEMBER_";

/// True for system topics (not listed as user topics; not creatable by admin).
pub fn is_system_topic(name: &str) -> bool {
    SYSTEM_TOPICS.contains(&name) || name.starts_with(SYSTEM_PREFIX)
}

/// True for a retry or dead-letter topic (created on demand with one queue).
pub fn is_retry_or_dlq(name: &str) -> bool {
    name.starts_with(RETRY_PREFIX) || name.starts_with(DLQ_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_reference_rules() {
        assert!(validate_name("OrderTopic").is_ok());
        assert!(validate_name("%RETRY%g|x_y-z").is_ok());
        assert_eq!(validate_name("  "), Err(TopicNameError::Blank));
        assert_eq!(
            validate_name(&"a".repeat(MAX_TOPIC_LEN + 1)),
            Err(TopicNameError::TooLong)
        );
        assert!(validate_name(&"a".repeat(MAX_TOPIC_LEN)).is_ok());
        assert_eq!(
            validate_name("a b"),
            Err(TopicNameError::IllegalCharacters("a b".into()))
        );
        assert!(validate_name("bad/topic").is_err());
        assert!(validate_name("").is_err());
    }

    #[test]
    fn system_and_reserved_topics() {
        assert!(is_system_topic(TBW102));
        assert!(is_system_topic("rmq_sys_wheel_timer"));
        assert!(!is_system_topic("OrderTopic"));
        assert!(is_not_sendable(SCHEDULE_TOPIC));
        assert!(!is_not_sendable(TBW102));
        assert!(is_retry_or_dlq("%DLQ%g") && is_retry_or_dlq("%RETRY%g"));
    }
}
