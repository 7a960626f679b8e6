//! Kafka requests: the frame's header, the API and version checks, and the body decoded
//! into the protocol crate's request types.
//!
//! A request is `api_key:i16 | api_version:i16 | correlation_id:i32 | client_id | [tags] |
//! body` (the header's version follows from the API and version). [`decode`] accepts only
//! the APIs and versions in [`SUPPORTED`], as advertised in ApiVersions, and walks each
//! body by its layout before decoding it ([`super::validate`]), so impossible counts are
//! refused instead of allocated for.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;

/// `(api key, min version, max version)` of every API served. Produce and Fetch stop at
/// v12 (v13 addresses topics by id only); transactions, the KIP-848 consumer group
/// protocol and SASL are not served yet, so clients report the missing API by name.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 12),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 8),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 4),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
];

/// The range served for `key`, if it is served.
pub fn range(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, lo, hi)| (*lo, *hi))
}

/// A decoded request body.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // one variant per API, named for it
pub enum Request {
    ApiVersions(ApiVersionsRequest),
    Produce(ProduceRequest),
    Fetch(FetchRequest),
    ListOffsets(ListOffsetsRequest),
    Metadata(MetadataRequest),
    OffsetCommit(OffsetCommitRequest),
    OffsetFetch(OffsetFetchRequest),
    FindCoordinator(FindCoordinatorRequest),
    JoinGroup(JoinGroupRequest),
    Heartbeat(HeartbeatRequest),
    LeaveGroup(LeaveGroupRequest),
    SyncGroup(SyncGroupRequest),
    DescribeGroups(DescribeGroupsRequest),
    ListGroups(ListGroupsRequest),
    CreateTopics(CreateTopicsRequest),
    DeleteTopics(DeleteTopicsRequest),
    InitProducerId(InitProducerIdRequest),
    DescribeConfigs(DescribeConfigsRequest),
    CreatePartitions(CreatePartitionsRequest),
    DeleteGroups(DeleteGroupsRequest),
    DescribeCluster(DescribeClusterRequest),
    AlterConfigs(AlterConfigsRequest),
    IncrementalAlterConfigs(IncrementalAlterConfigsRequest),
}

/// A decoded request.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The API.
    pub api: ApiKey,
    /// Its version.
    pub version: i16,
    /// Echoed in the answer.
    pub correlation: i32,
    /// The client's id (empty when null).
    pub client_id: String,
    /// The body.
    pub body: Request,
}

/// Why a request cannot be served. Every one closes the connection, as the reference
/// does, except [`RequestError::Unsupported`] for ApiVersions (see [`decode`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Fewer than the 8 bytes of the fixed header.
    #[error("request of {0} bytes has no header")]
    Short(usize),
    /// An API key Kafka does not define, or one not served.
    #[error("API key {0} is not served")]
    UnknownApi(i16),
    /// A version outside the served range.
    #[error("{api:?} v{version} is not served (v{min} to v{max})")]
    Unsupported {
        /// The API.
        api: ApiKey,
        /// The version asked for.
        version: i16,
        /// The correlation id, to answer ApiVersions in v0.
        correlation: i32,
        /// Lowest served version.
        min: i16,
        /// Highest served version.
        max: i16,
    },
    /// The header or body does not decode in the version given.
    #[error("{api:?} v{version}: malformed {what}: {why}")]
    Malformed {
        /// The API.
        api: ApiKey,
        /// Its version.
        version: i16,
        /// `header` or `body`.
        what: &'static str,
        /// The decoder's message.
        why: String,
    },
}

/// Decodes one request frame (the bytes after the length).
///
/// # Errors
/// [`RequestError`]: too short, an API or version not served, or bytes that do not decode.
pub fn decode(frame: Bytes) -> Result<Decoded, RequestError> {
    if frame.len() < 8 {
        return Err(RequestError::Short(frame.len()));
    }
    let mut peek = frame.clone();
    let key = peek.get_i16();
    let version = peek.get_i16();
    let correlation = peek.get_i32();
    let api = ApiKey::try_from(key).map_err(|()| RequestError::UnknownApi(key))?;
    let (min, max) = range(api).ok_or(RequestError::UnknownApi(key))?;
    if !(min..=max).contains(&version) {
        return Err(RequestError::Unsupported {
            api,
            version,
            correlation,
            min,
            max,
        });
    }
    let malformed = |what: &'static str| {
        move |e: anyhow::Error| RequestError::Malformed {
            api,
            version,
            what,
            why: e.to_string(),
        }
    };
    let mut buf = frame;
    let header = RequestHeader::decode(&mut buf, api.request_header_version(version))
        .map_err(malformed("header"))?;
    super::validate::check_body(key, version, &buf).map_err(|e| RequestError::Malformed {
        api,
        version,
        what: "body",
        why: e.to_string(),
    })?;
    let body = decode_body(api, version, &mut buf)
        .map_err(malformed("body"))?
        .ok_or(RequestError::UnknownApi(key))?;
    Ok(Decoded {
        api,
        version,
        correlation,
        client_id: header
            .client_id
            .map(|c| c.as_str().to_owned())
            .unwrap_or_default(),
        body,
    })
}

fn decode_body(api: ApiKey, version: i16, buf: &mut Bytes) -> anyhow::Result<Option<Request>> {
    Ok(Some(match api {
        ApiKey::ApiVersions => Request::ApiVersions(ApiVersionsRequest::decode(buf, version)?),
        ApiKey::Produce => Request::Produce(ProduceRequest::decode(buf, version)?),
        ApiKey::Fetch => Request::Fetch(FetchRequest::decode(buf, version)?),
        ApiKey::ListOffsets => Request::ListOffsets(ListOffsetsRequest::decode(buf, version)?),
        ApiKey::Metadata => Request::Metadata(MetadataRequest::decode(buf, version)?),
        ApiKey::OffsetCommit => Request::OffsetCommit(OffsetCommitRequest::decode(buf, version)?),
        ApiKey::OffsetFetch => Request::OffsetFetch(OffsetFetchRequest::decode(buf, version)?),
        ApiKey::FindCoordinator => {
            Request::FindCoordinator(FindCoordinatorRequest::decode(buf, version)?)
        }
        ApiKey::JoinGroup => Request::JoinGroup(JoinGroupRequest::decode(buf, version)?),
        ApiKey::Heartbeat => Request::Heartbeat(HeartbeatRequest::decode(buf, version)?),
        ApiKey::LeaveGroup => Request::LeaveGroup(LeaveGroupRequest::decode(buf, version)?),
        ApiKey::SyncGroup => Request::SyncGroup(SyncGroupRequest::decode(buf, version)?),
        ApiKey::DescribeGroups => {
            Request::DescribeGroups(DescribeGroupsRequest::decode(buf, version)?)
        }
        ApiKey::ListGroups => Request::ListGroups(ListGroupsRequest::decode(buf, version)?),
        ApiKey::CreateTopics => Request::CreateTopics(CreateTopicsRequest::decode(buf, version)?),
        ApiKey::DeleteTopics => Request::DeleteTopics(DeleteTopicsRequest::decode(buf, version)?),
        ApiKey::InitProducerId => {
            Request::InitProducerId(InitProducerIdRequest::decode(buf, version)?)
        }
        ApiKey::DescribeConfigs => {
            Request::DescribeConfigs(DescribeConfigsRequest::decode(buf, version)?)
        }
        ApiKey::CreatePartitions => {
            Request::CreatePartitions(CreatePartitionsRequest::decode(buf, version)?)
        }
        ApiKey::DeleteGroups => Request::DeleteGroups(DeleteGroupsRequest::decode(buf, version)?),
        ApiKey::DescribeCluster => {
            Request::DescribeCluster(DescribeClusterRequest::decode(buf, version)?)
        }
        ApiKey::AlterConfigs => Request::AlterConfigs(AlterConfigsRequest::decode(buf, version)?),
        ApiKey::IncrementalAlterConfigs => {
            Request::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::decode(buf, version)?)
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_range_is_one_the_codec_decodes() {
        for (key, lo, hi) in SUPPORTED {
            let valid = key.valid_versions();
            assert!(lo <= hi, "{key:?}");
            assert!(
                *lo >= valid.min && *hi <= valid.max,
                "{key:?} {lo}..{hi} vs {valid}"
            );
        }
    }

    fn api_versions_v3(correlation: i32) -> Vec<u8> {
        let mut r = vec![0, 18, 0, 3];
        r.extend(correlation.to_be_bytes());
        r.extend(4i16.to_be_bytes());
        r.extend(b"test");
        r.push(0);
        r.extend([5, b'n', b'a', b'm', b'e', 2, b'1', 0]);
        r
    }

    #[test]
    fn a_request_decodes_with_its_header() {
        let d = decode(Bytes::from(api_versions_v3(7))).unwrap();
        assert_eq!(
            (d.api, d.version, d.correlation),
            (ApiKey::ApiVersions, 3, 7)
        );
        assert_eq!(d.client_id, "test");
        let Request::ApiVersions(r) = d.body else {
            panic!("{d:?}")
        };
        assert_eq!(r.client_software_name.as_str(), "name");
    }

    #[test]
    fn a_metadata_request_claiming_billions_of_topics_is_malformed_not_allocated() {
        let mut f = vec![0, 3, 0, 0, 0, 0, 0, 1, 0, 1, b'x'];
        f.extend(0x7fff_fff0i32.to_be_bytes());
        assert!(matches!(
            decode(Bytes::from(f)),
            Err(RequestError::Malformed { what: "body", .. })
        ));
    }

    #[test]
    fn unknown_apis_versions_and_short_or_cut_frames_are_errors() {
        assert_eq!(
            decode(Bytes::from_static(&[0, 18, 0])),
            Err(RequestError::Short(3))
        );
        let mut f = api_versions_v3(1);
        f[1] = 99;
        assert!(matches!(
            decode(Bytes::from(f)),
            Err(RequestError::UnknownApi(99))
        ));
        let mut f = api_versions_v3(1);
        f[3] = 9;
        assert!(matches!(
            decode(Bytes::from(f)),
            Err(RequestError::Unsupported { max: 4, .. })
        ));
        let f = api_versions_v3(1);
        for cut in 8..f.len() {
            assert!(
                matches!(
                    decode(Bytes::copy_from_slice(&f[..cut])),
                    Err(RequestError::Malformed { .. })
                ),
                "cut at {cut}"
            );
        }
    }
}
