//! Metadata, DescribeCluster and FindCoordinator: which broker (shard) leads each
//! partition and where it is served now, and which broker coordinates a group.
//!
//! Every shard with a known owner is listed as a broker at its owner's advertised Kafka
//! address; a partition's leader is its shard, with the shard's lease epoch as leader
//! epoch, so a shard that moves changes only its leader's address and epoch. Topics that
//! Kafka cannot name (RocketMQ's system, retry and dead-letter topics) are not listed.

use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use stratus_meta::{ShardId, TopicConfig};

use super::dispatch::{Ctx, sb};
use super::{Kafka, partition_index};

/// A Kafka-legal topic name (`[a-zA-Z0-9._-]{1,249}`, not `.` or `..`).
pub(crate) fn legal_kafka_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Whether Kafka clients see `topic`: a Kafka-legal name that is not one of RocketMQ's
/// system topics.
pub(crate) fn visible(topic: &str) -> bool {
    legal_kafka_name(topic) && !crate::node::topics::is_system_topic(topic)
}

/// A topic's stable id: derived from its name, the same on every node.
pub(crate) fn topic_id(topic: &str) -> uuid::Uuid {
    let d = ring::digest::digest(&ring::digest::SHA256, topic.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d.as_ref()[..16]);
    uuid::Builder::from_random_bytes(b).into_uuid()
}

/// The cluster id: derived from the cluster name (22 characters of URL-safe base64, as
/// Kafka's), the same on every node.
pub(crate) fn cluster_id(kafka: &Kafka) -> String {
    use base64::Engine;
    let name = &kafka.node.config.node.cluster_name;
    let d = ring::digest::digest(&ring::digest::SHA256, name.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&d.as_ref()[..16])
}

/// Every shard with a known endpoint: `(shard, host, port)`.
pub(crate) async fn brokers(kafka: &Kafka) -> Vec<(ShardId, String, u16)> {
    let mut out = Vec::new();
    for s in 0..kafka.shards() {
        let shard = ShardId(s);
        if let Some((host, port)) = kafka.shard_endpoint(shard).await {
            out.push((shard, host, port));
        }
    }
    out
}

fn broker_id(shard: ShardId) -> BrokerId {
    BrokerId(i32::try_from(shard.0).unwrap_or(i32::MAX))
}

/// Metadata.
pub(crate) async fn metadata(
    kafka: &Arc<Kafka>,
    ctx: &Ctx,
    req: MetadataRequest,
) -> MetadataResponse {
    let brokers = brokers(kafka).await;
    let mut resp = MetadataResponse::default();
    resp.cluster_id = Some(sb(cluster_id(kafka)));
    resp.controller_id = brokers.first().map_or(BrokerId(-1), |b| broker_id(b.0));
    resp.brokers = brokers
        .iter()
        .map(|(shard, host, port)| {
            let mut b = MetadataResponseBroker::default();
            b.node_id = broker_id(*shard);
            b.host = sb(host.clone());
            b.port = i32::from(*port);
            b
        })
        .collect();
    let names: Vec<String> = match &req.topics {
        None => kafka
            .node
            .topics
            .all()
            .into_iter()
            .map(|t| t.topic.to_string())
            .filter(|t| visible(t))
            .collect(),
        Some(ts) => ts
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.as_str().to_owned()))
            .collect(),
    };
    // v4+: the client says whether a missing topic may be created; before, it may.
    let allow_create = kafka.node.config.kafka.auto_create_topics
        && (ctx.version < 4 || req.allow_auto_topic_creation);
    for name in names {
        let mut t = MetadataResponseTopic::default();
        t.name = Some(TopicName(sb(name.clone())));
        t.topic_id = topic_id(&name);
        if !legal_kafka_name(&name) {
            t.error_code = ResponseError::InvalidTopicException.code();
            resp.topics.push(t);
            continue;
        }
        let cfg = match find_topic(kafka, &name).await {
            Ok(Some(cfg)) => Some(cfg),
            Ok(None) if allow_create && visible(&name) => {
                let partitions = kafka.node.config.kafka.default_partitions;
                match super::admin::create_topic(kafka, &name, partitions).await {
                    Ok(cfg) => Some(cfg),
                    Err(code) => {
                        t.error_code = code;
                        None
                    }
                }
            }
            Ok(None) => {
                t.error_code = ResponseError::UnknownTopicOrPartition.code();
                None
            }
            Err(code) => {
                t.error_code = code;
                None
            }
        };
        if let Some(cfg) = cfg {
            t.is_internal = false;
            t.partitions = partitions(kafka, &cfg, &brokers);
        }
        resp.topics.push(t);
    }
    resp
}

/// A topic's config from the table, else from meta (another node may have created it).
pub(crate) async fn find_topic(kafka: &Kafka, name: &str) -> Result<Option<TopicConfig>, i16> {
    if let Some(t) = kafka.node.topics.get(name) {
        return Ok(Some(t));
    }
    match kafka.node.topics.lookup_any(name).await {
        Ok(t) => Ok(t),
        Err(e) => Err(super::codes::gateway(&e)),
    }
}

fn partitions(
    kafka: &Kafka,
    cfg: &TopicConfig,
    brokers: &[(ShardId, String, u16)],
) -> Vec<MetadataResponsePartition> {
    let shards = kafka.shards();
    let mut out = Vec::new();
    for q in 0..cfg.read_queue_nums.max(0) {
        for s in 0..shards {
            let shard = ShardId(s);
            let mut p = MetadataResponsePartition::default();
            p.partition_index = partition_index(shard, stratus_compat::types::QueueId(q), shards);
            if brokers.iter().any(|b| b.0 == shard) {
                p.leader_id = broker_id(shard);
                p.leader_epoch = kafka.shard_epoch(shard);
                p.replica_nodes = vec![broker_id(shard)];
                p.isr_nodes = vec![broker_id(shard)];
            } else {
                p.error_code = ResponseError::LeaderNotAvailable.code();
                p.leader_id = BrokerId(-1);
                p.leader_epoch = -1;
            }
            out.push(p);
        }
    }
    out.sort_by_key(|p| p.partition_index);
    out
}

/// DescribeCluster.
pub(crate) async fn describe_cluster(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    _req: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let brokers = brokers(kafka).await;
    let mut resp = DescribeClusterResponse::default();
    resp.cluster_id = sb(cluster_id(kafka));
    resp.controller_id = brokers.first().map_or(BrokerId(-1), |b| broker_id(b.0));
    resp.endpoint_type = 1;
    resp.brokers = brokers
        .iter()
        .map(|(shard, host, port)| {
            let mut b = DescribeClusterBroker::default();
            b.broker_id = broker_id(*shard);
            b.host = sb(host.clone());
            b.port = i32::from(*port);
            b
        })
        .collect();
    resp
}

/// The shard whose owner coordinates `key` (a group id): Kafka's `__consumer_offsets`
/// partition rule, `abs(hashCode(key)) % shards`.
pub(crate) fn coordinator_shard(key: &str, shards: u32) -> ShardId {
    let h = stratus_compat::types::java_string_hash(key);
    let h = u32::try_from(h.unsigned_abs() % u64::from(shards.max(1))).unwrap_or(0);
    ShardId(h)
}

/// FindCoordinator: groups only (key type 0); transaction coordinators are not served yet.
pub(crate) async fn find_coordinator(
    kafka: &Arc<Kafka>,
    ctx: &Ctx,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let keys: Vec<String> = if ctx.version >= 4 {
        req.coordinator_keys
            .iter()
            .map(|k| k.as_str().to_owned())
            .collect()
    } else {
        vec![req.key.as_str().to_owned()]
    };
    let mut found = Vec::new();
    for key in keys {
        let mut c = Coordinator::default();
        c.key = sb(key.clone());
        if req.key_type != 0 {
            c.error_code = ResponseError::CoordinatorNotAvailable.code();
            c.error_message = Some(sb("transactions are not supported yet"));
            c.node_id = BrokerId(-1);
            c.port = -1;
        } else {
            let shard = coordinator_shard(&key, kafka.shards());
            match kafka.shard_endpoint(shard).await {
                Some((host, port)) => {
                    c.node_id = broker_id(shard);
                    c.host = sb(host);
                    c.port = i32::from(port);
                }
                None => {
                    c.error_code = ResponseError::CoordinatorNotAvailable.code();
                    c.node_id = BrokerId(-1);
                    c.port = -1;
                }
            }
        }
        found.push(c);
    }
    let mut resp = FindCoordinatorResponse::default();
    if ctx.version < 4 {
        if let Some(c) = found.first() {
            resp.error_code = c.error_code;
            resp.error_message = c.error_message.clone();
            resp.node_id = c.node_id;
            resp.host = c.host.clone();
            resp.port = c.port;
        }
    } else {
        resp.coordinators = found;
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_names_and_visibility() {
        assert!(legal_kafka_name("orders.v1"));
        assert!(!legal_kafka_name("%RETRY%g"));
        assert!(!legal_kafka_name(".."));
        assert!(!legal_kafka_name(&"a".repeat(250)));
        assert!(!visible("TBW102"));
        assert!(!visible("SCHEDULE_TOPIC_XXXX"));
        assert!(visible("orders"));
        assert_eq!(topic_id("a"), topic_id("a"));
        assert_ne!(topic_id("a"), topic_id("b"));
    }

    #[test]
    fn coordinators_spread_over_shards() {
        let shards: std::collections::BTreeSet<_> = (0..50)
            .map(|i| coordinator_shard(&format!("group-{i}"), 3))
            .collect();
        assert_eq!(shards.len(), 3);
        assert_eq!(coordinator_shard("any", 1), ShardId(0));
    }
}
