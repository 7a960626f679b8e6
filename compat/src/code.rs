//! Request codes, response codes, language codes and serialize types, with their fixed
//! protocol numbers. Unknown numbers are kept as `Unknown(n)`, never mapped to a neighbour.

use std::fmt;

macro_rules! code_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $num:expr => $wire:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A number this crate does not name.
            Unknown(i32),
        }

        impl $name {
            /// The enum value for a wire number.
            pub fn from_i32(n: i32) -> Self {
                match n {
                    $($num => Self::$variant,)*
                    other => Self::Unknown(other),
                }
            }

            /// The wire number.
            pub fn to_i32(self) -> i32 {
                match self {
                    $(Self::$variant => $num,)*
                    Self::Unknown(n) => n,
                }
            }

            /// The RocketMQ constant name (`SEND_MESSAGE_V2`), or `UNKNOWN` — bounded, so fit
            /// for metric labels.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)*
                    Self::Unknown(_) => "UNKNOWN",
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    Self::Unknown(n) => write!(f, "UNKNOWN({n})"),
                    other => f.write_str(other.name()),
                }
            }
        }
    };
}

code_enum!(
    /// Request codes (`RequestCode.java`, 4.9 and 5.x).
    RequestCode {
        /// 10
        SendMessage = 10 => "SEND_MESSAGE",
        /// 11
        PullMessage = 11 => "PULL_MESSAGE",
        /// 12
        QueryMessage = 12 => "QUERY_MESSAGE",
        /// 13
        QueryBrokerOffset = 13 => "QUERY_BROKER_OFFSET",
        /// 14
        QueryConsumerOffset = 14 => "QUERY_CONSUMER_OFFSET",
        /// 15
        UpdateConsumerOffset = 15 => "UPDATE_CONSUMER_OFFSET",
        /// 17
        UpdateAndCreateTopic = 17 => "UPDATE_AND_CREATE_TOPIC",
        /// 21
        GetAllTopicConfig = 21 => "GET_ALL_TOPIC_CONFIG",
        /// 25
        UpdateBrokerConfig = 25 => "UPDATE_BROKER_CONFIG",
        /// 26
        GetBrokerConfig = 26 => "GET_BROKER_CONFIG",
        /// 28
        GetBrokerRuntimeInfo = 28 => "GET_BROKER_RUNTIME_INFO",
        /// 29
        SearchOffsetByTimestamp = 29 => "SEARCH_OFFSET_BY_TIMESTAMP",
        /// 30
        GetMaxOffset = 30 => "GET_MAX_OFFSET",
        /// 31
        GetMinOffset = 31 => "GET_MIN_OFFSET",
        /// 32
        GetEarliestMsgStoretime = 32 => "GET_EARLIEST_MSG_STORETIME",
        /// 33
        ViewMessageById = 33 => "VIEW_MESSAGE_BY_ID",
        /// 34
        HeartBeat = 34 => "HEART_BEAT",
        /// 35
        UnregisterClient = 35 => "UNREGISTER_CLIENT",
        /// 36
        ConsumerSendMsgBack = 36 => "CONSUMER_SEND_MSG_BACK",
        /// 37
        EndTransaction = 37 => "END_TRANSACTION",
        /// 38
        GetConsumerListByGroup = 38 => "GET_CONSUMER_LIST_BY_GROUP",
        /// 39
        CheckTransactionState = 39 => "CHECK_TRANSACTION_STATE",
        /// 40
        NotifyConsumerIdsChanged = 40 => "NOTIFY_CONSUMER_IDS_CHANGED",
        /// 41
        LockBatchMq = 41 => "LOCK_BATCH_MQ",
        /// 42
        UnlockBatchMq = 42 => "UNLOCK_BATCH_MQ",
        /// 43
        GetAllConsumerOffset = 43 => "GET_ALL_CONSUMER_OFFSET",
        /// 45
        GetAllDelayOffset = 45 => "GET_ALL_DELAY_OFFSET",
        /// 46
        CheckClientConfig = 46 => "CHECK_CLIENT_CONFIG",
        /// 100
        PutKvConfig = 100 => "PUT_KV_CONFIG",
        /// 101
        GetKvConfig = 101 => "GET_KV_CONFIG",
        /// 102
        DeleteKvConfig = 102 => "DELETE_KV_CONFIG",
        /// 103
        RegisterBroker = 103 => "REGISTER_BROKER",
        /// 104
        UnregisterBroker = 104 => "UNREGISTER_BROKER",
        /// 105
        GetRouteinfoByTopic = 105 => "GET_ROUTEINFO_BY_TOPIC",
        /// 106
        GetBrokerClusterInfo = 106 => "GET_BROKER_CLUSTER_INFO",
        /// 200
        UpdateAndCreateSubscriptionGroup = 200 => "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
        /// 201
        GetAllSubscriptionGroupConfig = 201 => "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
        /// 202
        GetTopicStatsInfo = 202 => "GET_TOPIC_STATS_INFO",
        /// 203
        GetConsumerConnectionList = 203 => "GET_CONSUMER_CONNECTION_LIST",
        /// 204
        GetProducerConnectionList = 204 => "GET_PRODUCER_CONNECTION_LIST",
        /// 205
        WipeWritePermOfBroker = 205 => "WIPE_WRITE_PERM_OF_BROKER",
        /// 206
        GetAllTopicListFromNameserver = 206 => "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
        /// 207
        DeleteSubscriptionGroup = 207 => "DELETE_SUBSCRIPTIONGROUP",
        /// 208
        GetConsumeStats = 208 => "GET_CONSUME_STATS",
        /// 215
        DeleteTopicInBroker = 215 => "DELETE_TOPIC_IN_BROKER",
        /// 216
        DeleteTopicInNamesrv = 216 => "DELETE_TOPIC_IN_NAMESRV",
        /// 219
        GetKvlistByNamespace = 219 => "GET_KVLIST_BY_NAMESPACE",
        /// 220
        ResetConsumerClientOffset = 220 => "RESET_CONSUMER_CLIENT_OFFSET",
        /// 221
        GetConsumerStatusFromClient = 221 => "GET_CONSUMER_STATUS_FROM_CLIENT",
        /// 222
        InvokeBrokerToResetOffset = 222 => "INVOKE_BROKER_TO_RESET_OFFSET",
        /// 223
        InvokeBrokerToGetConsumerStatus = 223 => "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
        /// 224
        GetTopicsByCluster = 224 => "GET_TOPICS_BY_CLUSTER",
        /// 300
        QueryTopicConsumeByWho = 300 => "QUERY_TOPIC_CONSUME_BY_WHO",
        /// 303
        QueryConsumeTimeSpan = 303 => "QUERY_CONSUME_TIME_SPAN",
        /// 304
        GetSystemTopicListFromNs = 304 => "GET_SYSTEM_TOPIC_LIST_FROM_NS",
        /// 305
        GetSystemTopicListFromBroker = 305 => "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
        /// 307
        GetConsumerRunningInfo = 307 => "GET_CONSUMER_RUNNING_INFO",
        /// 309
        ConsumeMessageDirectly = 309 => "CONSUME_MESSAGE_DIRECTLY",
        /// 310
        SendMessageV2 = 310 => "SEND_MESSAGE_V2",
        /// 314
        CloneGroupOffset = 314 => "CLONE_GROUP_OFFSET",
        /// 315
        ViewBrokerStatsData = 315 => "VIEW_BROKER_STATS_DATA",
        /// 317
        GetBrokerConsumeStats = 317 => "GET_BROKER_CONSUME_STATS",
        /// 318
        UpdateNamesrvConfig = 318 => "UPDATE_NAMESRV_CONFIG",
        /// 319
        GetNamesrvConfig = 319 => "GET_NAMESRV_CONFIG",
        /// 320
        SendBatchMessage = 320 => "SEND_BATCH_MESSAGE",
        /// 324
        SendReplyMessage = 324 => "SEND_REPLY_MESSAGE",
        /// 325
        SendReplyMessageV2 = 325 => "SEND_REPLY_MESSAGE_V2",
        /// 326
        PushReplyMessageToClient = 326 => "PUSH_REPLY_MESSAGE_TO_CLIENT",
        /// 327
        AddWritePermOfBroker = 327 => "ADD_WRITE_PERM_OF_BROKER",
        /// 328
        GetAllProducerInfo = 328 => "GET_ALL_PRODUCER_INFO",
        /// 343
        QueryTopicsByConsumer = 343 => "QUERY_TOPICS_BY_CONSUMER",
        /// 351
        GetTopicConfig = 351 => "GET_TOPIC_CONFIG",
        /// 352
        GetSubscriptionGroupConfig = 352 => "GET_SUBSCRIPTIONGROUP_CONFIG",
        /// 361
        LitePullMessage = 361 => "LITE_PULL_MESSAGE",
        /// 3001
        AuthCreateUser = 3001 => "AUTH_CREATE_USER",
        /// 3002
        AuthUpdateUser = 3002 => "AUTH_UPDATE_USER",
        /// 3003
        AuthDeleteUser = 3003 => "AUTH_DELETE_USER",
        /// 3004
        AuthGetUser = 3004 => "AUTH_GET_USER",
        /// 3005
        AuthListUser = 3005 => "AUTH_LIST_USER",
        /// 3006
        AuthCreateAcl = 3006 => "AUTH_CREATE_ACL",
        /// 3007
        AuthUpdateAcl = 3007 => "AUTH_UPDATE_ACL",
        /// 3008
        AuthDeleteAcl = 3008 => "AUTH_DELETE_ACL",
        /// 3009
        AuthGetAcl = 3009 => "AUTH_GET_ACL",
        /// 3010
        AuthListAcl = 3010 => "AUTH_LIST_ACL",
    }
);

code_enum!(
    /// Response codes (`ResponseCode.java`, `RemotingSysResponseCode.java`).
    ResponseCode {
        /// 0
        Success = 0 => "SUCCESS",
        /// 1
        SystemError = 1 => "SYSTEM_ERROR",
        /// 2
        SystemBusy = 2 => "SYSTEM_BUSY",
        /// 3
        RequestCodeNotSupported = 3 => "REQUEST_CODE_NOT_SUPPORTED",
        /// 4
        TransactionFailed = 4 => "TRANSACTION_FAILED",
        /// 10
        FlushDiskTimeout = 10 => "FLUSH_DISK_TIMEOUT",
        /// 11
        SlaveNotAvailable = 11 => "SLAVE_NOT_AVAILABLE",
        /// 12
        FlushSlaveTimeout = 12 => "FLUSH_SLAVE_TIMEOUT",
        /// 13
        MessageIllegal = 13 => "MESSAGE_ILLEGAL",
        /// 14
        ServiceNotAvailable = 14 => "SERVICE_NOT_AVAILABLE",
        /// 15
        VersionNotSupported = 15 => "VERSION_NOT_SUPPORTED",
        /// 16
        NoPermission = 16 => "NO_PERMISSION",
        /// 17
        TopicNotExist = 17 => "TOPIC_NOT_EXIST",
        /// 18
        TopicExistAlready = 18 => "TOPIC_EXIST_ALREADY",
        /// 19
        PullNotFound = 19 => "PULL_NOT_FOUND",
        /// 20
        PullRetryImmediately = 20 => "PULL_RETRY_IMMEDIATELY",
        /// 21
        PullOffsetMoved = 21 => "PULL_OFFSET_MOVED",
        /// 22
        QueryNotFound = 22 => "QUERY_NOT_FOUND",
        /// 23
        SubscriptionParseFailed = 23 => "SUBSCRIPTION_PARSE_FAILED",
        /// 24
        SubscriptionNotExist = 24 => "SUBSCRIPTION_NOT_EXIST",
        /// 25
        SubscriptionNotLatest = 25 => "SUBSCRIPTION_NOT_LATEST",
        /// 26
        SubscriptionGroupNotExist = 26 => "SUBSCRIPTION_GROUP_NOT_EXIST",
        /// 27
        FilterDataNotExist = 27 => "FILTER_DATA_NOT_EXIST",
        /// 28
        FilterDataNotLatest = 28 => "FILTER_DATA_NOT_LATEST",
        /// 29
        InvalidParameter = 29 => "INVALID_PARAMETER",
        /// 206
        ConsumerNotOnline = 206 => "CONSUMER_NOT_ONLINE",
        /// 207
        ConsumeMsgTimeout = 207 => "CONSUME_MSG_TIMEOUT",
        /// 215
        FlowControl = 215 => "FLOW_CONTROL",
        /// 604
        IllegalOperation = 604 => "ILLEGAL_OPERATION",
        /// 1500
        GoAway = 1500 => "GO_AWAY",
        /// 3001
        UserNotExist = 3001 => "USER_NOT_EXIST",
        /// 3002
        PolicyNotExist = 3002 => "POLICY_NOT_EXIST",
    }
);

/// The sender's language (`LanguageCode.java`). JSON carries the name, binary the byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LanguageCode {
    /// 0
    #[default]
    Java,
    /// 1
    Cpp,
    /// 2
    Dotnet,
    /// 3
    Python,
    /// 4
    Delphi,
    /// 5
    Erlang,
    /// 6
    Ruby,
    /// 7 (also every unknown name)
    Other,
    /// 8
    Http,
    /// 9
    Go,
    /// 10
    Php,
    /// 11
    Oms,
    /// 12
    Rust,
    /// 13
    NodeJs,
}

const LANGUAGES: [(LanguageCode, &str); 14] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::Dotnet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
    (LanguageCode::NodeJs, "NODE_JS"),
];

impl LanguageCode {
    /// The JSON name (`JAVA`, `CPP`, …).
    pub fn name(self) -> &'static str {
        LANGUAGES
            .iter()
            .find(|(l, _)| *l == self)
            .map_or("OTHER", |(_, n)| n)
    }

    /// The binary byte.
    pub fn to_byte(self) -> u8 {
        LANGUAGES
            .iter()
            .position(|(l, _)| *l == self)
            .map_or(7, |i| i as u8)
    }

    /// From a JSON name; unknown names map to [`LanguageCode::Other`].
    pub fn from_name(name: &str) -> Self {
        LANGUAGES
            .iter()
            .find(|(_, n)| *n == name)
            .map_or(Self::Other, |(l, _)| *l)
    }

    /// From the binary byte; unknown bytes map to [`LanguageCode::Other`].
    pub fn from_byte(b: u8) -> Self {
        LANGUAGES
            .get(usize::from(b))
            .map_or(Self::Other, |(l, _)| *l)
    }
}

/// Header encoding of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    /// 0: JSON header.
    #[default]
    Json,
    /// 1: ROCKETMQ binary header.
    RocketMq,
}

impl SerializeType {
    /// The type byte.
    pub fn to_byte(self) -> u8 {
        match self {
            Self::Json => 0,
            Self::RocketMq => 1,
        }
    }

    /// From the type byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Self::Json),
            1 => Some(Self::RocketMq),
            _ => None,
        }
    }

    /// The name used in `serializeTypeCurrentRPC`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::RocketMq => "ROCKETMQ",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_is_kept() {
        assert_eq!(RequestCode::from_i32(310), RequestCode::SendMessageV2);
        assert_eq!(RequestCode::SendMessageV2.to_i32(), 310);
        assert_eq!(RequestCode::from_i32(9999), RequestCode::Unknown(9999));
        assert_eq!(RequestCode::Unknown(9999).to_i32(), 9999);
        assert_eq!(ResponseCode::from_i32(21), ResponseCode::PullOffsetMoved);
        assert_eq!(LanguageCode::from_name("GO"), LanguageCode::Go);
        assert_eq!(LanguageCode::from_name("COBOL"), LanguageCode::Other);
        assert_eq!(LanguageCode::Rust.to_byte(), 12);
        assert_eq!(LanguageCode::from_byte(9), LanguageCode::Go);
    }
}
