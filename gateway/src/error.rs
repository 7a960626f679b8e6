//! The gateway's errors, protocol-neutral. Each variant carries its data (names, ids,
//! offsets) and its text is the reference broker's wording, written here once. Each front
//! end maps them to its protocol's codes in one place (RocketMQ: `remoting/codes.rs`).

use stratus_compat::HeaderError;
use stratus_compat::topic::TopicNameError;
use stratus_meta::{MetaError, ShardId};
use stratus_segments::SegmentError;
use thiserror::Error;

/// Anything a request can fail with.
#[derive(Debug, Error)]
pub(crate) enum GatewayError {
    /// A header field is missing or malformed.
    #[error("{0}")]
    Header(#[from] HeaderError),
    /// A topic name breaks the naming rules.
    #[error("{0}")]
    TopicName(#[from] TopicNameError),
    /// Another invalid parameter.
    #[error("{0}")]
    InvalidParameter(String),
    /// A send names a queue the topic does not have.
    #[error(
        "request queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.writeQueueNums:[{write_queues}] consumerQueueNums:[{read_queues}]"
    )]
    SendQueueIllegal {
        /// Queue asked for.
        queue_id: i32,
        /// Topic.
        topic: String,
        /// The topic's write queues.
        write_queues: i32,
        /// The topic's read queues.
        read_queues: i32,
    },
    /// A pull names a queue the topic does not have.
    #[error(
        "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{read_queues}] consumer:[{consumer}]"
    )]
    PullQueueIllegal {
        /// Queue asked for.
        queue_id: i32,
        /// Topic.
        topic: String,
        /// The topic's read queues.
        read_queues: i32,
        /// The consumer's address.
        consumer: std::net::SocketAddr,
    },
    /// Admin: a user topic may not take a system topic's name.
    #[error("The topic[{topic}] is conflict with system topic.")]
    SystemTopicConflict {
        /// Topic.
        topic: String,
    },
    /// A group name too long for its retry or dead-letter topic.
    #[error("group name too long for {topic}")]
    GroupNameTooLong {
        /// The retry or dead-letter topic it would make.
        topic: String,
    },
    /// A message body larger than `broker.max_message_size`.
    #[error("the message body size {size} is greater than the max message size {max}")]
    BodyTooLarge {
        /// Body bytes.
        size: usize,
        /// Limit.
        max: usize,
    },
    /// Encoded properties longer than their 16-bit length allows.
    #[error("the message properties length {len} is greater than {max}")]
    PropertiesTooLong {
        /// Encoded length.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// VIEW_BROKER_STATS_DATA for a counter that does not exist.
    #[error("The stats <{name}> <{key}> not exist")]
    StatsNotExist {
        /// Stats name.
        name: String,
        /// Key.
        key: String,
    },
    /// UPDATE_BROKER_CONFIG of a key that cannot change at run time.
    #[error("Can not update config in black list.")]
    ConfigNotUpdatable {
        /// The first such key.
        key: String,
    },
    /// A batch sent to a retry topic.
    #[error("batch request does not support retry group")]
    BatchToRetryTopic,
    /// A batch body that does not decode.
    #[error("malformed batch body: {0}")]
    MalformedBatch(String),
    /// A batch with no message.
    #[error("empty batch")]
    EmptyBatch,
    /// A timer property that is not a number.
    #[error("timer property {key} is not a number: {value:?}")]
    BadTimerProperty {
        /// Property name.
        key: &'static str,
        /// Its value.
        value: String,
    },
    /// The topic does not exist and cannot be created.
    #[error("topic[{topic}] not exist, apply first please!")]
    TopicNotExist {
        /// Topic.
        topic: String,
    },
    /// A consumer-offset update for a topic this node does not know.
    #[error("topic[{topic}] not exist")]
    UnknownTopic {
        /// Topic.
        topic: String,
    },
    /// A system topic clients may not send to.
    #[error("Sending message to topic[{topic}] is forbidden.")]
    NotSendable {
        /// Topic.
        topic: String,
    },
    /// The topic is not writable.
    #[error("the topic[{topic}] sending message is forbidden")]
    NotWritable {
        /// Topic.
        topic: String,
    },
    /// The topic is not readable.
    #[error("the topic[{topic}] pulling message is forbidden")]
    NotReadable {
        /// Topic.
        topic: String,
    },
    /// The subscription expression does not compile.
    #[error("{0}")]
    SubscriptionParseFailed(String),
    /// A pull of a group that has not sent a heartbeat.
    #[error("the consumer's group info not exist, group: {group}")]
    GroupNotExist {
        /// Consumer group.
        group: String,
    },
    /// A pull of a topic the group does not subscribe.
    #[error("the consumer's subscription not exist, group: {group}, topic: {topic}")]
    SubscriptionNotExist {
        /// Consumer group.
        group: String,
        /// Topic.
        topic: String,
    },
    /// The stored subscription is older than the pull's.
    #[error(
        "the consumer's subscription not latest, group: {group} subscription version: {version}"
    )]
    SubscriptionNotLatest {
        /// Consumer group.
        group: String,
        /// The stored subscription's version.
        version: i64,
    },
    /// A group with no live consumer.
    #[error("no consumer for this group, {group}")]
    NoConsumer {
        /// Consumer group.
        group: String,
    },
    /// The shard a request targets is not owned by this node (`None`: the one its broker
    /// name or port named could not be resolved).
    #[error("{}", match .shard { Some(s) => format!("shard {s} is not owned here"), None => "the shard is not owned by this node".to_owned() })]
    ShardNotOwned {
        /// The shard, when known.
        shard: Option<ShardId>,
    },
    /// A request code Stratus does not serve (yet).
    #[error(" request type {code} not supported")]
    NotSupported {
        /// Request code.
        code: i32,
    },
    /// No message is stored at a commit-log offset (query by id).
    #[error("can not find message by the offset, {offset}")]
    NoMessageAtOffset {
        /// Commit-log offset.
        offset: i64,
    },
    /// No message is stored at a commit-log offset (transactions, send-back).
    #[error("look message by offset failed, {offset}")]
    LookMessageFailed {
        /// Commit-log offset.
        offset: i64,
    },
    /// END_TRANSACTION: an offset that names no shard.
    #[error("The commit log offset wrong: {offset}")]
    CommitLogOffsetWrong {
        /// Commit-log offset.
        offset: i64,
    },
    /// END_TRANSACTION: another end of the same half message is under way.
    #[error("the transaction is already being ended")]
    TransactionBeingEnded,
    /// END_TRANSACTION: the producer group differs from the half message's.
    #[error("The producer group wrong")]
    ProducerGroupWrong,
    /// END_TRANSACTION: the half-queue offset differs from the half message's.
    #[error("The transaction state table offset wrong")]
    TranStateTableOffsetWrong,
    /// A stored record that does not decode.
    #[error("corrupt {what}: {detail}")]
    CorruptRecord {
        /// What the record was (half message, scheduled message, …).
        what: &'static str,
        /// The decoder's message.
        detail: String,
    },
    /// A request to relay to a consumer that has no channel on this node.
    #[error("The Consumer <{group}> <{client_id}> not online")]
    ConsumerNotConnected {
        /// Consumer group.
        group: String,
        /// Client id.
        client_id: String,
    },
    /// A consumer did not answer a relayed request in time.
    #[error("consumer <{group}> <{client_id}> Timeout: {detail}")]
    ConsumerTimeout {
        /// Consumer group.
        group: String,
        /// Client id.
        client_id: String,
        /// What the wait saw.
        detail: String,
    },
    /// A relayed request could not reach the consumer (its connection closed, too many
    /// requests await it).
    #[error("invoke consumer <{group}> <{client_id}> Exception: {detail}")]
    ConsumerInvokeFailed {
        /// Consumer group.
        group: String,
        /// Client id.
        client_id: String,
        /// Why.
        detail: String,
    },
    /// Offset reset of a group with no consumer connected to this node.
    #[error(
        "Consumer not online, so can not reset offset, Group: {group} Topic: {topic} Timestamp: {timestamp}"
    )]
    ConsumerNotOnline {
        /// Consumer group.
        group: String,
        /// Topic.
        topic: String,
        /// The reset's timestamp.
        timestamp: i64,
    },
    /// Consumer status of a group with no consumer connected to this node.
    #[error("No Any Consumer online in the consumer group: [{group}]")]
    NoConsumerOnline {
        /// Consumer group.
        group: String,
    },
    /// Offset reset of a topic this node does not know.
    #[error("[reset-offset] reset offset failed, no topic in this broker. topic={topic}")]
    ResetTopicNotExist {
        /// Topic.
        topic: String,
    },
    /// Offset reset of one queue to an offset outside the queue.
    #[error("Target offset {offset} not in consume queue range [{min}-{max}]")]
    ResetOffsetOutOfRange {
        /// Asked for.
        offset: i64,
        /// The queue's min offset.
        min: i64,
        /// The queue's max offset.
        max: i64,
    },
    /// A reply that could not be pushed to its requester (the reference's remark).
    #[error("{0}")]
    ReplyNotPushed(String),
    /// The client's connection closed while its request waited.
    #[error("connection closed")]
    ConnectionClosed,
    /// Authentication or authorization refused the request (the reference's remark).
    #[error("{0}")]
    AccessDenied(String),
    /// An ACL admin request the reference answers SYSTEM_ERROR with this remark.
    #[error("{0}")]
    AuthAdmin(String),
    /// A JSON body that cannot be encoded.
    #[error("encode body: {0}")]
    EncodeBody(String),
    /// Storage failure.
    #[error("storage: {0}")]
    Segment(#[from] SegmentError),
    /// Metadata failure.
    #[error("metadata: {0}")]
    Meta(#[from] MetaError),
    /// GET_CONSUMER_CONNECTION_LIST of a group without a live member.
    #[error("the consumer group[{group}] not online")]
    GroupNotOnline {
        /// Consumer group.
        group: String,
    },
    /// GET_PRODUCER_CONNECTION_LIST of a group without a live member.
    #[error("the producer group[{group}] not exist")]
    ProducerGroupNotExist {
        /// Producer group.
        group: String,
    },
    /// GET_SUBSCRIPTIONGROUP_CONFIG of a group that does not exist (and may not be created).
    #[error("No group in this broker")]
    SubscriptionGroupNotExist {
        /// Consumer group.
        group: String,
    },
    /// A pull of a group that does not exist and may not be created.
    #[error(
        "subscription group [{group}] does not exist, \nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
    )]
    PullGroupNotExist {
        /// Consumer group.
        group: String,
    },
    /// A pull of a group whose `consumeEnable` is off.
    #[error("subscription group no permission, {group}")]
    GroupConsumeDisabled {
        /// Consumer group.
        group: String,
    },
    /// GET_TOPIC_CONFIG of a topic that does not exist.
    #[error("No topic in this broker. topic: {topic}")]
    NoTopicInBroker {
        /// Topic.
        topic: String,
    },
}

/// Result alias.
pub(crate) type Result<T, E = GatewayError> = std::result::Result<T, E>;
