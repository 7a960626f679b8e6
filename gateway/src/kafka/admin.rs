//! Topic administration over Kafka: CreateTopics, DeleteTopics, CreatePartitions and
//! DescribeConfigs, on the same topic table RocketMQ's admin codes use.
//!
//! A topic created here gets `ceil(partitions / shards)` queues on each shard (so its
//! partition count is rounded up to a multiple of the shard count, and the answer says the
//! count made). Replication factors are accepted and not kept: every partition's data is
//! in the object store, and metadata names the leader as its only replica. Of the topic
//! configs, `retention.ms` is kept (as the topic's retention, in whole hours); the others
//! are accepted and not kept, and DescribeConfigs reports what Stratus does.

use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::*;
use stratus_compat::topic::{PERM_READ, PERM_WRITE};
use stratus_meta::TopicConfig;

use super::Kafka;
use super::dispatch::{Ctx, sb};
use super::metadata::{find_topic, legal_kafka_name, topic_id, visible};

/// Most queues per shard a topic may have.
const MAX_QUEUES: i32 = 1024;

fn queues_for(partitions: i32, shards: u32) -> i32 {
    let s = i32::try_from(shards.max(1)).unwrap_or(1);
    (partitions + s - 1) / s
}

/// Creates `name` with at least `partitions` partitions; the error is a Kafka code.
pub(crate) async fn create_topic(
    kafka: &Kafka,
    name: &str,
    partitions: i32,
) -> Result<TopicConfig, i16> {
    let cfg = new_topic(kafka, name, partitions)?;
    kafka
        .node
        .topics
        .create_if_absent(cfg)
        .await
        .map_err(|e| super::codes::gateway(&e))
}

fn new_topic(kafka: &Kafka, name: &str, partitions: i32) -> Result<TopicConfig, i16> {
    if !visible(name) {
        return Err(ResponseError::InvalidTopicException.code());
    }
    let queues = queues_for(partitions, kafka.shards());
    if !(1..=MAX_QUEUES).contains(&queues) {
        return Err(ResponseError::InvalidPartitions.code());
    }
    Ok(crate::node::topics::topic_config(
        name,
        queues,
        PERM_READ | PERM_WRITE,
    ))
}

/// CreateTopics.
pub(crate) async fn create_topics(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let mut resp = CreateTopicsResponse::default();
    for t in req.topics {
        let name = t.name.as_str().to_owned();
        let mut r = CreatableTopicResult::default();
        r.name = t.name.clone();
        r.topic_id = topic_id(&name);
        r.num_partitions = -1;
        r.replication_factor = -1;
        let partitions = if t.num_partitions == -1 {
            kafka.node.config.kafka.default_partitions
        } else {
            t.num_partitions
        };
        let outcome = async {
            if !legal_kafka_name(&name) || !visible(&name) {
                return Err((
                    ResponseError::InvalidTopicException.code(),
                    "illegal topic name",
                ));
            }
            if partitions < 1 {
                return Err((
                    ResponseError::InvalidPartitions.code(),
                    "number of partitions must be larger than 0",
                ));
            }
            if t.replication_factor < -1 || t.replication_factor == 0 {
                return Err((
                    ResponseError::InvalidReplicationFactor.code(),
                    "replication factor must be larger than 0",
                ));
            }
            if find_topic(kafka, &name)
                .await
                .map_err(|c| (c, "meta"))?
                .is_some()
            {
                return Err((
                    ResponseError::TopicAlreadyExists.code(),
                    "topic already exists",
                ));
            }
            let mut cfg =
                new_topic(kafka, &name, partitions).map_err(|c| (c, "too many partitions"))?;
            for c in &t.configs {
                if c.name.as_str() == "retention.ms"
                    && let Some(ms) = c
                        .value
                        .as_ref()
                        .and_then(|v| v.as_str().parse::<i64>().ok())
                    && ms > 0
                {
                    cfg.retention_hours = Some((ms + 3_599_999) / 3_600_000);
                }
            }
            if req.validate_only {
                return Ok(cfg);
            }
            let stored = kafka
                .node
                .topics
                .create_if_absent(cfg.clone())
                .await
                .map_err(|e| (super::codes::gateway(&e), "cannot create"))?;
            if stored != cfg {
                return Err((
                    ResponseError::TopicAlreadyExists.code(),
                    "topic already exists",
                ));
            }
            Ok(stored)
        }
        .await;
        match outcome {
            Ok(cfg) => {
                r.num_partitions = super::partition_count(cfg.read_queue_nums, kafka.shards());
                r.replication_factor = 1;
            }
            Err((code, why)) => {
                r.error_code = code;
                r.error_message = Some(sb(why));
            }
        }
        resp.topics.push(r);
    }
    resp
}

/// DeleteTopics (by name; v6 may name topics by id).
pub(crate) async fn delete_topics(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let mut names: Vec<(Option<String>, uuid::Uuid)> = req
        .topic_names
        .iter()
        .map(|n| (Some(n.as_str().to_owned()), uuid::Uuid::nil()))
        .collect();
    names.extend(
        req.topics
            .iter()
            .map(|t| (t.name.as_ref().map(|n| n.as_str().to_owned()), t.topic_id)),
    );
    let mut resp = DeleteTopicsResponse::default();
    for (name, id) in names {
        let name = match name {
            Some(n) => Some(n),
            None => kafka
                .node
                .topics
                .all()
                .into_iter()
                .map(|t| t.topic.to_string())
                .find(|t| topic_id(t) == id),
        };
        let mut r = DeletableTopicResult::default();
        r.topic_id = id;
        match name {
            None => r.error_code = ResponseError::UnknownTopicId.code(),
            Some(name) => {
                r.name = Some(TopicName(sb(name.clone())));
                r.topic_id = topic_id(&name);
                r.error_code = match find_topic(kafka, &name).await {
                    Ok(Some(_)) if visible(&name) => match kafka.node.topics.delete(&name).await {
                        Ok(()) => 0,
                        Err(e) => super::codes::gateway(&e),
                    },
                    Ok(_) => ResponseError::UnknownTopicOrPartition.code(),
                    Err(code) => code,
                };
            }
        }
        resp.responses.push(r);
    }
    resp
}

/// CreatePartitions: more queues on every shard; existing partitions keep their numbers.
pub(crate) async fn create_partitions(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut resp = CreatePartitionsResponse::default();
    for t in req.topics {
        let name = t.name.as_str().to_owned();
        let mut r = CreatePartitionsTopicResult::default();
        r.name = t.name.clone();
        let outcome: Result<(), (i16, String)> = async {
            let Some(mut cfg) = find_topic(kafka, &name)
                .await
                .map_err(|c| (c, "meta".to_owned()))?
                .filter(|_| visible(&name))
            else {
                return Err((
                    ResponseError::UnknownTopicOrPartition.code(),
                    format!("topic {name} does not exist"),
                ));
            };
            let current = super::partition_count(cfg.read_queue_nums, kafka.shards());
            if t.count <= current {
                return Err((
                    ResponseError::InvalidPartitions.code(),
                    format!("topic currently has {current} partitions, which is not fewer than the requested {}", t.count),
                ));
            }
            if t.assignments.is_some() {
                return Err((
                    ResponseError::InvalidReplicaAssignment.code(),
                    "replica assignments are not supported: each partition is led by its shard".to_owned(),
                ));
            }
            let queues = queues_for(t.count, kafka.shards());
            if queues > MAX_QUEUES {
                return Err((ResponseError::InvalidPartitions.code(), "too many partitions".to_owned()));
            }
            if req.validate_only {
                return Ok(());
            }
            cfg.read_queue_nums = queues;
            cfg.write_queue_nums = queues;
            kafka
                .node
                .topics
                .put(cfg)
                .await
                .map_err(|e| (super::codes::gateway(&e), "cannot update".to_owned()))
        }
        .await;
        if let Err((code, why)) = outcome {
            r.error_code = code;
            r.error_message = Some(sb(why));
        }
        resp.results.push(r);
    }
    resp
}

/// Resource types of DescribeConfigs.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
/// Config sources.
const SOURCE_TOPIC: i8 = 1;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;
/// Config types (v3+).
const TYPE_BOOLEAN: i8 = 1;
const TYPE_STRING: i8 = 2;
const TYPE_INT: i8 = 3;
const TYPE_LONG: i8 = 5;
const TYPE_LIST: i8 = 7;

fn entry(name: &str, value: String, source: i8, config_type: i8) -> DescribeConfigsResourceResult {
    let mut e = DescribeConfigsResourceResult::default();
    e.name = sb(name);
    e.value = Some(sb(value));
    e.read_only = true;
    e.config_source = source;
    e.config_type = config_type;
    e
}

fn topic_configs(kafka: &Kafka, cfg: &TopicConfig) -> Vec<DescribeConfigsResourceResult> {
    let c = &kafka.node.config;
    let retention = match cfg.retention_hours {
        Some(h) => (h.saturating_mul(3_600_000), SOURCE_TOPIC),
        None => (
            i64::try_from(c.retention.time.as_millis()).unwrap_or(i64::MAX),
            SOURCE_STATIC_BROKER,
        ),
    };
    vec![
        entry("cleanup.policy", "delete".into(), SOURCE_DEFAULT, TYPE_LIST),
        entry(
            "compression.type",
            "producer".into(),
            SOURCE_DEFAULT,
            TYPE_STRING,
        ),
        entry(
            "retention.ms",
            retention.0.to_string(),
            retention.1,
            TYPE_LONG,
        ),
        entry("retention.bytes", "-1".into(), SOURCE_DEFAULT, TYPE_LONG),
        entry(
            "max.message.bytes",
            c.broker.max_message_size.as_u64().to_string(),
            SOURCE_STATIC_BROKER,
            TYPE_INT,
        ),
        entry(
            "message.timestamp.type",
            "CreateTime".into(),
            SOURCE_DEFAULT,
            TYPE_STRING,
        ),
        entry("min.insync.replicas", "1".into(), SOURCE_DEFAULT, TYPE_INT),
        entry(
            "segment.bytes",
            c.storage.segment_max_bytes.as_u64().to_string(),
            SOURCE_STATIC_BROKER,
            TYPE_INT,
        ),
        entry(
            "unclean.leader.election.enable",
            "false".into(),
            SOURCE_DEFAULT,
            TYPE_BOOLEAN,
        ),
    ]
}

fn broker_configs(kafka: &Kafka) -> Vec<DescribeConfigsResourceResult> {
    let c = &kafka.node.config;
    vec![
        entry(
            "auto.create.topics.enable",
            c.kafka.auto_create_topics.to_string(),
            SOURCE_STATIC_BROKER,
            TYPE_BOOLEAN,
        ),
        entry(
            "num.partitions",
            c.kafka.default_partitions.to_string(),
            SOURCE_STATIC_BROKER,
            TYPE_INT,
        ),
        entry(
            "default.replication.factor",
            "1".into(),
            SOURCE_DEFAULT,
            TYPE_INT,
        ),
        entry(
            "message.max.bytes",
            c.broker.max_message_size.as_u64().to_string(),
            SOURCE_STATIC_BROKER,
            TYPE_INT,
        ),
        entry(
            "log.retention.ms",
            c.retention.time.as_millis().to_string(),
            SOURCE_STATIC_BROKER,
            TYPE_LONG,
        ),
        entry(
            "group.initial.rebalance.delay.ms",
            c.kafka
                .group_initial_rebalance_delay
                .as_millis()
                .to_string(),
            SOURCE_STATIC_BROKER,
            TYPE_INT,
        ),
    ]
}

/// DescribeConfigs for topics and brokers (every config listed with its value and source).
pub(crate) async fn describe_configs(
    kafka: &Arc<Kafka>,
    ctx: &Ctx,
    req: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let mut resp = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut r = DescribeConfigsResult::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        let name = res.resource_name.as_str().to_owned();
        let configs = match res.resource_type {
            TOPIC => match find_topic(kafka, &name).await {
                Ok(Some(cfg)) if visible(&name) => Ok(topic_configs(kafka, &cfg)),
                Ok(_) => Err(ResponseError::UnknownTopicOrPartition.code()),
                Err(code) => Err(code),
            },
            BROKER => Ok(broker_configs(kafka)),
            _ => Err(ResponseError::InvalidRequest.code()),
        };
        match configs {
            Ok(mut list) => {
                if let Some(keys) = &res.configuration_keys {
                    list.retain(|e| keys.iter().any(|k| k.as_str() == e.name.as_str()));
                }
                if ctx.version < 3 {
                    for e in &mut list {
                        e.config_type = 0;
                    }
                }
                r.configs = list;
            }
            Err(code) => {
                r.error_code = code;
                r.error_message = Some(sb(format!("cannot describe {name}")));
            }
        }
        resp.results.push(r);
    }
    resp
}

/// Config operations of IncrementalAlterConfigs.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

/// What a topic's alteration asks: `Some(ms)` to set `retention.ms`, `None` to go back
/// to the node's retention; the error names the config Stratus does not keep.
type Alteration = Result<Option<Option<i64>>, (i16, String)>;

/// One config change of a topic: only `retention.ms` is kept (in whole hours, rounded
/// up); any other config is INVALID_CONFIG, naming it, rather than silently ignored.
fn alteration(name: &str, op: i8, value: Option<&str>) -> Alteration {
    if name != "retention.ms" {
        return Err((
            ResponseError::InvalidConfig.code(),
            format!("{name} cannot be changed on Stratus (only retention.ms)"),
        ));
    }
    match op {
        OP_DELETE => Ok(Some(None)),
        OP_SET => match value.and_then(|v| v.parse::<i64>().ok()) {
            Some(ms) if ms > 0 => Ok(Some(Some(ms))),
            Some(-1) => Err((
                ResponseError::InvalidConfig.code(),
                "retention.ms -1 (keep forever) is not supported".to_owned(),
            )),
            _ => Err((
                ResponseError::InvalidConfig.code(),
                format!("retention.ms must be a positive number of ms, not {value:?}"),
            )),
        },
        _ => Err((
            ResponseError::InvalidConfig.code(),
            format!("operation {op} on retention.ms is not supported (SET or DELETE)"),
        )),
    }
}

/// Applies `changes` to topic `name`; the error is a Kafka code with a message.
async fn alter_topic(
    kafka: &Kafka,
    resource_type: i8,
    name: &str,
    changes: Vec<Alteration>,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    if resource_type != TOPIC {
        return Err((
            ResponseError::InvalidRequest.code(),
            "only topic configs can be changed; a node's are its settings".to_owned(),
        ));
    }
    let Some(mut cfg) = find_topic(kafka, name)
        .await
        .map_err(|c| (c, "meta".to_owned()))?
        .filter(|_| visible(name))
    else {
        return Err((
            ResponseError::UnknownTopicOrPartition.code(),
            format!("topic {name} does not exist"),
        ));
    };
    for change in changes {
        if let Some(retention) = change? {
            cfg.retention_hours = retention.map(|ms| (ms + 3_599_999) / 3_600_000);
        }
    }
    if validate_only {
        return Ok(());
    }
    kafka
        .node
        .topics
        .put(cfg)
        .await
        .map_err(|e| (super::codes::gateway(&e), "cannot update".to_owned()))
}

/// IncrementalAlterConfigs: SET or DELETE `retention.ms` of topics.
pub(crate) async fn incremental_alter_configs(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut resp = IncrementalAlterConfigsResponse::default();
    for res in req.resources {
        let name = res.resource_name.as_str().to_owned();
        let changes = res
            .configs
            .iter()
            .map(|c| {
                alteration(
                    c.name.as_str(),
                    c.config_operation,
                    c.value.as_ref().map(|v| v.as_str()),
                )
            })
            .collect();
        let mut r = incremental_alter_configs_response::AlterConfigsResourceResponse::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        if let Err((code, why)) =
            alter_topic(kafka, res.resource_type, &name, changes, req.validate_only).await
        {
            r.error_code = code;
            r.error_message = Some(sb(why));
        }
        resp.responses.push(r);
    }
    resp
}

/// AlterConfigs: the topic's whole set; `retention.ms` given sets it, absent resets it.
pub(crate) async fn alter_configs(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let mut resp = AlterConfigsResponse::default();
    for res in req.resources {
        let name = res.resource_name.as_str().to_owned();
        let mut changes: Vec<Alteration> = res
            .configs
            .iter()
            .map(|c| {
                alteration(
                    c.name.as_str(),
                    OP_SET,
                    c.value.as_ref().map(|v| v.as_str()),
                )
            })
            .collect();
        if !res
            .configs
            .iter()
            .any(|c| c.name.as_str() == "retention.ms")
        {
            changes.push(Ok(Some(None)));
        }
        let mut r = alter_configs_response::AlterConfigsResourceResponse::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        if let Err((code, why)) =
            alter_topic(kafka, res.resource_type, &name, changes, req.validate_only).await
        {
            r.error_code = code;
            r.error_message = Some(sb(why));
        }
        resp.responses.push(r);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_retention_can_be_altered_and_only_sensibly() {
        assert_eq!(
            alteration("retention.ms", OP_SET, Some("7200000")),
            Ok(Some(Some(7_200_000)))
        );
        assert_eq!(alteration("retention.ms", OP_DELETE, None), Ok(Some(None)));
        assert!(alteration("retention.ms", OP_SET, Some("-1")).is_err());
        assert!(alteration("retention.ms", OP_SET, Some("soon")).is_err());
        assert!(alteration("retention.ms", 2, Some("1")).is_err(), "APPEND");
        let Err((code, why)) = alteration("cleanup.policy", OP_SET, Some("compact")) else {
            panic!("accepted");
        };
        assert_eq!(code, ResponseError::InvalidConfig.code());
        assert!(why.contains("cleanup.policy"));
    }

    #[test]
    fn partition_counts_round_up_to_whole_queues_per_shard() {
        assert_eq!(queues_for(1, 1), 1);
        assert_eq!(queues_for(6, 3), 2);
        assert_eq!(queues_for(7, 3), 3);
        assert_eq!(queues_for(1, 3), 1);
    }
}
