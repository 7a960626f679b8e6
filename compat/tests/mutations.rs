//! A fuzz smoke test that runs on stable Rust in every test run: the captured client frames
//! (`tests/vectors/`), mutated at random with a fixed seed, through every decoder a request
//! meets (frame, command, both header encodings, each typed request header, JSON bodies,
//! message records and batches, SQL92 filters). A decoder may refuse its input; it must not
//! panic. The Kafka record batches (`tests/vectors/kafka/`) go the same way through the
//! record batch decoder, their length and CRC mostly made true again after the edits so the
//! mutants get past the checksum. The libFuzzer targets in `fuzz/` explore further
//! (`cargo +nightly fuzz run …`).
//!
//! `STRATUS_MUTATIONS` sets the number of mutated frames (default 200,000),
//! `STRATUS_KAFKA_MUTATIONS` the number of mutated record batches (default 20,000).

use std::path::Path;

use bytes::{Bytes, BytesMut};
use stratus_compat::command::RemotingCommand;
use stratus_compat::filter::sql92::Sql92Filter;
use stratus_compat::header::{json, rocketmq};
use stratus_compat::kafka::records::{batch_infos, decode_batches};
use stratus_compat::message::{MessageExt, decode_batch};
use stratus_compat::request::admin::{
    ClusterHeader, CreateTopicRequestHeader, KvConfigHeader, TopicHeader, ViewMessageRequestHeader,
};
use stratus_compat::request::consumer::ConsumerSendMsgBackRequestHeader;
use stratus_compat::request::heartbeat::{
    CheckClientConfigBody, ConsumerGroupHeader, HeartbeatData, UnregisterClientRequestHeader,
    decode_json_body,
};
use stratus_compat::request::lock::LockBatchRequestBody;
use stratus_compat::request::offset::{
    QueryConsumerOffsetRequestHeader, QueueRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use stratus_compat::request::pull::PullMessageRequestHeader;
use stratus_compat::request::route::GetRouteInfoRequestHeader;
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::request::transaction::EndTransactionRequestHeader;
use stratus_compat::{FrameLimits, frame};

/// xorshift64*: deterministic, so a failure reproduces from the seed and iteration.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            usize::try_from(self.next() % (n as u64)).unwrap_or(0)
        }
    }
}

fn corpus() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let mut out = Vec::new();
    for client in ["cpp-1.x", "cpp-2.1", "rust-1.0"] {
        for sub in ["", "responses"] {
            let folder = dir.join(client).join(sub);
            let entries = std::fs::read_dir(&folder).expect("vector folder");
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().ends_with(".bin") {
                    out.push(std::fs::read(e.path()).expect("read vector"));
                }
            }
        }
    }
    out.sort();
    assert!(out.len() > 700, "corpus of {} frames", out.len());
    out
}

const INTERESTING: [u8; 8] = [0, 1, 0x7f, 0x80, 0xff, b'{', b'"', b'\x01'];

/// One to four random edits of `input`.
fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = v.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => v.truncate(rng.below(len + 1)),
            3 if len > 0 => {
                let (a, b) = (rng.below(len), rng.below(len));
                let (a, b) = (a.min(b), a.max(b));
                let chunk = v[a..b].to_vec();
                let at = rng.below(len);
                v.splice(at..at, chunk);
            }
            4 => {
                let at = rng.below(len + 1);
                let n = rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(at..at, bytes);
            }
            // Length prefix or header-length word set to an edge value.
            5 if len >= 8 => {
                let at = if rng.below(2) == 0 { 0 } else { 4 };
                let value: u32 = match rng.below(4) {
                    0 => 0,
                    1 => u32::MAX,
                    2 => u32::try_from(len).unwrap_or(0),
                    _ => rng.next() as u32,
                };
                v[at..at + 4].copy_from_slice(&value.to_be_bytes());
            }
            // Splice with another frame.
            6 => {
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            _ if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                v.swap(a, b);
            }
            _ => v.push(rng.next() as u8),
        }
    }
    v
}

/// Values that sit on the edges of what the typed headers parse.
const EDGE_VALUES: [&str; 12] = [
    "",
    "-1",
    "0",
    "2147483647",
    "2147483648",
    "-9223372036854775809",
    "9223372036854775807",
    "true",
    "null",
    "\u{0}\u{1}\u{2}",
    "%RETRY%",
    "a b\tc",
];

/// A decoded command with its fields and body edited: what a client that frames correctly
/// but sends nonsense produces.
fn mutate_fields(rng: &mut Rng, cmd: &mut RemotingCommand, corpus: &[Vec<u8>]) {
    let keys: Vec<String> = cmd.ext_fields.keys().cloned().collect();
    for _ in 0..=rng.below(3) {
        match rng.below(5) {
            0 if !keys.is_empty() => {
                let k = &keys[rng.below(keys.len())];
                cmd.ext_fields.remove(k);
            }
            1 => {
                let v = "9".repeat(rng.below(4096));
                let k = keys
                    .get(rng.below(keys.len() + 1))
                    .cloned()
                    .unwrap_or_default();
                cmd.put_ext(&k, v);
            }
            2 => {
                let body = mutate(rng, &cmd.body, corpus);
                cmd.body = Bytes::from(body);
            }
            _ if !keys.is_empty() => {
                let k = &keys[rng.below(keys.len())];
                cmd.put_ext(k, EDGE_VALUES[rng.below(EDGE_VALUES.len())]);
            }
            _ => cmd.put_ext("topic", EDGE_VALUES[rng.below(EDGE_VALUES.len())]),
        }
    }
}

/// Everything a request's bytes go through on their way to a processor; returns how many
/// commands decoded (so the test can check the mutations reach the deeper decoders).
fn decode_everything(data: &[u8]) -> usize {
    let mut commands = 0;
    let _ = (json::decode(data), rocketmq::decode(data));
    let mut buf = BytesMut::from(data);
    let limits = FrameLimits::default();
    while let Ok(Some(f)) = frame::decode(&mut buf, &limits) {
        let Ok(cmd) = RemotingCommand::decode(f) else {
            continue;
        };
        commands += 1;
        decode_command(&cmd);
    }
    commands
}

fn decode_command(cmd: &RemotingCommand) {
    let _ = SendMessageRequestHeader::from_command(cmd);
    let _ = PullMessageRequestHeader::from_command(cmd);
    let _ = QueryConsumerOffsetRequestHeader::from_command(cmd);
    let _ = UpdateConsumerOffsetRequestHeader::from_command(cmd);
    let _ = QueueRequestHeader::from_command(cmd);
    let _ = SearchOffsetRequestHeader::from_command(cmd);
    let _ = GetRouteInfoRequestHeader::from_command(cmd);
    let _ = EndTransactionRequestHeader::from_command(cmd);
    let _ = ConsumerSendMsgBackRequestHeader::from_command(cmd);
    let _ = UnregisterClientRequestHeader::from_command(cmd);
    let _ = ConsumerGroupHeader::from_command(cmd);
    let _ = CreateTopicRequestHeader::from_command(cmd);
    let _ = TopicHeader::from_command(cmd);
    let _ = ClusterHeader::from_command(cmd);
    let _ = KvConfigHeader::from_command(cmd);
    let _ = ViewMessageRequestHeader::from_command(cmd);
    let body: &Bytes = &cmd.body;
    let _ = decode_json_body::<HeartbeatData>(body);
    let _ = decode_json_body::<CheckClientConfigBody>(body);
    let _ = decode_json_body::<LockBatchRequestBody>(body);
    let _ = decode_batch(body);
    let _ = MessageExt::decode_all(body.clone());
    for text in cmd.ext_fields.values() {
        if let Ok(filter) = Sql92Filter::parse(text) {
            let _ = filter.matches(&|_| Some(text.as_str()));
        }
    }
}

#[test]
fn mutated_client_frames_never_panic_a_decoder() {
    let corpus = corpus();
    let runs: usize = std::env::var("STRATUS_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    for frame in &corpus {
        assert_eq!(decode_everything(frame), 1, "every captured frame decodes");
    }
    let mut decoded = 0;
    let commands: Vec<RemotingCommand> = corpus
        .iter()
        .map(|f| {
            let mut buf = BytesMut::from(&f[..]);
            let frame = frame::decode(&mut buf, &FrameLimits::default());
            RemotingCommand::decode(frame.expect("frame").expect("one frame")).expect("command")
        })
        .collect();
    let mut rng = Rng(0x05EE_D0F5_72A7);
    // Half the runs edit decoded commands' fields and bodies, then encode them again.
    for i in 0..runs / 2 {
        let mut cmd = commands[i % commands.len()].clone();
        mutate_fields(&mut rng, &mut cmd, &corpus);
        let outcome = std::panic::catch_unwind(|| {
            decode_command(&cmd);
            let mut out = BytesMut::new();
            cmd.encode(&mut out);
            decode_everything(&out)
        });
        match outcome {
            Ok(n) => assert_eq!(n, 1, "run {i}: an encoded command decodes again"),
            Err(_) => panic!("run {i}: a decoder panicked on fields {:?}", cmd.ext_fields),
        }
    }
    // The other half edit the bytes.
    let runs = runs - runs / 2;
    for i in 0..runs {
        let input = &corpus[i % corpus.len()];
        let mut data = mutate(&mut rng, input, &corpus);
        // Mostly keep the length prefix true to the mutated frame, so the mutants reach
        // the command, header and body decoders; otherwise leave it as the edits left it.
        if rng.below(5) != 0 && data.len() >= 4 {
            let len = u32::try_from(data.len() - 4).unwrap_or(u32::MAX);
            data[..4].copy_from_slice(&len.to_be_bytes());
        }
        let outcome = std::panic::catch_unwind(|| decode_everything(&data));
        match outcome {
            Ok(n) => decoded += usize::from(n > 0),
            Err(_) => panic!(
                "run {i}: a decoder panicked on {} bytes: {:02x?}",
                data.len(),
                &data[..data.len().min(256)]
            ),
        }
    }
    // Some byte mutants still decode as a command (most break the header's JSON), so the
    // decoders behind the frame decoder see those too.
    assert!(
        decoded * 20 > runs,
        "only {decoded} of {runs} mutants decoded as a command"
    );
    eprintln!("{runs} byte mutants, {decoded} decoded as a command; no panic");
}

fn kafka_corpus() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/kafka");
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .expect("kafka vector folder")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".bin"))
        .map(|e| std::fs::read(e.path()).expect("read vector"))
        .collect();
    out.sort();
    assert!(out.len() >= 10, "corpus of {} batches", out.len());
    out
}

/// Makes a mutated batch's `batchLength` and CRC-32C true to its bytes again.
fn fix_batch(data: &mut [u8]) {
    if data.len() < 21 {
        return;
    }
    let len = u32::try_from(data.len() - 12).unwrap_or(u32::MAX);
    data[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&data[21..]);
    data[17..21].copy_from_slice(&crc.to_be_bytes());
}

#[test]
fn mutated_kafka_batches_never_panic_the_decoder() {
    let corpus = kafka_corpus();
    let runs: usize = std::env::var("STRATUS_KAFKA_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    for batch in &corpus {
        assert_eq!(decode_batches(batch, 1 << 20).expect("vector").len(), 1);
    }
    let mut rng = Rng(0x0CAF_CA0F_2026);
    let (mut decoded, mut past_crc) = (0, 0);
    for i in 0..runs {
        let input = &corpus[i % corpus.len()];
        let mut data = mutate(&mut rng, input, &corpus);
        if rng.below(5) != 0 {
            fix_batch(&mut data);
        }
        let outcome = std::panic::catch_unwind(|| {
            let _ = batch_infos(&data);
            decode_batches(&data, 1 << 20)
        });
        match outcome {
            Ok(Ok(_)) => decoded += 1,
            Ok(Err(e)) => {
                past_crc += usize::from(!e.to_string().contains("crc"));
            }
            Err(_) => panic!(
                "run {i}: the record batch decoder panicked on {} bytes: {:02x?}",
                data.len(),
                &data[..data.len().min(256)]
            ),
        }
    }
    // Most mutants get past the CRC to the record and codec checks.
    assert!(
        (decoded + past_crc) * 2 > runs,
        "only {decoded} decoded and {past_crc} failed past the CRC of {runs}"
    );
    eprintln!("{runs} batch mutants, {decoded} decoded, {past_crc} refused past the CRC; no panic");
}
