//! HEART_BEAT (34) body, UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
//! NOTIFY_CONSUMER_IDS_CHANGED (40), CHECK_CLIENT_CONFIG (46)
//! (`docs/remoting-protocol.md#heartbeat-and-groups`).
//!
//! Bodies come from three JSON dialects: fastjson (Java), Go, jsoncpp (C++: enums as
//! ordinals, `subVersion` as a string, trailing newline). Decoding accepts all of them.

use serde::{Deserialize, Deserializer, Serialize};

use crate::command::RemotingCommand;
use crate::error::HeaderError;

use super::{opt_str, req_str};

/// Decodes a JSON body, tolerating trailing whitespace/newlines.
///
/// # Errors
/// [`HeaderError::BadBody`] when the body is not valid JSON of type `T`.
pub fn decode_json_body<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, HeaderError> {
    serde_json::from_slice(body).map_err(|e| HeaderError::BadBody(e.to_string()))
}

macro_rules! lenient_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $ord:literal => $wire:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $wire)] $variant,)*
        }

        impl $name {
            /// From a name (case-insensitive) or an ordinal.
            pub fn parse(v: &serde_json::Value) -> Option<Self> {
                match v {
                    serde_json::Value::String(s) => {
                        $(if s.eq_ignore_ascii_case($wire) { return Some(Self::$variant); })*
                        s.trim().parse::<i64>().ok().and_then(Self::from_ordinal)
                    }
                    serde_json::Value::Number(n) => n.as_i64().and_then(Self::from_ordinal),
                    _ => None,
                }
            }

            fn from_ordinal(n: i64) -> Option<Self> {
                match n {
                    $($ord => Some(Self::$variant),)*
                    _ => None,
                }
            }

            /// The wire name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)*
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = serde_json::Value::deserialize(d)?;
                Self::parse(&v).ok_or_else(|| {
                    serde::de::Error::custom(format!("invalid {} value {v}", stringify!($name)))
                })
            }
        }
    };
}

lenient_enum!(
    /// ConsumeType.
    ConsumeType {
        /// Pull.
        ConsumeActively = 0 => "CONSUME_ACTIVELY",
        /// Push.
        ConsumePassively = 1 => "CONSUME_PASSIVELY",
        /// 5.x POP.
        ConsumePop = 2 => "CONSUME_POP",
    }
);

lenient_enum!(
    /// MessageModel.
    MessageModel {
        /// Every consumer gets every message.
        Broadcasting = 0 => "BROADCASTING",
        /// Consumers of a group share the queues.
        Clustering = 1 => "CLUSTERING",
    }
);

lenient_enum!(
    /// ConsumeFromWhere.
    ConsumeFromWhere {
        /// Default.
        ConsumeFromLastOffset = 0 => "CONSUME_FROM_LAST_OFFSET",
        /// Deprecated.
        ConsumeFromLastOffsetAndFromMinWhenBootFirst = 1 => "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        /// Deprecated.
        ConsumeFromMinOffset = 2 => "CONSUME_FROM_MIN_OFFSET",
        /// Deprecated.
        ConsumeFromMaxOffset = 3 => "CONSUME_FROM_MAX_OFFSET",
        /// From the first offset.
        ConsumeFromFirstOffset = 4 => "CONSUME_FROM_FIRST_OFFSET",
        /// From a timestamp.
        ConsumeFromTimestamp = 5 => "CONSUME_FROM_TIMESTAMP",
    }
);

/// A list of integers given as numbers or numeric strings; anything else is skipped.
fn lenient_i64_vec<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    let v = Option::<Vec<serde_json::Value>>::deserialize(d)?.unwrap_or_default();
    Ok(v.iter()
        .filter_map(|x| match x {
            serde_json::Value::Number(n) => n.as_i64(),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        })
        .collect())
}

fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    match &v {
        serde_json::Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .ok_or_else(|| serde::de::Error::custom("bad number")),
        serde_json::Value::String(s) if s.trim().is_empty() => Ok(0),
        serde_json::Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("bad number {s:?}"))),
        serde_json::Value::Null => Ok(0),
        _ => Err(serde::de::Error::custom(format!("bad number {v}"))),
    }
}

fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(match v {
        serde_json::Value::Bool(b) => b,
        serde_json::Value::Number(n) => n.as_i64().unwrap_or(0) != 0,
        serde_json::Value::String(s) => super::parse_bool(&s),
        _ => false,
    })
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// HeartbeatData body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatData {
    /// Client id (note the capital `ID` on the wire).
    #[serde(rename = "clientID", default)]
    pub client_id: String,
    /// Producer groups of the client.
    #[serde(default, deserialize_with = "null_as_default")]
    pub producer_data_set: Vec<ProducerData>,
    /// Consumer groups of the client.
    #[serde(default, deserialize_with = "null_as_default")]
    pub consumer_data_set: Vec<ConsumerData>,
    /// 5.x heartbeat V2 fingerprint.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub heartbeat_fingerprint: i64,
    /// 5.x heartbeat V2: subscriptions omitted.
    #[serde(default, deserialize_with = "lenient_bool")]
    pub without_sub: bool,
}

/// ProducerData.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ProducerData {
    /// Producer group.
    pub group_name: String,
}

/// ConsumerData.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerData {
    /// Group.
    pub group_name: String,
    /// Pull or push.
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// First-start policy.
    pub consume_from_where: ConsumeFromWhere,
    /// Subscriptions.
    #[serde(default, deserialize_with = "null_as_default")]
    pub subscription_data_set: Vec<SubscriptionData>,
    /// Unit mode.
    #[serde(default, deserialize_with = "lenient_bool")]
    pub unit_mode: bool,
}

/// SubscriptionData.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    /// Topic.
    pub topic: String,
    /// Expression (`*`, `TagA || TagB`, or SQL92 text).
    #[serde(default)]
    pub sub_string: String,
    /// Tags as sent (not trusted; recomputed from `sub_string`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags_set: Vec<String>,
    /// Codes as sent (not trusted; Go sends them as strings, C++ as zeros).
    #[serde(default, deserialize_with = "lenient_i64_vec")]
    pub code_set: Vec<i64>,
    /// Version (ms timestamp); C++ sends a string.
    #[serde(default, deserialize_with = "lenient_i64")]
    pub sub_version: i64,
    /// `TAG` (default) or `SQL92`.
    #[serde(default)]
    pub expression_type: Option<String>,
    /// Legacy class filter.
    #[serde(default, deserialize_with = "lenient_bool")]
    pub class_filter_mode: bool,
}

/// UNREGISTER_CLIENT (35) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnregisterClientRequestHeader {
    /// Client id.
    pub client_id: String,
    /// Producer group (may be empty).
    pub producer_group: Option<String>,
    /// Consumer group (may be empty).
    pub consumer_group: Option<String>,
}

impl UnregisterClientRequestHeader {
    /// Decodes; empty group strings become `None`.
    ///
    /// # Errors
    /// [`HeaderError`] when `clientID` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        let non_empty = |s: Option<String>| s.filter(|s| !s.is_empty());
        Ok(Self {
            client_id: req_str(cmd, "clientID")?,
            producer_group: non_empty(opt_str(cmd, "producerGroup")),
            consumer_group: non_empty(opt_str(cmd, "consumerGroup")),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("clientID", &self.client_id);
        if let Some(p) = &self.producer_group {
            cmd.put_ext("producerGroup", p);
        }
        if let Some(c) = &self.consumer_group {
            cmd.put_ext("consumerGroup", c);
        }
    }
}

/// Header with just `consumerGroup`: GET_CONSUMER_LIST_BY_GROUP (38),
/// NOTIFY_CONSUMER_IDS_CHANGED (40), GET_CONSUMER_CONNECTION_LIST (203).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupHeader {
    /// Group.
    pub consumer_group: String,
}

impl ConsumerGroupHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `consumerGroup` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            consumer_group: req_str(cmd, "consumerGroup")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("consumerGroup", &self.consumer_group);
    }
}

/// GET_CONSUMER_LIST_BY_GROUP response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerIdList {
    /// Client ids.
    pub consumer_id_list: Vec<String>,
}

/// CHECK_CLIENT_CONFIG (46) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CheckClientConfigBody {
    /// Client id.
    #[serde(default)]
    pub client_id: String,
    /// Group.
    #[serde(default)]
    pub group: String,
    /// The subscription to check.
    #[serde(default)]
    pub subscription_data: Option<SubscriptionData>,
}

#[cfg(test)]
mod lenient_tests {
    use super::*;

    #[test]
    fn go_heartbeat_with_string_codes_decodes() {
        let body = br#"{"clientID":"127.0.0.1@1","producerDataSet":[],"consumerDataSet":[{"groupName":"CG","consumeType":"CONSUME_PASSIVELY","messageModel":"Clustering","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"TagA || TagB","tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],"subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}"#;
        let hb: HeartbeatData = decode_json_body(body).unwrap();
        let sub = &hb.consumer_data_set[0].subscription_data_set[0];
        assert_eq!(sub.code_set, vec![2_598_919, 2_598_920]);
        assert_eq!(
            hb.consumer_data_set[0].message_model,
            MessageModel::Clustering
        );
    }
}
