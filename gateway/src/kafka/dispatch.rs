//! From a request frame to its answer: API and version checks, header and body decoding,
//! the module that serves the API, and the encoded response frame.
//!
//! As the reference broker does, a request that cannot be served is not answered: an
//! unknown API key, a version outside the served range, or a body that does not decode
//! closes the connection (the client reports the disconnect and, for versions, has already
//! been told the ranges by ApiVersions). The one exception is ApiVersions itself: a version
//! newer than served is answered in v0 with UNSUPPORTED_VERSION and the ranges (KIP-511),
//! so the client can retry with one it shares.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures::FutureExt;
use futures::future::BoxFuture;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

use super::Kafka;
use super::net::{Conn, peek_header};
use super::versions;

/// What the writer does for one request, in its turn.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Write this frame.
    Frame(Bytes),
    /// Nothing to write (Produce with `acks = 0`).
    Silent,
    /// Close the connection.
    Close(String),
}

/// A request's work, run as a task; answered in the connection's order.
pub(crate) type Task = BoxFuture<'static, Answer>;

/// Who asked, and in which version.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub(crate) conn: Conn,
    pub(crate) version: i16,
    pub(crate) client_id: String,
}

/// Decodes `frame` and starts its work. Produce appends here, on the connection's reader,
/// so a partition's batches keep the order they came in. `Err` closes the connection.
pub(crate) fn start(kafka: &Arc<Kafka>, conn: &Conn, frame: Bytes) -> Result<Task, String> {
    let Some((key, version, correlation)) = peek_header(&frame) else {
        return Err("short request header".into());
    };
    let Ok(api) = ApiKey::try_from(key) else {
        return Err(format!("unknown API key {key}"));
    };
    let Some((lo, hi)) = versions::range(api) else {
        return Err(format!("API {api:?} is not served"));
    };
    if !(lo..=hi).contains(&version) {
        if api == ApiKey::ApiVersions {
            let resp = api_versions(ResponseError::UnsupportedVersion.code());
            let frame = encode_frame(correlation, 0, &resp, 0);
            return Ok(async move { frame }.boxed());
        }
        return Err(format!("{api:?} v{version} is not served (v{lo} to v{hi})"));
    }
    let mut buf = frame;
    let header = RequestHeader::decode(&mut buf, api.request_header_version(version))
        .map_err(|e| format!("{api:?} v{version}: bad request header: {e}"))?;
    let ctx = Ctx {
        conn: conn.clone(),
        version,
        client_id: header
            .client_id
            .as_ref()
            .map(|c| c.as_str().to_owned())
            .unwrap_or_default(),
    };
    let kafka = kafka.clone();
    macro_rules! decode {
        ($req:ty) => {
            <$req>::decode(&mut buf, version)
                .map_err(|e| format!("{api:?} v{version}: malformed request: {e}"))?
        };
    }
    macro_rules! serve {
        ($req:ty, $handler:path) => {{
            let req = decode!($req);
            async move {
                let resp = $handler(&kafka, &ctx, req).await;
                encode_frame(
                    correlation,
                    api.response_header_version(version),
                    &resp,
                    version,
                )
            }
            .boxed()
        }};
    }
    let task: Task = match api {
        ApiKey::ApiVersions => {
            let _req = decode!(ApiVersionsRequest);
            let resp = api_versions(0);
            let frame = encode_frame(correlation, 0, &resp, version);
            async move { frame }.boxed()
        }
        ApiKey::Produce => {
            let req = decode!(ProduceRequest);
            let pending = super::produce::start(&kafka, &ctx, req);
            async move {
                match pending.await {
                    Some(resp) => encode_frame(
                        correlation,
                        api.response_header_version(version),
                        &resp,
                        version,
                    ),
                    None => Answer::Silent,
                }
            }
            .boxed()
        }
        ApiKey::Metadata => serve!(MetadataRequest, super::metadata::metadata),
        ApiKey::DescribeCluster => {
            serve!(DescribeClusterRequest, super::metadata::describe_cluster)
        }
        ApiKey::FindCoordinator => {
            serve!(FindCoordinatorRequest, super::metadata::find_coordinator)
        }
        ApiKey::Fetch => serve!(FetchRequest, super::fetch::fetch),
        ApiKey::ListOffsets => serve!(ListOffsetsRequest, super::fetch::list_offsets),
        ApiKey::InitProducerId => serve!(InitProducerIdRequest, super::produce::init_producer_id),
        ApiKey::JoinGroup => serve!(JoinGroupRequest, super::groups::join),
        ApiKey::SyncGroup => serve!(SyncGroupRequest, super::groups::sync),
        ApiKey::Heartbeat => serve!(HeartbeatRequest, super::groups::heartbeat),
        ApiKey::LeaveGroup => serve!(LeaveGroupRequest, super::groups::leave),
        ApiKey::ListGroups => serve!(ListGroupsRequest, super::groups::list),
        ApiKey::DescribeGroups => serve!(DescribeGroupsRequest, super::groups::describe),
        ApiKey::DeleteGroups => serve!(DeleteGroupsRequest, super::groups::delete),
        ApiKey::OffsetCommit => serve!(OffsetCommitRequest, super::offsets::commit),
        ApiKey::OffsetFetch => serve!(OffsetFetchRequest, super::offsets::fetch),
        ApiKey::CreateTopics => serve!(CreateTopicsRequest, super::admin::create_topics),
        ApiKey::DeleteTopics => serve!(DeleteTopicsRequest, super::admin::delete_topics),
        ApiKey::CreatePartitions => {
            serve!(CreatePartitionsRequest, super::admin::create_partitions)
        }
        ApiKey::DescribeConfigs => serve!(DescribeConfigsRequest, super::admin::describe_configs),
        other => return Err(format!("API {other:?} is not served")),
    };
    Ok(task)
}

/// The ApiVersions answer: every API served with its range.
fn api_versions(error_code: i16) -> ApiVersionsResponse {
    let mut resp = ApiVersionsResponse::default();
    resp.error_code = error_code;
    resp.api_keys = versions::SUPPORTED
        .iter()
        .map(|(key, lo, hi)| {
            let mut v = ApiVersion::default();
            v.api_key = *key as i16;
            v.min_version = *lo;
            v.max_version = *hi;
            v
        })
        .collect();
    resp
}

/// `length | response header | body`.
fn encode_frame<R: Encodable + HeaderVersion>(
    correlation: i32,
    header_version: i16,
    resp: &R,
    version: i16,
) -> Answer {
    let mut header = ResponseHeader::default();
    header.correlation_id = correlation;
    let mut out = BytesMut::with_capacity(256);
    out.put_i32(0);
    if let Err(e) = header.encode(&mut out, header_version) {
        return Answer::Close(format!("cannot encode a response header: {e}"));
    }
    if let Err(e) = resp.encode(&mut out, version) {
        return Answer::Close(format!("cannot encode a response: {e}"));
    }
    let len = i32::try_from(out.len() - 4).unwrap_or(i32::MAX);
    out[..4].copy_from_slice(&len.to_be_bytes());
    Answer::Frame(out.freeze())
}

/// A `StrBytes` of `s`.
pub(crate) fn sb(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}
