//! The one place gateway errors become RocketMQ response codes and remarks.

use stratus_compat::ResponseCode;
use stratus_meta::MetaError;
use stratus_segments::SegmentError;

use crate::error::GatewayError;

impl GatewayError {
    /// The response code for this error. Exhaustive, no `_` arm: a new variant needs a
    /// decision.
    pub(crate) fn response_code(&self) -> ResponseCode {
        match self {
            Self::Header(_)
            | Self::EncodeBody(_)
            | Self::NoConsumer { .. }
            | Self::NoMessageAtOffset { .. }
            | Self::LookMessageFailed { .. }
            | Self::CommitLogOffsetWrong { .. }
            | Self::TransactionBeingEnded
            | Self::ProducerGroupWrong
            | Self::TranStateTableOffsetWrong
            | Self::CorruptRecord { .. }
            | Self::ConsumerNotConnected { .. }
            | Self::ConsumerInvokeFailed { .. }
            | Self::NoConsumerOnline { .. }
            | Self::ResetOffsetOutOfRange { .. }
            | Self::ReplyNotPushed(_)
            | Self::StatsNotExist { .. }
            | Self::ConnectionClosed
            | Self::AuthAdmin(_)
            | Self::ProducerGroupNotExist { .. } => ResponseCode::SystemError,
            Self::ConsumerTimeout { .. } => ResponseCode::ConsumeMsgTimeout,
            Self::ConsumerNotOnline { .. } | Self::GroupNotOnline { .. } => {
                ResponseCode::ConsumerNotOnline
            }
            Self::SubscriptionGroupNotExist { .. } | Self::PullGroupNotExist { .. } => {
                ResponseCode::SubscriptionGroupNotExist
            }
            Self::ConfigNotUpdatable { .. }
            | Self::GroupConsumeDisabled { .. }
            | Self::AccessDenied(_) => ResponseCode::NoPermission,
            Self::NoTopicInBroker { .. } => ResponseCode::TopicNotExist,
            Self::TopicName(_)
            | Self::InvalidParameter(_)
            | Self::SendQueueIllegal { .. }
            | Self::PullQueueIllegal { .. }
            | Self::SystemTopicConflict { .. }
            | Self::GroupNameTooLong { .. } => ResponseCode::InvalidParameter,
            Self::BodyTooLarge { .. }
            | Self::PropertiesTooLong { .. }
            | Self::BatchToRetryTopic
            | Self::MalformedBatch(_)
            | Self::EmptyBatch
            | Self::BadTimerProperty { .. } => ResponseCode::MessageIllegal,
            Self::TopicNotExist { .. }
            | Self::UnknownTopic { .. }
            | Self::ResetTopicNotExist { .. } => ResponseCode::TopicNotExist,
            Self::NotSendable { .. } | Self::NotWritable { .. } | Self::NotReadable { .. } => {
                ResponseCode::NoPermission
            }
            Self::SubscriptionParseFailed(_) => ResponseCode::SubscriptionParseFailed,
            Self::GroupNotExist { .. } | Self::SubscriptionNotExist { .. } => {
                ResponseCode::SubscriptionNotExist
            }
            Self::SubscriptionNotLatest { .. } => ResponseCode::SubscriptionNotLatest,
            Self::ShardNotOwned { .. } => ResponseCode::ServiceNotAvailable,
            Self::NotSupported { .. } => ResponseCode::RequestCodeNotSupported,
            Self::Segment(e) => match e {
                SegmentError::Busy => ResponseCode::SystemBusy,
                SegmentError::Timeout(_) => ResponseCode::FlushDiskTimeout,
                SegmentError::Fenced(_)
                | SegmentError::NotOwned(_)
                | SegmentError::ShuttingDown => ResponseCode::ServiceNotAvailable,
                SegmentError::ObjectStore { .. } | SegmentError::Meta(_) => {
                    ResponseCode::ServiceNotAvailable
                }
                SegmentError::Corrupt { .. } => ResponseCode::SystemError,
            },
            Self::Meta(e) => match e {
                MetaError::Fenced { .. } | MetaError::Unavailable(_) => {
                    ResponseCode::ServiceNotAvailable
                }
                MetaError::NotFound { .. }
                | MetaError::Conflict(_)
                | MetaError::Corrupt(_)
                | MetaError::Config(_) => ResponseCode::SystemError,
            },
        }
    }

    /// A message safe to show clients. Internal failures are summarised; details go to the
    /// log where they are handled.
    pub(crate) fn remark(&self) -> String {
        match self {
            Self::Segment(SegmentError::Busy) => {
                "[REJECTREQUEST]system busy, start flow control for a while".into()
            }
            Self::Segment(SegmentError::Timeout(_)) => "segment not durable in time".into(),
            Self::Segment(SegmentError::Fenced(s)) => format!("shard {s} is no longer owned here"),
            Self::Segment(SegmentError::NotOwned(s)) => format!("shard {s} is not owned here"),
            Self::Segment(SegmentError::ShuttingDown) => "node is shutting down".into(),
            Self::Segment(_) => "storage error".into(),
            Self::Meta(_) => "metadata error".into(),
            other => other.to_string(),
        }
    }
}
