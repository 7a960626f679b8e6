//! The topic table: an in-memory copy of meta's topic configs (so the send path can check a
//! topic without awaiting), name validation and auto-creation rules.
//!
//! Mirrors `TopicValidator` and `TopicConfigManager#createTopicInSendMessageMethod`.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use stratus_compat::types::Topic;
use stratus_meta::{MetaStore, TopicConfig};

use crate::error::{GatewayError, Result};

/// PermName: topic can act as an auto-create template.
pub(crate) const PERM_INHERIT: i32 = 1;
/// PermName: writable.
pub(crate) const PERM_WRITE: i32 = 2;
/// PermName: readable.
pub(crate) const PERM_READ: i32 = 4;

/// The auto-create template topic.
pub(crate) const TBW102: &str = "TBW102";
/// Retry topic prefix.
pub(crate) const RETRY_PREFIX: &str = "%RETRY%";
/// Dead-letter topic prefix.
pub(crate) const DLQ_PREFIX: &str = "%DLQ%";

/// Topics clients may not send to (`TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`).
const NOT_SENDABLE: [&str; 6] = [
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
];

/// System topics never created by users (`TopicValidator.SYSTEM_TOPIC_SET`).
const SYSTEM_TOPICS: [&str; 10] = [
    TBW102,
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC",
];

/// Longest topic name (127 keeps V1 records readable by every client).
pub(crate) const MAX_TOPIC_LEN: usize = 127;

/// Checks a topic name: non-blank, `[%|a-zA-Z0-9_-]`, at most 127 bytes.
///
/// # Errors
/// [`GatewayError::InvalidParameter`] with the reference broker's wording.
pub(crate) fn validate_topic_name(name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(GatewayError::InvalidParameter(
            "The specified topic is blank.".into(),
        ));
    }
    if name.len() > MAX_TOPIC_LEN {
        return Err(GatewayError::InvalidParameter(format!(
            "The specified topic is longer than topic max length {MAX_TOPIC_LEN}."
        )));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        return Err(GatewayError::InvalidParameter(format!(
            "The specified topic[{name}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )));
    }
    Ok(())
}

/// True for topics clients may not send to.
pub(crate) fn is_not_sendable(name: &str) -> bool {
    NOT_SENDABLE.contains(&name)
}

/// True for system topics (not listed as user topics; not creatable by admin).
pub(crate) fn is_system_topic(name: &str) -> bool {
    SYSTEM_TOPICS.contains(&name) || name.starts_with("rmq_sys_")
}

/// The topic table.
#[derive(Debug)]
pub(crate) struct TopicTable {
    meta: Arc<dyn MetaStore>,
    topics: RwLock<HashMap<Topic, TopicConfig>>,
    default_queue_nums: i32,
    auto_create: bool,
}

/// A config with RocketMQ's defaults.
pub(crate) fn topic_config(topic: &str, queues: i32, perm: i32) -> TopicConfig {
    TopicConfig {
        topic: Topic::new(topic),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: 0,
        order: false,
        retention_hours: None,
    }
}

impl TopicTable {
    /// Loads every topic from meta and makes sure `TBW102` exists when auto-create is on.
    pub(crate) async fn load(
        meta: Arc<dyn MetaStore>,
        default_queue_nums: i32,
        auto_create: bool,
    ) -> Result<Self> {
        let table = Self {
            meta: meta.clone(),
            topics: RwLock::new(HashMap::new()),
            default_queue_nums,
            auto_create,
        };
        if auto_create {
            let tbw = topic_config(
                TBW102,
                default_queue_nums,
                PERM_INHERIT | PERM_WRITE | PERM_READ,
            );
            meta.create_topic_if_absent(&tbw).await?;
        }
        let all = meta.list_topics().await?;
        let mut map = table.topics.write();
        for t in all {
            map.insert(t.topic.clone(), t);
        }
        drop(map);
        Ok(table)
    }

    /// The cached config of a topic.
    pub(crate) fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.topics.read().get(&Topic::new(topic)).cloned()
    }

    /// Every topic.
    pub(crate) fn all(&self) -> Vec<TopicConfig> {
        let mut v: Vec<_> = self.topics.read().values().cloned().collect();
        v.sort_by(|a, b| a.topic.cmp(&b.topic));
        v
    }

    /// Reloads every topic from meta (other nodes create, change and delete topics too).
    pub(crate) async fn refresh(&self) -> Result<()> {
        let all = self.meta.list_topics().await?;
        let map: HashMap<Topic, TopicConfig> =
            all.into_iter().map(|t| (t.topic.clone(), t)).collect();
        *self.topics.write() = map;
        Ok(())
    }

    /// Creates or replaces a topic (admin).
    pub(crate) async fn put(&self, config: TopicConfig) -> Result<()> {
        self.meta.put_topic(&config).await?;
        self.topics.write().insert(config.topic.clone(), config);
        Ok(())
    }

    /// Removes a topic.
    pub(crate) async fn delete(&self, topic: &str) -> Result<()> {
        self.meta.delete_topic(&Topic::new(topic)).await?;
        self.topics.write().remove(&Topic::new(topic));
        Ok(())
    }

    /// Creates `config` unless a topic of that name exists; returns what is stored.
    pub(crate) async fn create_if_absent(&self, config: TopicConfig) -> Result<TopicConfig> {
        let stored = self.meta.create_topic_if_absent(&config).await?;
        self.topics
            .write()
            .insert(stored.topic.clone(), stored.clone());
        Ok(stored)
    }

    /// Route-lookup auto-creation: an unknown, valid topic gets the default queue count
    /// (retry and dead-letter topics one queue, perm 6). `None` when auto-create is off or
    /// the name is invalid.
    pub(crate) async fn get_or_auto_create(&self, topic: &str) -> Result<Option<TopicConfig>> {
        if let Some(t) = self.get(topic) {
            return Ok(Some(t));
        }
        if validate_topic_name(topic).is_err() {
            return Ok(None);
        }
        // Another node may have created it since the last refresh.
        if let Some(t) = self.meta.get_topic(&Topic::new(topic)).await? {
            self.topics.write().insert(t.topic.clone(), t.clone());
            return Ok(Some(t));
        }
        if topic.starts_with(RETRY_PREFIX) || topic.starts_with(DLQ_PREFIX) {
            return self
                .create_if_absent(topic_config(topic, 1, PERM_READ | PERM_WRITE))
                .await
                .map(Some);
        }
        if !self.auto_create || is_system_topic(topic) {
            return Ok(None);
        }
        self.create_if_absent(topic_config(
            topic,
            self.default_queue_nums,
            PERM_READ | PERM_WRITE,
        ))
        .await
        .map(Some)
    }

    /// Send-path auto-creation (`createTopicInSendMessageMethod`): from template
    /// `default_topic` when it exists and has PERM_INHERIT, with
    /// `min(requested, template write queues)` queues; retry topics with one queue.
    pub(crate) async fn auto_create_on_send(
        &self,
        topic: &str,
        default_topic: &str,
        requested_queues: i32,
    ) -> Result<Option<TopicConfig>> {
        if let Some(t) = self.get(topic) {
            return Ok(Some(t));
        }
        if topic.starts_with(RETRY_PREFIX) || topic.starts_with(DLQ_PREFIX) {
            return self
                .create_if_absent(topic_config(topic, 1, PERM_READ | PERM_WRITE))
                .await
                .map(Some);
        }
        if !self.auto_create {
            return Ok(None);
        }
        let Some(template) = self.get(default_topic) else {
            return Ok(None);
        };
        if template.perm & PERM_INHERIT == 0 {
            return Ok(None);
        }
        let queues = requested_queues.min(template.write_queue_nums).max(1);
        let mut cfg = topic_config(topic, queues, template.perm & !PERM_INHERIT);
        cfg.topic_filter_type = template.topic_filter_type.clone();
        self.create_if_absent(cfg).await.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_the_reference_rules() {
        assert!(validate_topic_name("Topic_A-1").is_ok());
        assert!(validate_topic_name("%RETRY%group").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name("   ").is_err());
        assert!(validate_topic_name("bad topic").is_err());
        assert!(validate_topic_name("bad/topic").is_err());
        assert!(validate_topic_name(&"a".repeat(128)).is_err());
        assert!(validate_topic_name(&"a".repeat(127)).is_ok());
    }

    #[test]
    fn reserved_topics_are_recognised() {
        assert!(is_not_sendable("SCHEDULE_TOPIC_XXXX"));
        assert!(!is_not_sendable("RMQ_SYS_TRACE_TOPIC"));
        assert!(is_system_topic("TBW102"));
        assert!(is_system_topic("rmq_sys_wheel_timer"));
        assert!(!is_system_topic("orders"));
    }
}
