//! The APIs this front end serves and the versions of each, as advertised in ApiVersions.
//!
//! Each range is within what the protocol crate decodes and what current clients send
//! (Java kafka-clients 3.x and 4.x, librdkafka 2.x, franz-go). Produce and Fetch stop at
//! v12: v13 addresses topics by id only. Transactions (AddPartitionsToTxn, EndTxn, …),
//! the KIP-848 consumer group protocol and SASL are not advertised yet: clients then
//! report the missing API by name.

use kafka_protocol::messages::ApiKey;

/// `(api key, min version, max version)` of every API served.
pub(crate) const SUPPORTED: &[(ApiKey, i16, i16)] = &[
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
];

/// The range served for `key`, if it is served.
pub(crate) fn range(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, lo, hi)| (*lo, *hi))
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
}
