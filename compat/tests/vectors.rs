//! Golden vectors: frames captured from real clients (C++ 1.x, C++ 2.1, Rust 1.0) and the
//! frames they accepted in reply (`tests/vectors/`, see its README).
//!
//! Every `.bin` file must decode as exactly one frame and command with nothing left over, and
//! agree with what the folder's `expected.json` records for it (header values, lengths,
//! decoded message records and batch entries). Specific facts are checked per client, and
//! every `Signature` in the corpus is re-computed.
//!
//! `STRATUS_VECTORS_DIR` points the tests at another corpus of the same layout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use bytes::{Bytes, BytesMut};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha1::Sha1;
use stratus_compat::FrameLimits;
use stratus_compat::acl::{self, ACCESS_KEY, SIGNATURE};
use stratus_compat::command::RemotingCommand;
use stratus_compat::frame;
use stratus_compat::message::{MessageExt, Properties, decode_batch, encode_batch};
use stratus_compat::request::heartbeat::{ConsumeType, HeartbeatData, MessageModel};
use stratus_compat::request::route::TopicRouteData;
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::{LanguageCode, RequestCode, SerializeType};

const CLIENTS: [&str; 3] = ["cpp-1.x", "cpp-2.1", "rust-1.0"];

fn vectors_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("STRATUS_VECTORS_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors"),
    };
    assert!(
        dir.join("README.md").is_file(),
        "golden vectors not found at {}",
        dir.display()
    );
    Some(dir)
}

/// One captured file: its bytes and what `expected.json` says about it.
#[derive(Debug)]
struct Vector {
    client: &'static str,
    name: String,
    raw: Bytes,
    /// The header as recorded.
    header: Value,
    /// The "- request …; serialize type …" line.
    meta: String,
    /// The body line ("Body: …") and the JSON block after it, when present.
    body_line: Option<String>,
    body_json: Option<String>,
}

impl Vector {
    fn cmd(&self) -> RemotingCommand {
        decode_one(&self.raw).unwrap_or_else(|e| panic!("{}/{}: {e}", self.client, self.name))
    }

    fn id(&self) -> String {
        format!("{}/{}", self.client, self.name)
    }
}

/// What a folder's `expected.json` records per file: the header as decoded, the
/// "- request …; serialize type …" line, and the body line and body JSON when present.
#[derive(serde::Deserialize)]
struct Expected {
    header: Value,
    meta: String,
    body_line: Option<String>,
    body_json: Option<String>,
}

fn parse_expected(text: &str) -> BTreeMap<String, (Value, String, Option<String>, Option<String>)> {
    let table: BTreeMap<String, Expected> =
        serde_json::from_str(text).expect("expected.json is JSON");
    table
        .into_iter()
        .map(|(k, e)| (k, (e.header, e.meta, e.body_line, e.body_json)))
        .collect()
}

fn load_all(dir: &Path) -> Vec<Vector> {
    let mut out = Vec::new();
    for client in CLIENTS {
        for sub in ["", "responses"] {
            let folder = dir.join(client).join(sub);
            let index =
                std::fs::read_to_string(folder.join("expected.json")).expect("expected.json");
            let mut sections = parse_expected(&index);
            let mut names: Vec<String> = std::fs::read_dir(&folder)
                .expect("vector folder")
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".bin"))
                .collect();
            names.sort();
            assert!(!names.is_empty(), "no vectors in {}", folder.display());
            for name in names {
                let raw = std::fs::read(folder.join(&name)).expect("read vector");
                let (header, meta, body_line, body_json) = sections
                    .remove(&name)
                    .unwrap_or_else(|| panic!("{client}/{sub}/{name} is not in its expected.json"));
                let name = if sub.is_empty() {
                    name
                } else {
                    format!("{sub}/{name}")
                };
                out.push(Vector {
                    client,
                    name,
                    raw: raw.into(),
                    header,
                    meta,
                    body_line,
                    body_json,
                });
            }
        }
    }
    out
}

/// Decodes exactly one frame and command from `raw`, with nothing left over.
fn decode_one(raw: &[u8]) -> Result<RemotingCommand, String> {
    let mut buf = BytesMut::from(raw);
    let f = frame::decode(&mut buf, &FrameLimits::default())
        .map_err(|e| e.to_string())?
        .ok_or("incomplete frame")?;
    if !buf.is_empty() {
        return Err(format!("{} bytes left over", buf.len()));
    }
    RemotingCommand::decode(f).map_err(|e| e.to_string())
}

fn frame_parts(raw: &[u8]) -> frame::Frame {
    let mut buf = BytesMut::from(raw);
    frame::decode(&mut buf, &FrameLimits::default())
        .expect("a valid frame")
        .expect("a complete frame")
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn number_after(meta: &str, key: &str) -> usize {
    let rest = &meta[meta.find(key).unwrap_or_else(|| panic!("{key} in {meta}")) + key.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after {key} in {meta}"))
}

fn find<'a>(all: &'a [Vector], client: &str, name: &str) -> &'a Vector {
    all.iter()
        .find(|v| v.client == client && v.name == name)
        .unwrap_or_else(|| panic!("vector {client}/{name}"))
}

#[test]
fn every_captured_frame_decodes_to_the_header_recorded_for_it() {
    let Some(dir) = vectors_dir() else { return };
    let all = load_all(&dir);
    // Numbers from the corpus README: 87 + 80, 155 + 144, 163 + 132 frames.
    assert_eq!(all.len(), 87 + 80 + 155 + 144 + 163 + 132);
    for v in &all {
        let id = v.id();
        let cmd = v.cmd();
        let h = &v.header;
        let f = frame_parts(&v.raw);
        assert_eq!(f.serialize_type, SerializeType::Json, "{id}");
        assert_eq!(
            f.header.len(),
            number_after(&v.meta, "header length"),
            "{id}"
        );
        assert_eq!(f.body.len(), number_after(&v.meta, "body length"), "{id}");
        assert_eq!(i64::from(cmd.code), h["code"].as_i64().unwrap(), "{id}");
        assert_eq!(cmd.language.name(), h["language"].as_str().unwrap(), "{id}");
        assert_eq!(
            i64::from(cmd.version),
            h["version"].as_i64().unwrap(),
            "{id}"
        );
        assert_eq!(i64::from(cmd.opaque), h["opaque"].as_i64().unwrap(), "{id}");
        assert_eq!(i64::from(cmd.flag), h["flag"].as_i64().unwrap(), "{id}");
        assert_eq!(
            cmd.remark,
            h.get("remark").and_then(Value::as_str).map(str::to_owned),
            "{id}"
        );
        let want: BTreeMap<String, String> = match h.get("extFields") {
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), text_of(v))).collect(),
            _ => BTreeMap::new(),
        };
        assert_eq!(cmd.ext_fields, want, "{id}");
    }
}

#[test]
fn json_commands_re_encode_to_an_equal_command() {
    let Some(dir) = vectors_dir() else { return };
    for v in load_all(&dir) {
        let cmd = v.cmd();
        let mut buf = BytesMut::new();
        cmd.encode(&mut buf);
        assert_eq!(decode_one(&buf).unwrap(), cmd, "{}", v.id());
        // Frames the (Java-like) fake server wrote are byte-identical when re-encoded: same
        // key order, same omissions. The one exception: Java writes `"extFields":{}` for an
        // empty non-null map, which a command (no null/empty distinction) writes as absent.
        let raw_header = frame_parts(&v.raw).header;
        let empty_ext = raw_header.windows(14).any(|w| w == br#""extFields":{}"#);
        if v.name.starts_with("responses/") && !empty_ext {
            assert_eq!(&buf[..], &v.raw[..], "{}", v.id());
        }
    }
}

#[test]
fn stored_message_records_in_replies_decode_and_re_encode_byte_for_byte() {
    let Some(dir) = vectors_dir() else { return };
    let mut records = 0;
    for v in load_all(&dir) {
        let Some(line) = &v.body_line else { continue };
        if !line.contains("stored-message record") {
            continue;
        }
        let id = v.id();
        let cmd = v.cmd();
        let want: Vec<Value> = serde_json::from_str(v.body_json.as_deref().unwrap()).unwrap();
        let got = MessageExt::decode_all(cmd.body.clone()).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(got.len(), want.len(), "{id}");
        for (m, w) in got.iter().zip(&want) {
            assert_eq!(m.encoded_len() as u64, w["size"].as_u64().unwrap(), "{id}");
            assert_eq!(w["magic"], "DAA320A7", "{id}");
            assert_eq!(m.topic, w["topic"].as_str().unwrap(), "{id}");
            assert_eq!(
                i64::from(m.queue_id),
                w["queueId"].as_i64().unwrap(),
                "{id}"
            );
            assert_eq!(m.queue_offset, w["queueOffset"].as_i64().unwrap(), "{id}");
            assert_eq!(
                m.commit_log_offset,
                w["physicalOffset"].as_i64().unwrap(),
                "{id}"
            );
            assert_eq!(
                i64::from(m.sys_flag),
                w["sysFlag"].as_i64().unwrap(),
                "{id}"
            );
            assert_eq!(i64::from(m.flag), w["flag"].as_i64().unwrap(), "{id}");
            assert_eq!(
                i64::from(m.reconsume_times),
                w["reconsumeTimes"].as_i64().unwrap()
            );
            assert_eq!(
                m.prepared_transaction_offset,
                w["preparedTransactionOffset"].as_i64().unwrap()
            );
            assert_eq!(
                String::from_utf8_lossy(&m.body),
                w["body"].as_str().unwrap(),
                "{id}"
            );
            let props: BTreeMap<_, _> = m
                .parsed_properties()
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let want_props: BTreeMap<_, _> = w["properties"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), text_of(v)))
                .collect();
            assert_eq!(props, want_props, "{id}");
            assert!(m.store_host.is_ipv4() && m.born_host.is_ipv4(), "{id}");
        }
        let mut again = BytesMut::new();
        for m in &got {
            m.encode(&mut again);
        }
        assert_eq!(&again[..], &cmd.body[..], "{id}: re-encoding differs");
        records += got.len();
    }
    assert!(records >= 40, "only {records} records seen");
}

#[test]
fn batch_bodies_decode_with_decode_batch_and_re_encode_byte_for_byte() {
    let Some(dir) = vectors_dir() else { return };
    let mut batches = 0;
    for v in load_all(&dir) {
        let Some(line) = &v.body_line else { continue };
        if !line.contains("a batch of") {
            continue;
        }
        let id = v.id();
        let cmd = v.cmd();
        let want: Vec<Value> = serde_json::from_str(v.body_json.as_deref().unwrap()).unwrap();
        let got = decode_batch(&cmd.body).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(got.len(), want.len(), "{id}");
        for (e, w) in got.iter().zip(&want) {
            assert_eq!(
                e.encoded_len() as u64,
                w["totalSize"].as_u64().unwrap(),
                "{id}"
            );
            assert_eq!(i64::from(e.flag), w["flag"].as_i64().unwrap(), "{id}");
            assert_eq!(&e.body[..], w["body"].as_str().unwrap().as_bytes(), "{id}");
            let props = Properties::parse(&e.properties);
            for (k, val) in w["properties"].as_object().unwrap() {
                assert_eq!(props.get(k), Some(text_of(val).as_str()), "{id} {k}");
            }
        }
        let header = SendMessageRequestHeader::from_command(&cmd).unwrap();
        assert!(header.batch, "{id}: batch flag not seen");
        let mut again = BytesMut::new();
        encode_batch(&got, &mut again);
        assert_eq!(&again[..], &cmd.body[..], "{id}");
        batches += 1;
    }
    assert_eq!(batches, 3);
}

#[test]
fn heart_beat_bodies_decode_in_all_three_dialects() {
    let Some(dir) = vectors_dir() else { return };
    let all = load_all(&dir);
    let mut seen = BTreeMap::new();
    for v in &all {
        let cmd = v.cmd();
        if v.name.starts_with("responses/") || cmd.request_code() != RequestCode::HeartBeat {
            continue;
        }
        let hb: HeartbeatData =
            serde_json::from_slice(&cmd.body).unwrap_or_else(|e| panic!("{}: {e}", v.id()));
        assert!(!hb.client_id.is_empty(), "{}", v.id());
        *seen.entry(v.client).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 3);

    let decode = |client, name| -> HeartbeatData {
        serde_json::from_slice(&find(&all, client, name).cmd().body).unwrap()
    };
    // jsoncpp: enums as ordinals, subVersion as a string, trailing newline.
    let cpp = decode("cpp-1.x", "0016-34-HEART_BEAT.bin");
    assert_eq!(cpp.client_id, "1893-127.0.0.1@CG_push");
    let c = &cpp.consumer_data_set[0];
    assert_eq!(c.group_name, "CG_push");
    assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
    assert_eq!(c.message_model, MessageModel::Clustering);
    let sub = c
        .subscription_data_set
        .iter()
        .find(|s| s.topic == "TopicPush")
        .unwrap();
    assert_eq!(sub.sub_string, "TagA || TagB");
    assert_eq!(sub.sub_version, 1_795_982_159_913);
    let producer = decode("cpp-1.x", "0003-34-HEART_BEAT.bin");
    assert_eq!(producer.producer_data_set[0].group_name, "PG_capture");
    assert!(producer.consumer_data_set.is_empty());
    // Rust: names for enums and CLIENT_INNER_PRODUCER always listed.
    let rust = decode("rust-1.0", "0003-34-HEART_BEAT.bin");
    assert!(
        rust.producer_data_set
            .iter()
            .any(|p| p.group_name == "CLIENT_INNER_PRODUCER")
    );
}

#[test]
fn client_specific_header_facts_hold() {
    let Some(dir) = vectors_dir() else { return };
    let all = load_all(&dir);

    // C++ 1.x SEND_MESSAGE: V1 keys, numeric queueId, a trailing newline after the header.
    let v = find(&all, "cpp-1.x", "0002-10-SEND_MESSAGE.bin");
    assert_eq!(frame_parts(&v.raw).header.last(), Some(&b'\n'));
    let cmd = v.cmd();
    assert_eq!(cmd.language, LanguageCode::Cpp);
    assert_eq!(cmd.version, 63);
    assert_eq!(cmd.remark.as_deref(), Some(""));
    assert_eq!(cmd.ext_fields["queueId"], "0");
    assert_eq!(cmd.ext_fields["defaultTopicQueueNums"], "4");
    let h = SendMessageRequestHeader::from_command(&cmd).unwrap();
    assert_eq!(
        (h.topic.as_str(), h.queue_id, h.default_topic_queue_nums),
        ("TopicTest", 0, 4)
    );
    assert!(!h.batch);
    assert_eq!(&cmd.body[..], b"Hello sync");
    let props = Properties::parse(h.properties.as_deref().unwrap());
    assert_eq!(
        props.get("UNIQ_KEY"),
        Some("0100007F000022420000BB1ED6990100")
    );
    assert_eq!(props.get("KEYS"), Some("key-1 key-2"));

    // C++ 1.x batch: code 10 with batch "1".
    let cmd = find(&all, "cpp-1.x", "0010-10-SEND_MESSAGE.bin").cmd();
    assert_eq!(cmd.ext_fields["batch"], "1");
    assert!(SendMessageRequestHeader::from_command(&cmd).unwrap().batch);
    assert_eq!(decode_batch(&cmd.body).unwrap().len(), 3);

    // Rust: remark null, serializeTypeCurrentRPC present, batch 320 with m "true".
    let cmd = find(&all, "rust-1.0", "0009-320-SEND_BATCH_MESSAGE.bin").cmd();
    assert_eq!(cmd.remark, None);
    assert_eq!(cmd.language, LanguageCode::Rust);
    assert_eq!(cmd.ext_fields["m"], "true");
    let h = SendMessageRequestHeader::from_command(&cmd).unwrap();
    assert_eq!(
        (h.topic.as_str(), h.queue_id, h.batch),
        ("TopicTest", 2, true)
    );
    assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
    // Rust reply with "extFields": null.
    let reply = find(
        &all,
        "rust-1.0",
        "0059-307-GET_CONSUMER_RUNNING_INFO-REPLY.bin",
    )
    .cmd();
    assert!(reply.is_response() && reply.ext_fields.is_empty());

    // C++ 2.1 batch: SEND_MESSAGE_V2 with m "1".
    let batch = all
        .iter()
        .filter(|v| v.client == "cpp-2.1" && !v.name.starts_with("responses/"))
        .map(Vector::cmd)
        .find(|c| {
            c.request_code() == RequestCode::SendMessageV2
                && c.ext_fields.get("m").is_some_and(|m| m == "1")
        })
        .expect("a C++ 2.1 batch");
    assert_eq!(decode_batch(&batch.body).unwrap().len(), 3);
    assert!(
        SendMessageRequestHeader::from_command(&batch)
            .unwrap()
            .batch
    );

    // Route responses carry a TopicRouteData with a quoted broker-id key.
    let route = find(
        &all,
        "cpp-1.x",
        "responses/0001-105-GET_ROUTEINFO_BY_TOPIC.bin",
    )
    .cmd();
    let data: TopicRouteData = serde_json::from_slice(&route.body).unwrap();
    assert_eq!(data.broker_datas[0].broker_addrs["0"], "127.0.0.1:19911");
    assert_eq!(data.queue_datas[0].write_queue_nums, 4);
    for v in all
        .iter()
        .filter(|v| v.name.starts_with("responses/") && v.name.contains("-105-"))
    {
        let cmd = v.cmd();
        let _: TopicRouteData =
            serde_json::from_slice(&cmd.body).unwrap_or_else(|e| panic!("{}: {e}", v.id()));
    }
}

fn signature(secret: &str, cmd: &RemotingCommand) -> String {
    let mut mac =
        <Hmac<Sha1> as KeyInit>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(&acl::signing_content(cmd, &[]));
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

#[test]
fn every_acl_signature_in_the_corpus_verifies() {
    let Some(dir) = vectors_dir() else { return };
    let mut checked = BTreeMap::new();
    for v in load_all(&dir) {
        let cmd = v.cmd();
        let Some(sig) = cmd.ext_fields.get(SIGNATURE) else {
            continue;
        };
        let secret = match cmd.ext_fields.get(ACCESS_KEY).map(String::as_str) {
            Some("stratusAK") => "stratusSK",
            _ => "",
        };
        assert_eq!(&signature(secret, &cmd), sig, "{}", v.id());
        *checked.entry((v.client, secret)).or_insert(0) += 1;
    }
    // 234 with the empty secret, 13 with stratusSK (as recorded).
    assert_eq!(checked.values().sum::<i32>(), 247, "{checked:?}");
    for client in CLIENTS {
        assert!(
            checked.contains_key(&(client, "stratusSK")),
            "{client}: no ACL frame"
        );
    }
}
