//! Subscription groups: meta's records seen as RocketMQ's `SubscriptionGroupConfig`, the
//! reference's predefined system groups, auto-creation at a consumer's heartbeat or pull, and
//! a short-lived cache so heartbeats and pulls do not read meta each time.
//!
//! Mirrors `SubscriptionGroupManager`: the predefined groups are always there with the
//! default config (as on a reference broker after a restart, whatever was deleted); an
//! unknown group is created with the defaults when `broker.auto_create_subscription_group`
//! is on, or when it is a system group (`CID_RMQ_SYS_…`, `enableCreateSysGroup`), and its
//! name is legal. Groups live in meta, so they are the cluster's, whichever node or shard an
//! operator asked; this node's cache of them lives [`CACHE_TTL_MS`], so a change made through
//! another node reaches this node's heartbeats and pulls within that time (admin requests
//! read meta).

use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;
use stratus_compat::request::group::{
    SYSTEM_GROUP_PREFIX, SYSTEM_GROUPS, SubscriptionGroupConfigBody, is_valid_group_name,
};
use stratus_compat::types::ConsumerGroup;
use stratus_meta::SubscriptionGroupConfig;
use tracing::{info, warn};

use crate::error::{GatewayError, Result};
use crate::node::Node;

/// How long a group looked up for a heartbeat or pull is trusted.
pub(crate) const CACHE_TTL_MS: i64 = 30_000;
/// How long a heartbeat or pull waits for meta when a stale entry could answer.
const STALE_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
/// Most groups remembered.
const MAX_CACHED: usize = 10_000;

#[derive(Debug, Clone)]
struct Cached {
    config: Option<SubscriptionGroupConfigBody>,
    at_ms: i64,
}

/// The groups as this node sees them.
#[derive(Debug)]
pub(crate) struct Groups {
    auto_create: bool,
    cache: Mutex<HashMap<String, Cached>>,
}

/// True for one of the reference's predefined groups.
pub(crate) fn is_predefined(name: &str) -> bool {
    SYSTEM_GROUPS.contains(&name)
}

/// Meta's record as the protocol's config: the stored details, then the typed columns.
pub(crate) fn to_body(rec: &SubscriptionGroupConfig) -> SubscriptionGroupConfigBody {
    let mut body = rec
        .details
        .as_deref()
        .and_then(|d| serde_json::from_str::<SubscriptionGroupConfigBody>(d).ok())
        .unwrap_or_else(|| SubscriptionGroupConfigBody::new(rec.group.as_str()));
    body.group_name = rec.group.as_str().to_owned();
    body.consume_enable = rec.consume_enable;
    body.consume_broadcast_enable = rec.consume_broadcast_enable;
    body.retry_queue_nums = rec.retry_queue_nums;
    body.retry_max_times = rec.retry_max_times;
    body
}

/// The protocol's config as meta's record (everything kept in `details`).
pub(crate) fn to_record(body: &SubscriptionGroupConfigBody) -> Result<SubscriptionGroupConfig> {
    let details =
        serde_json::to_string(body).map_err(|e| GatewayError::EncodeBody(e.to_string()))?;
    Ok(SubscriptionGroupConfig {
        group: ConsumerGroup::new(body.group_name.clone()),
        consume_enable: body.consume_enable,
        consume_broadcast_enable: body.consume_broadcast_enable,
        retry_queue_nums: body.retry_queue_nums,
        retry_max_times: body.retry_max_times,
        details: Some(details),
    })
}

impl Groups {
    /// Groups auto-created at heartbeats when `auto_create`.
    pub(crate) fn new(auto_create: bool) -> Self {
        Self {
            auto_create,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The group `name` from meta, else a predefined group's default, else `None`.
    pub(crate) async fn get(
        &self,
        node: &Node,
        name: &str,
    ) -> Result<Option<SubscriptionGroupConfigBody>> {
        let stored = node.meta.get_group(&ConsumerGroup::new(name)).await?;
        let found = match stored {
            Some(rec) => Some(to_body(&rec)),
            None if is_predefined(name) => Some(SubscriptionGroupConfigBody::new(name)),
            None => None,
        };
        Ok(found)
    }

    /// `findSubscriptionGroupConfig`: the group, created with the defaults when it is
    /// missing and may be auto-created; `None` when it is missing and may not.
    pub(crate) async fn find_or_create(
        &self,
        node: &Node,
        name: &str,
    ) -> Result<Option<SubscriptionGroupConfigBody>> {
        if let Some(found) = self.get(node, name).await? {
            return Ok(Some(found));
        }
        if !self.may_create(name) {
            return Ok(None);
        }
        let body = SubscriptionGroupConfigBody::new(name);
        node.meta.put_group(&to_record(&body)?).await?;
        info!(group = name, "subscription group auto-created");
        Ok(Some(body))
    }

    /// [`find_or_create`](Self::find_or_create) through the cache, for heartbeats and pulls.
    /// Meta failing never refuses a heartbeat or pull: a stale entry is used when meta fails
    /// or takes longer than [`STALE_WAIT`] (and trusted for another [`CACHE_TTL_MS`]), else
    /// the default config (not remembered, so the next request asks meta again).
    pub(crate) async fn find_cached(
        &self,
        node: &Node,
        name: &str,
    ) -> Option<SubscriptionGroupConfigBody> {
        let now = node.clock.now_ms();
        let cached = self.cache.lock().get(name).cloned();
        if let Some(c) = &cached
            && now - c.at_ms < CACHE_TTL_MS
        {
            return c.config.clone();
        }
        let looked_up = match &cached {
            // A stale entry to fall back on: meta gets a short wait, as the order config of
            // route lookups does.
            Some(_) => tokio::time::timeout(STALE_WAIT, self.find_or_create(node, name))
                .await
                .unwrap_or_else(|_| {
                    Err(GatewayError::Meta(stratus_meta::MetaError::Unavailable(
                        "subscription group lookup timed out".into(),
                    )))
                }),
            None => self.find_or_create(node, name).await,
        };
        match looked_up {
            Ok(found) => {
                self.remember(name, found.clone(), now);
                found
            }
            Err(e) => {
                warn!(group = name, error = %e, "subscription group lookup failed");
                match cached {
                    Some(c) => {
                        // Trusted for another while: the next heartbeats do not each wait
                        // for meta.
                        self.remember(name, c.config.clone(), now);
                        c.config
                    }
                    None if self.may_create(name) => Some(SubscriptionGroupConfigBody::new(name)),
                    None => None,
                }
            }
        }
    }

    /// Creates or replaces a group.
    pub(crate) async fn put(&self, node: &Node, body: SubscriptionGroupConfigBody) -> Result<()> {
        node.meta.put_group(&to_record(&body)?).await?;
        let name = body.group_name.clone();
        self.remember(&name, Some(body), node.clock.now_ms());
        Ok(())
    }

    /// Deletes a group; true if meta had it.
    pub(crate) async fn delete(&self, node: &Node, name: &str) -> Result<bool> {
        let existed = node.meta.delete_group(&ConsumerGroup::new(name)).await?;
        self.cache.lock().remove(name);
        Ok(existed)
    }

    /// Every group: meta's and the predefined ones, by name.
    pub(crate) async fn all(
        &self,
        node: &Node,
    ) -> Result<BTreeMap<String, SubscriptionGroupConfigBody>> {
        let mut table: BTreeMap<String, SubscriptionGroupConfigBody> = SYSTEM_GROUPS
            .iter()
            .map(|g| ((*g).to_owned(), SubscriptionGroupConfigBody::new(*g)))
            .collect();
        for rec in node.meta.list_groups().await? {
            table.insert(rec.group.as_str().to_owned(), to_body(&rec));
        }
        Ok(table)
    }

    fn may_create(&self, name: &str) -> bool {
        (self.auto_create || name.starts_with(SYSTEM_GROUP_PREFIX)) && is_valid_group_name(name)
    }

    fn remember(&self, name: &str, config: Option<SubscriptionGroupConfigBody>, now_ms: i64) {
        let mut cache = self.cache.lock();
        if cache.len() >= MAX_CACHED && !cache.contains_key(name) {
            // Names come from clients: past the bound, start over rather than grow.
            cache.clear();
        }
        cache.insert(
            name.to_owned(),
            Cached {
                config,
                at_ms: now_ms,
            },
        );
    }
}
