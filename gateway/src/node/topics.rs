//! The topic table: an in-memory copy of meta's topic configs (so the send path can check a
//! topic without awaiting), name validation and auto-creation rules.
//!
//! Names and permission bits are the protocol's (`stratus_compat::topic`). Auto-creation
//! mirrors `TopicConfigManager#createTopicInSendMessageMethod`.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use stratus_compat::types::Topic;
use stratus_meta::{MetaStore, TopicConfig};

use stratus_compat::topic::{
    PERM_INHERIT, PERM_READ, PERM_WRITE, RETRY_PREFIX, TBW102, is_retry_or_dlq,
};

use crate::error::Result;

pub(crate) use stratus_compat::topic::{is_not_sendable, is_system_topic, validate_name};

/// The topic table.
#[derive(Debug)]
pub(crate) struct TopicTable {
    meta: Arc<dyn MetaStore>,
    topics: RwLock<HashMap<Topic, TopicConfig>>,
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

    /// The topic a route lookup answers for: known here or in meta (another node may have
    /// created it since the last refresh). A lookup never creates an ordinary topic, as the
    /// reference's name server: producers fall back to the default topic's route and the
    /// first send creates it ([`auto_create_on_send`](Self::auto_create_on_send)), so a
    /// misspelled subscription or a deleted topic creates nothing. The one exception is a
    /// group's retry topic (one queue, perm 6): the reference's broker creates it on the
    /// group's first heartbeat, which a consumer's first lookup precedes by milliseconds.
    pub(crate) async fn lookup(&self, topic: &str) -> Result<Option<TopicConfig>> {
        if let Some(t) = self.get(topic) {
            return Ok(Some(t));
        }
        if validate_name(topic).is_err() {
            return Ok(None);
        }
        if let Some(t) = self.meta.get_topic(&Topic::new(topic)).await? {
            self.topics.write().insert(t.topic.clone(), t.clone());
            return Ok(Some(t));
        }
        if topic.starts_with(RETRY_PREFIX) {
            return self
                .create_if_absent(topic_config(topic, 1, PERM_READ | PERM_WRITE))
                .await
                .map(Some);
        }
        Ok(None)
    }

    /// A topic known here or in meta, whatever its name (Kafka allows names RocketMQ does
    /// not); creates nothing.
    pub(crate) async fn lookup_any(&self, topic: &str) -> Result<Option<TopicConfig>> {
        if let Some(t) = self.get(topic) {
            return Ok(Some(t));
        }
        if let Some(t) = self.meta.get_topic(&Topic::new(topic)).await? {
            self.topics.write().insert(t.topic.clone(), t.clone());
            return Ok(Some(t));
        }
        Ok(None)
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
        if is_retry_or_dlq(topic) {
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
