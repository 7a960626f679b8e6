//! Failures as Kafka error codes: the one mapping from the core's errors.
//!
//! Each code is the one the reference broker uses for the same condition, so clients
//! retry what is retriable: a shard that moved is NOT_LEADER_OR_FOLLOWER (refresh
//! metadata), a full write buffer or an object store outage is a retriable storage error,
//! a commit not durable in time is REQUEST_TIMED_OUT.

use kafka_protocol::error::ResponseError;
use stratus_meta::MetaError;
use stratus_segments::SegmentError;

use crate::error::GatewayError;

/// The Kafka error code of a storage failure.
pub(crate) fn segment(e: &SegmentError) -> i16 {
    match e {
        SegmentError::NotOwned(_) | SegmentError::Fenced(_) => {
            ResponseError::NotLeaderOrFollower.code()
        }
        SegmentError::Timeout(_) => ResponseError::RequestTimedOut.code(),
        SegmentError::Corrupt { .. } => ResponseError::CorruptMessage.code(),
        SegmentError::Busy
        | SegmentError::ShuttingDown
        | SegmentError::ObjectStore { .. }
        | SegmentError::Meta(_) => ResponseError::KafkaStorageError.code(),
    }
}

/// The Kafka error code of a metadata failure (meta is the coordinator's store).
pub(crate) fn meta(_e: &MetaError) -> i16 {
    ResponseError::CoordinatorNotAvailable.code()
}

/// The Kafka error code of a core failure.
pub(crate) fn gateway(e: &GatewayError) -> i16 {
    match e {
        GatewayError::Segment(s) => segment(s),
        GatewayError::Meta(m) => meta(m),
        GatewayError::ShardNotOwned { .. } => ResponseError::NotLeaderOrFollower.code(),
        GatewayError::TopicNotExist { .. } | GatewayError::UnknownTopic { .. } => {
            ResponseError::UnknownTopicOrPartition.code()
        }
        GatewayError::TopicName(_) => ResponseError::InvalidTopicException.code(),
        GatewayError::BodyTooLarge { .. } | GatewayError::PropertiesTooLong { .. } => {
            ResponseError::MessageTooLarge.code()
        }
        GatewayError::NotWritable { .. }
        | GatewayError::NotReadable { .. }
        | GatewayError::NotSendable { .. } => ResponseError::TopicAuthorizationFailed.code(),
        GatewayError::AccessDenied(_) => ResponseError::TopicAuthorizationFailed.code(),
        _ => ResponseError::UnknownServerError.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stratus_meta::ShardId;

    #[test]
    fn moved_shards_are_not_leader_and_slow_commits_time_out() {
        assert_eq!(segment(&SegmentError::NotOwned(ShardId(1))), 6);
        assert_eq!(segment(&SegmentError::Fenced(ShardId(1))), 6);
        assert_eq!(
            segment(&SegmentError::Timeout(std::time::Duration::from_secs(1))),
            7
        );
        assert_eq!(segment(&SegmentError::Busy), 56);
        assert_eq!(
            gateway(&GatewayError::ShardNotOwned { shard: None }),
            ResponseError::NotLeaderOrFollower.code()
        );
    }
}
