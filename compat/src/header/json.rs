//! The JSON header encoding (`docs/remoting-protocol.md#json-header`).
//!
//! ```text
//! {"code":310,"extFields":{"a":"PG",…},"flag":0,"language":"JAVA","opaque":7,
//!  "remark":"…","serializeTypeCurrentRPC":"JSON","version":479}
//! ```
//!
//! Decoding is lenient, because real clients differ: keys in any order and unknown keys
//! ignored; trailing whitespace (the C++ client ends its header with `\n`); `remark`,
//! `extFields`, `serializeTypeCurrentRPC` missing or `null`; ext values that are JSON numbers
//! or booleans (C++) become their text (`4`, `true`), `null` values are dropped; unknown
//! language names map to OTHER. Only `code` is mandatory.
//!
//! Encoding follows fastjson: keys sorted, `extFields` omitted when empty, `remark` omitted
//! when `None`, `language` as its name, `serializeTypeCurrentRPC` always `"JSON"`, every ext
//! value a JSON string (Go and C++ read response fields only as strings; the Rust client
//! rejects a header without `serializeTypeCurrentRPC`).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{CommandHeader, HeaderDecodeError};
use crate::code::LanguageCode;
use crate::command::{ExtFields, RemotingCommand};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireIn {
    #[serde(deserialize_with = "lenient_i32")]
    code: i32,
    #[serde(default, deserialize_with = "lenient_language")]
    language: LanguageCode,
    #[serde(default, deserialize_with = "lenient_i32")]
    version: i32,
    #[serde(default, deserialize_with = "lenient_i32")]
    opaque: i32,
    #[serde(default, deserialize_with = "lenient_i32")]
    flag: i32,
    #[serde(default, deserialize_with = "lenient_remark")]
    remark: Option<String>,
    #[serde(default, deserialize_with = "lenient_ext_fields")]
    ext_fields: ExtFields,
}

#[derive(Serialize)]
struct WireOut<'a> {
    code: i32,
    #[serde(rename = "extFields", skip_serializing_if = "BTreeMap::is_empty")]
    ext_fields: &'a ExtFields,
    flag: i32,
    language: &'static str,
    opaque: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    remark: Option<&'a str>,
    #[serde(rename = "serializeTypeCurrentRPC")]
    serialize_type_current_rpc: &'static str,
    version: i32,
}

/// Decodes a JSON header.
///
/// # Errors
/// [`HeaderDecodeError::Json`] when the bytes are not a JSON object, `code` is missing, or a
/// field has a type no client sends (e.g. an object for `opaque`).
pub fn decode(src: &[u8]) -> Result<CommandHeader, HeaderDecodeError> {
    // serde would also accept a JSON array for a struct; a header is always an object.
    if src.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(HeaderDecodeError::Json(
            "header is not a JSON object".to_owned(),
        ));
    }
    let w: WireIn =
        serde_json::from_slice(src).map_err(|e| HeaderDecodeError::Json(e.to_string()))?;
    Ok(CommandHeader {
        code: w.code,
        language: w.language,
        version: w.version,
        opaque: w.opaque,
        flag: w.flag,
        remark: w.remark,
        ext_fields: w.ext_fields,
    })
}

/// Appends the JSON header of `cmd` (its body and serialize type are ignored) to `dst`.
pub fn encode(cmd: &RemotingCommand, dst: &mut Vec<u8>) {
    let out = WireOut {
        code: cmd.code,
        ext_fields: &cmd.ext_fields,
        flag: cmd.flag,
        language: cmd.language.name(),
        opaque: cmd.opaque,
        remark: cmd.remark.as_deref(),
        serialize_type_current_rpc: "JSON",
        version: cmd.version,
    };
    // Integers, strings and a map with string keys always serialize, and writing to a Vec
    // cannot fail.
    serde_json::to_writer(dst, &out).expect("a JSON header always serializes");
}

/// Text form of a scalar as Java would see it after `toString()`.
fn scalar_text(v: Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        other => Some(other.to_string()),
    }
}

fn lenient_i32<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    use serde::de::Error;
    let v = Value::deserialize(d)?;
    let n = match &v {
        Value::Null => return Ok(0),
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    n.and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| D::Error::custom(format!("not an i32: {v}")))
}

fn lenient_language<'de, D: Deserializer<'de>>(d: D) -> Result<LanguageCode, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => LanguageCode::from_name(&s),
        Value::Number(n) => n
            .as_u64()
            .and_then(|b| u8::try_from(b).ok())
            .map_or(LanguageCode::Other, LanguageCode::from_byte),
        _ => LanguageCode::Other,
    })
}

fn lenient_remark<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(scalar_text(Value::deserialize(d)?))
}

fn lenient_ext_fields<'de, D: Deserializer<'de>>(d: D) -> Result<ExtFields, D::Error> {
    let map = Option::<BTreeMap<String, Value>>::deserialize(d)?.unwrap_or_default();
    Ok(map
        .into_iter()
        .filter_map(|(k, v)| scalar_text(v).map(|v| (k, v)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::RemotingCommand;

    fn cmd_of(h: CommandHeader) -> RemotingCommand {
        RemotingCommand::from_header(h, crate::SerializeType::Json, bytes::Bytes::new())
    }

    #[test]
    fn cpp_header_with_numbers_and_trailing_newline_decodes() {
        let raw = b"{\"code\":10,\"extFields\":{\"queueId\":3,\"topic\":\"T\",\"unitMode\":\"0\",\
                    \"ok\":true,\"gone\":null},\"flag\":0,\"language\":\"CPP\",\"opaque\":1,\
                    \"remark\":\"\",\"version\":63}\n";
        let h = decode(raw).unwrap();
        assert_eq!(h.code, 10);
        assert_eq!(h.language, LanguageCode::Cpp);
        assert_eq!(h.version, 63);
        assert_eq!(h.opaque, 1);
        assert_eq!(h.remark.as_deref(), Some(""));
        assert_eq!(h.ext_fields.get("queueId").map(String::as_str), Some("3"));
        assert_eq!(h.ext_fields.get("ok").map(String::as_str), Some("true"));
        assert_eq!(h.ext_fields.get("unitMode").map(String::as_str), Some("0"));
        assert!(!h.ext_fields.contains_key("gone"));
    }

    #[test]
    fn rust_header_with_null_remark_and_null_ext_fields_decodes() {
        let raw = br#"{"code":0,"language":"RUST","version":474,"opaque":4,"flag":1,
                       "remark":null,"extFields":null,"serializeTypeCurrentRPC":"JSON"}"#;
        let h = decode(raw).unwrap();
        assert_eq!(
            (h.code, h.language, h.opaque, h.flag),
            (0, LanguageCode::Rust, 4, 1)
        );
        assert_eq!(h.remark, None);
        assert!(h.ext_fields.is_empty());
    }

    #[test]
    fn missing_optional_keys_and_unknown_language_are_accepted() {
        let h = decode(br#"{"language":"COBOL","code":34,"extra":[1,2]}"#).unwrap();
        assert_eq!(h.code, 34);
        assert_eq!(h.language, LanguageCode::Other);
        assert_eq!((h.version, h.opaque, h.flag), (0, 0, 0));
    }

    #[test]
    fn header_without_code_or_not_an_object_is_rejected() {
        assert!(decode(br#"{"opaque":1}"#).is_err());
        assert!(decode(b"[1]").is_err());
        assert!(decode(b"").is_err());
        assert!(decode(br#"{"code":99999999999}"#).is_err());
        assert!(decode(br#"{"code":1,"opaque":{}}"#).is_err());
    }

    #[test]
    fn encoding_matches_the_documented_java_response_bytes() {
        // docs/remoting-protocol.md#worked-examples: the 95-byte JSON response.
        let mut cmd = RemotingCommand::response(7, crate::ResponseCode::Success, None);
        cmd.version = 401;
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        let text = r#"{"code":0,"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":401}"#;
        assert_eq!(String::from_utf8(out).unwrap(), text);
        assert_eq!(text.len(), 95);
    }

    #[test]
    fn encoding_sorts_keys_and_writes_ext_values_as_strings() {
        let mut cmd = RemotingCommand::request(310, 3);
        cmd.remark = Some("r\"x".into());
        cmd.put_ext("queueId", 2);
        cmd.put_ext("a", "PG");
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            r#"{"code":310,"extFields":{"a":"PG","queueId":"2"},"flag":0,"language":"JAVA","opaque":3,"remark":"r\"x","serializeTypeCurrentRPC":"JSON","version":479}"#
        );
        assert_eq!(decode(text.as_bytes()).unwrap(), CommandHeader::of(&cmd));
    }

    mod prop {
        use super::*;
        use crate::header::tests_support::arb_header;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn json_header_round_trips(h in arb_header()) {
                let cmd = cmd_of(h.clone());
                let mut out = Vec::new();
                encode(&cmd, &mut out);
                prop_assert_eq!(decode(&out).unwrap(), h);
            }

            #[test]
            fn json_header_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
                let _ = decode(&bytes);
            }
        }
    }
}
