//! LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42) bodies (`docs/remoting-protocol.md#queue-locks`).

use serde::{Deserialize, Serialize};

/// A message queue as JSON: `{"brokerName","queueId","topic"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    /// Broker (shard) name.
    pub broker_name: String,
    /// Queue id.
    pub queue_id: i32,
    /// Topic.
    pub topic: String,
}

/// LockBatchRequestBody / UnlockBatchRequestBody (C++ omits `onlyThisBroker`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LockBatchRequestBody {
    /// Group.
    #[serde(default)]
    pub consumer_group: String,
    /// Client id.
    #[serde(default)]
    pub client_id: String,
    /// Lock only queues of the receiving broker.
    #[serde(default)]
    pub only_this_broker: bool,
    /// Queues to lock or unlock.
    #[serde(default)]
    pub mq_set: Vec<MessageQueue>,
}

/// LockBatchResponseBody.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LockBatchResponseBody {
    /// The queues now locked by the requesting client.
    #[serde(rename = "lockOKMQSet")]
    pub lock_ok_mq_set: Vec<MessageQueue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::heartbeat::decode_json_body;

    #[test]
    fn cpp_lock_body_without_only_this_broker_and_with_a_newline_decodes() {
        let body = b"{\"clientId\":\"c\",\"consumerGroup\":\"g\",\"mqSet\":[{\"brokerName\":\"broker-0\",\"queueId\":1,\"topic\":\"T\"}]}\n";
        let b: LockBatchRequestBody = decode_json_body(body).unwrap();
        assert_eq!(b.mq_set.len(), 1);
        assert!(!b.only_this_broker);
        let out = serde_json::to_string(&LockBatchResponseBody {
            lock_ok_mq_set: b.mq_set,
        })
        .unwrap();
        assert!(out.starts_with("{\"lockOKMQSet\":[{\"brokerName\":\"broker-0\""));
    }
}
