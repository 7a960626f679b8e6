//! Gateway errors and their one mapping to RocketMQ response codes.

use stratus_compat::{HeaderError, ResponseCode};
use stratus_meta::MetaError;
use stratus_segments::SegmentError;
use thiserror::Error;

/// Anything a request processor can fail with.
#[derive(Debug, Error)]
pub(crate) enum GatewayError {
    /// A header field is missing or malformed.
    #[error("{0}")]
    Header(#[from] HeaderError),
    /// The request carries an invalid parameter (topic name, queue id …).
    #[error("{0}")]
    InvalidParameter(String),
    /// The message is illegal (too large, bad properties, batch to a retry topic).
    #[error("{0}")]
    MessageIllegal(String),
    /// The topic does not exist and cannot be created.
    #[error("{0}")]
    TopicNotExist(String),
    /// The topic or broker is not writable/readable, or a reserved topic.
    #[error("{0}")]
    NoPermission(String),
    /// The subscription expression does not compile.
    #[error("{0}")]
    SubscriptionParseFailed(String),
    /// No subscription for the pull.
    #[error("{0}")]
    SubscriptionNotExist(String),
    /// The stored subscription is older than the pull's.
    #[error("{0}")]
    SubscriptionNotLatest(String),
    /// The shard is not owned by this node.
    #[error("{0}")]
    ServiceNotAvailable(String),
    /// A bound was hit.
    #[error("{0}")]
    Busy(String),
    /// The request is known but not supported by Stratus (yet).
    #[error("{0}")]
    NotSupported(String),
    /// A system error with a client-safe message (e.g. "no consumer for this group").
    #[error("{0}")]
    System(String),
    /// Storage failure.
    #[error("storage: {0}")]
    Segment(#[from] SegmentError),
    /// Metadata failure.
    #[error("metadata: {0}")]
    Meta(#[from] MetaError),
}

impl GatewayError {
    /// The response code for this error. Exhaustive, no `_` arm: a new variant needs a
    /// decision.
    pub(crate) fn response_code(&self) -> ResponseCode {
        match self {
            Self::Header(_) => ResponseCode::SystemError,
            Self::InvalidParameter(_) => ResponseCode::InvalidParameter,
            Self::MessageIllegal(_) => ResponseCode::MessageIllegal,
            Self::TopicNotExist(_) => ResponseCode::TopicNotExist,
            Self::NoPermission(_) => ResponseCode::NoPermission,
            Self::SubscriptionParseFailed(_) => ResponseCode::SubscriptionParseFailed,
            Self::SubscriptionNotExist(_) => ResponseCode::SubscriptionNotExist,
            Self::SubscriptionNotLatest(_) => ResponseCode::SubscriptionNotLatest,
            Self::ServiceNotAvailable(_) => ResponseCode::ServiceNotAvailable,
            Self::Busy(_) => ResponseCode::SystemBusy,
            Self::NotSupported(_) => ResponseCode::RequestCodeNotSupported,
            Self::System(_) => ResponseCode::SystemError,
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

/// Result alias.
pub(crate) type Result<T, E = GatewayError> = std::result::Result<T, E>;
