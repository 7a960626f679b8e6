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
use kafka_protocol::protocol::{Encodable, StrBytes};
use stratus_compat::kafka::request::{self, Request, RequestError};

use super::Kafka;
use super::net::Conn;

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

/// A request decoded, not started yet: a Produce with its batches already turned into
/// stored messages, waiting for its turn to append; anything else, its work.
pub(crate) enum Staged {
    /// The work of any request but Produce.
    Ready(Task),
    /// A Produce, prepared.
    Produce {
        prepared: super::produce::PreparedProduce,
        correlation: i32,
        header_version: i16,
        version: i16,
    },
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Staged::Ready(_) => f.write_str("Ready"),
            Staged::Produce { prepared, .. } => f.debug_tuple("Produce").field(prepared).finish(),
        }
    }
}

/// Starts a staged request: a Produce appends now (call in the connection's order, so a
/// partition's batches keep the order they came in).
pub(crate) fn start_staged(kafka: &Arc<Kafka>, staged: Staged) -> Task {
    match staged {
        Staged::Ready(task) => task,
        Staged::Produce {
            prepared,
            correlation,
            header_version,
            version,
        } => {
            let pending = super::produce::append(kafka, prepared);
            async move {
                match pending.await {
                    Some(resp) => encode_frame(correlation, header_version, &resp, version),
                    None => Answer::Silent,
                }
            }
            .boxed()
        }
    }
}

/// Decodes `frame` and starts its work at once (tests; the connection stages first).
#[cfg(test)]
pub(crate) fn start(kafka: &Arc<Kafka>, conn: &Conn, frame: Bytes) -> Result<Task, String> {
    stage(kafka, conn, frame).map(|s| start_staged(kafka, s))
}

/// Decodes `frame`; a Produce's batches are decoded and converted here too (this may run
/// on any task, in parallel with other requests of the connection). `Err` closes the
/// connection.
pub(crate) fn stage(kafka: &Arc<Kafka>, conn: &Conn, frame: Bytes) -> Result<Staged, String> {
    let decoded = match request::decode(frame) {
        Ok(d) => d,
        Err(RequestError::Unsupported {
            api: ApiKey::ApiVersions,
            correlation,
            ..
        }) => {
            let resp = api_versions(ResponseError::UnsupportedVersion.code());
            let frame = encode_frame(correlation, 0, &resp, 0);
            return Ok(Staged::Ready(async move { frame }.boxed()));
        }
        Err(e) => return Err(e.to_string()),
    };
    let api = decoded.api;
    let version = decoded.version;
    let correlation = decoded.correlation;
    crate::metrics::KAFKA_REQUESTS
        .with_label_values(&[api_name(api)])
        .inc();
    let ctx = Ctx {
        conn: conn.clone(),
        version,
        client_id: decoded.client_id,
    };
    let kafka = kafka.clone();
    let header_version = api.response_header_version(version);
    macro_rules! serve {
        ($req:expr, $handler:path) => {{
            let req = $req;
            async move {
                let resp = $handler(&kafka, &ctx, req).await;
                encode_frame(correlation, header_version, &resp, version)
            }
            .boxed()
        }};
    }
    let task: Task = match decoded.body {
        Request::ApiVersions(_) => {
            // The answer's header is v0 in every version (KIP-511).
            let frame = encode_frame(correlation, 0, &api_versions(0), version);
            async move { frame }.boxed()
        }
        Request::Produce(req) => {
            return Ok(Staged::Produce {
                prepared: super::produce::prepare(&kafka, &ctx, req),
                correlation,
                header_version,
                version,
            });
        }
        Request::Metadata(r) => serve!(r, super::metadata::metadata),
        Request::DescribeCluster(r) => serve!(r, super::metadata::describe_cluster),
        Request::FindCoordinator(r) => serve!(r, super::metadata::find_coordinator),
        Request::Fetch(r) => serve!(r, super::fetch::fetch),
        Request::ListOffsets(r) => serve!(r, super::fetch::list_offsets),
        Request::InitProducerId(r) => serve!(r, super::produce::init_producer_id),
        Request::JoinGroup(r) => serve!(r, super::groups::join),
        Request::SyncGroup(r) => serve!(r, super::groups::sync),
        Request::Heartbeat(r) => serve!(r, super::groups::heartbeat),
        Request::LeaveGroup(r) => serve!(r, super::groups::leave),
        Request::ListGroups(r) => serve!(r, super::groups::list),
        Request::DescribeGroups(r) => serve!(r, super::groups::describe),
        Request::DeleteGroups(r) => serve!(r, super::groups::delete),
        Request::OffsetCommit(r) => serve!(r, super::offsets::commit),
        Request::OffsetFetch(r) => serve!(r, super::offsets::fetch),
        Request::CreateTopics(r) => serve!(r, super::admin::create_topics),
        Request::DeleteTopics(r) => serve!(r, super::admin::delete_topics),
        Request::CreatePartitions(r) => serve!(r, super::admin::create_partitions),
        Request::DescribeConfigs(r) => serve!(r, super::admin::describe_configs),
        Request::AlterConfigs(r) => serve!(r, super::admin::alter_configs),
        Request::IncrementalAlterConfigs(r) => {
            serve!(r, super::admin::incremental_alter_configs)
        }
    };
    Ok(Staged::Ready(task))
}

/// The metrics label of an API.
fn api_name(api: ApiKey) -> &'static str {
    match api {
        ApiKey::Produce => "Produce",
        ApiKey::Fetch => "Fetch",
        ApiKey::ListOffsets => "ListOffsets",
        ApiKey::Metadata => "Metadata",
        ApiKey::OffsetCommit => "OffsetCommit",
        ApiKey::OffsetFetch => "OffsetFetch",
        ApiKey::FindCoordinator => "FindCoordinator",
        ApiKey::JoinGroup => "JoinGroup",
        ApiKey::Heartbeat => "Heartbeat",
        ApiKey::LeaveGroup => "LeaveGroup",
        ApiKey::SyncGroup => "SyncGroup",
        ApiKey::DescribeGroups => "DescribeGroups",
        ApiKey::ListGroups => "ListGroups",
        ApiKey::ApiVersions => "ApiVersions",
        ApiKey::CreateTopics => "CreateTopics",
        ApiKey::DeleteTopics => "DeleteTopics",
        ApiKey::InitProducerId => "InitProducerId",
        ApiKey::DescribeConfigs => "DescribeConfigs",
        ApiKey::CreatePartitions => "CreatePartitions",
        ApiKey::DeleteGroups => "DeleteGroups",
        ApiKey::DescribeCluster => "DescribeCluster",
        ApiKey::AlterConfigs => "AlterConfigs",
        ApiKey::IncrementalAlterConfigs => "IncrementalAlterConfigs",
        _ => "other",
    }
}

/// The ApiVersions answer: every API served with its range.
fn api_versions(error_code: i16) -> ApiVersionsResponse {
    let mut resp = ApiVersionsResponse::default();
    resp.error_code = error_code;
    resp.api_keys = request::SUPPORTED
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
fn encode_frame<R: Encodable>(
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
