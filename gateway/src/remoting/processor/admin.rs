//! Admin requests: topic create/delete, topic config, KV config, view by id (runtime info
//! is in `stats.rs`).
//! Mirrors `AdminBrokerProcessor` and the name server's KV processor.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::admin::{
    CreateTopicRequestHeader, KvConfigHeader, TopicConfigBody, ViewMessageRequestHeader,
};
use stratus_compat::types::CommitLogOffset;
use stratus_compat::{RequestCode, ResponseCode};

use super::json_body;
use crate::error::{GatewayError, Result};
use crate::node::topics::{is_system_topic, topic_config, validate_name};
use crate::remoting::Remoting;
use crate::remoting::dispatch::{respond, success};
use crate::remoting::processor::route::topic_header;

/// UPDATE_AND_CREATE_TOPIC (17).
pub(crate) async fn create_topic(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = CreateTopicRequestHeader::from_command(cmd)?;
    validate_name(&h.topic)?;
    if is_system_topic(&h.topic) {
        return Err(GatewayError::SystemTopicConflict { topic: h.topic });
    }
    if h.read_queue_nums <= 0
        || h.write_queue_nums <= 0
        || h.read_queue_nums > 1024
        || h.write_queue_nums > 1024
    {
        return Err(GatewayError::InvalidParameter(
            "queue nums must be between 1 and 1024".into(),
        ));
    }
    let mut cfg = topic_config(&h.topic, h.write_queue_nums, h.perm);
    cfg.read_queue_nums = h.read_queue_nums;
    cfg.topic_filter_type = h.topic_filter_type;
    cfg.topic_sys_flag = h.topic_sys_flag.unwrap_or(0);
    cfg.order = h.order;
    // The request has no retention field: an update keeps the topic's retention override.
    cfg.retention_hours = rmq
        .node
        .meta
        .get_topic(&cfg.topic)
        .await?
        .and_then(|t| t.retention_hours);
    rmq.node.topics.put(cfg).await?;
    Ok(success())
}

/// DELETE_TOPIC_IN_BROKER (215) / DELETE_TOPIC_IN_NAMESRV (216).
pub(crate) async fn delete_topic(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let topic = topic_header(cmd)?;
    rmq.node.topics.delete(&topic).await?;
    Ok(success())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DataVersion {
    counter: i64,
    state_version: i64,
    timestamp: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicConfigWrapper {
    data_version: DataVersion,
    topic_config_table: BTreeMap<String, TopicConfigBody>,
}

/// GET_ALL_TOPIC_CONFIG (21).
pub(crate) fn all_topic_config(rmq: &Arc<Remoting>) -> Result<RemotingCommand> {
    let table = rmq
        .node
        .topics
        .all()
        .into_iter()
        .map(|t| {
            (
                t.topic.to_string(),
                TopicConfigBody {
                    topic_name: t.topic.to_string(),
                    read_queue_nums: t.read_queue_nums,
                    write_queue_nums: t.write_queue_nums,
                    perm: t.perm,
                    topic_filter_type: t.topic_filter_type,
                    topic_sys_flag: t.topic_sys_flag,
                    order: t.order,
                },
            )
        })
        .collect();
    let mut resp = success();
    resp.body = json_body(&TopicConfigWrapper {
        data_version: DataVersion {
            counter: 0,
            state_version: 0,
            timestamp: rmq.node.clock.now_ms(),
        },
        topic_config_table: table,
    })?;
    Ok(resp)
}

/// PUT_KV_CONFIG (100), GET_KV_CONFIG (101), DELETE_KV_CONFIG (102).
pub(crate) async fn kv(
    rmq: &Arc<Remoting>,
    code: RequestCode,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let KvConfigHeader {
        namespace,
        key,
        value,
    } = KvConfigHeader::from_command(cmd)?;
    if crate::remoting::auth::is_reserved_namespace(&namespace) {
        return Err(GatewayError::AccessDenied(format!(
            "the KV namespace {namespace} is reserved for access control"
        )));
    }
    match code {
        RequestCode::PutKvConfig => {
            let value = value.ok_or(GatewayError::Header(stratus_compat::HeaderError::Missing(
                "value",
            )))?;
            rmq.node.meta.put_kv(&namespace, &key, &value).await?;
            Ok(success())
        }
        RequestCode::GetKvConfig => match rmq.node.meta.get_kv(&namespace, &key).await? {
            Some(v) => {
                let mut resp = success();
                resp.put_ext("value", v);
                Ok(resp)
            }
            None => Ok(respond(
                ResponseCode::QueryNotFound,
                format!("No config item, Namespace: {namespace} Key: {key}"),
            )),
        },
        _ => {
            rmq.node.meta.delete_kv(&namespace, &key).await?;
            Ok(success())
        }
    }
}

/// VIEW_MESSAGE_BY_ID (33): the record at a commit-log handle.
pub(crate) async fn view_message(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = ViewMessageRequestHeader::from_command(cmd)?;
    match rmq
        .node
        .reader
        .read_by_handle(CommitLogOffset(h.offset))
        .await?
    {
        Some(bytes) => {
            let mut resp = success();
            resp.body = bytes;
            Ok(resp)
        }
        None => Err(GatewayError::NoMessageAtOffset { offset: h.offset }),
    }
}
