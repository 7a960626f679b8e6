//! Kafka end-to-end scenarios: the real Kafka client programs of `tests/clients/`
//! (`kafka-java`, `kafka-java3`, `kafka-python`, `kafka-go`) driven against any bootstrap
//! address, each asserting what a Kafka broker must do (counts, exact keys, values and
//! headers, per-partition order, dense offsets, group hand-overs).
//!
//! Every scenario is a function `(bootstrap, scratch) -> anyhow::Result<()>` that makes its
//! own uniquely named topics and groups, so the same functions run against the reference
//! Apache Kafka ([`KafkaBroker`], `tests/tests/kafka_reference.rs`) and against Stratus.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::Value;

use crate::{ClientRun, args, clients_required, free_port, now_ms, workspace_root};

/// The Kafka client programs (see `tests/clients/README.md`, "Kafka clients").
pub const KAFKA_CLIENTS: [&str; 4] = ["kafka-java", "kafka-java3", "kafka-python", "kafka-go"];

/// How long one short client run (a produce, an admin call) may take.
const RUN: Duration = Duration::from_secs(60);

fn kafka_script() -> PathBuf {
    workspace_root().join("tests/servers/kafka.sh")
}

/// Whether the reference Apache Kafka jars are cached (`tests/servers/kafka.sh install`).
pub fn kafka_installed() -> bool {
    Command::new("bash")
        .arg(kafka_script())
        .arg("installed")
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a Kafka client program is built (what `tests/clients/install.sh` makes).
pub fn kafka_client_installed(client: &str) -> bool {
    let dir = workspace_root().join("tests/clients");
    let artifact = match client {
        "kafka-java" => dir.join("kafka-java/target/kafka-client-java-1.jar"),
        "kafka-java3" => dir.join("kafka-java3/target/kafka-client-java3-1.jar"),
        "kafka-python" => dir.join("kafka-python/.venv/bin/python"),
        "kafka-go" => dir.join("kafka-go/bin/kafka-client-go"),
        _ => return false,
    };
    artifact.exists()
}

/// True when every Kafka client (and, with `broker`, the reference broker) is installed.
/// Otherwise prints a skip notice and returns false, or fails when CI demands every client
/// (`STRATUS_REQUIRE_CLIENTS=1`).
pub fn kafka_ready(broker: bool) -> anyhow::Result<bool> {
    let mut missing: Vec<&str> = KAFKA_CLIENTS
        .into_iter()
        .filter(|c| !kafka_client_installed(c))
        .collect();
    if broker && !kafka_installed() {
        missing.push("kafka-server");
    }
    if missing.is_empty() {
        return Ok(true);
    }
    let what = missing.join(" ");
    ensure!(
        !clients_required(),
        "required but not installed: {what} (tests/clients/install.sh {what})"
    );
    eprintln!("skipping: not installed: {what} (tests/clients/install.sh {what})");
    Ok(false)
}

/// A running single-node Apache Kafka (KRaft, broker and controller in one JVM) of
/// `tests/servers/kafka.sh`, its data in a temporary directory; stopped on drop.
#[derive(Debug)]
pub struct KafkaBroker {
    dir: tempfile::TempDir,
    bootstrap: String,
    /// How long the start took (format + JVM start until the port answered).
    pub start_time: Duration,
}

impl KafkaBroker {
    /// Starts a fresh node on a free loopback port (retried on another port if that one
    /// was taken meanwhile).
    pub fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let t0 = Instant::now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = free_port().to_string();
            let out = Command::new("bash")
                .arg(kafka_script())
                .arg("start")
                .arg(dir.path())
                .arg(&port)
                .output()
                .context("run tests/servers/kafka.sh start")?;
            if out.status.success() {
                let bootstrap = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                return Ok(Self {
                    dir,
                    bootstrap,
                    start_time: t0.elapsed(),
                });
            }
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            if attempt >= 3 || !err.contains("already in use") {
                bail!("kafka.sh start failed: {err}");
            }
        }
    }

    /// `host:port` of the broker listener, as clients take it.
    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    /// The broker's own log (`server.log`) so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("logs/server.log")).unwrap_or_default()
    }
}

impl Drop for KafkaBroker {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(kafka_script())
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

/// A name unique to this process and moment: `<prefix>-<pid>-<ms>-<n>`.
pub fn unique(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}-{}-{}-{n}", std::process::id(), now_ms())
}

/// One `sent` line of a Kafka producer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Partition the record went to.
    pub partition: i64,
    /// Its offset, −1 when the producer learns none (acks=0).
    pub offset: i64,
    /// Key and value.
    pub key: String,
    /// Value.
    pub value: String,
    /// Headers every record of the run carries (besides `seq`).
    pub headers: BTreeMap<String, String>,
    /// Index of the record in its run (its `seq` header).
    pub seq: i64,
}

/// One `recv` line of a Kafka consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recv {
    /// Partition.
    pub partition: i64,
    /// Offset.
    pub offset: i64,
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
    /// Headers.
    pub headers: BTreeMap<String, String>,
    /// Record timestamp (ms).
    pub timestamp: i64,
}

fn int(v: &Value, field: &str) -> anyhow::Result<i64> {
    v[field]
        .as_i64()
        .with_context(|| format!("no integer {field:?} in {v}"))
}

fn text(v: &Value, field: &str) -> anyhow::Result<String> {
    v[field]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no string {field:?} in {v}"))
}

fn headers_of(v: &Value) -> BTreeMap<String, String> {
    v["headers"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The `recv` lines among `events`.
pub fn recvs(events: &[Value]) -> anyhow::Result<Vec<Recv>> {
    events
        .iter()
        .filter(|e| e["event"] == "recv")
        .map(|e| {
            Ok(Recv {
                partition: int(e, "partition")?,
                offset: int(e, "offset")?,
                key: text(e, "key")?,
                value: text(e, "value")?,
                headers: headers_of(e),
                timestamp: int(e, "timestamp")?,
            })
        })
        .collect()
}

/// A producer run: its options and what it must yield.
#[derive(Debug, Clone)]
pub struct Produce<'a> {
    /// Client program.
    pub client: &'a str,
    /// Topic.
    pub topic: &'a str,
    /// Number of records.
    pub count: usize,
    /// `0`, `1` or `all`.
    pub acks: &'a str,
    /// `none`, `gzip`, `snappy`, `lz4` or `zstd`.
    pub compression: &'a str,
    /// Key and value prefix: record i has key `<prefix>-i`, value `<prefix>v-i`.
    pub prefix: &'a str,
    /// Headers for every record.
    pub headers: &'a [(&'a str, &'a str)],
    /// Extra arguments (`--idempotent true`, `--partition 0`, …).
    pub extra: &'a [&'a str],
}

impl Produce<'_> {
    /// A producer of `count` records of `topic` with acks=all, no compression.
    pub fn new<'a>(client: &'a str, topic: &'a str, count: usize, prefix: &'a str) -> Produce<'a> {
        Produce {
            client,
            topic,
            count,
            acks: "all",
            compression: "none",
            prefix,
            headers: &[],
            extra: &[],
        }
    }

    fn argv(&self, bootstrap: &str) -> Vec<String> {
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut a = args(&["produce", "--bootstrap", bootstrap, "--topic", self.topic]);
        a.extend(args(&[
            "--count",
            &self.count.to_string(),
            "--acks",
            self.acks,
            "--compression",
            self.compression,
            "--key-prefix",
            self.prefix,
            "--value-prefix",
            &format!("{}v", self.prefix),
        ]));
        if !headers.is_empty() {
            a.extend(args(&["--headers", &headers.join(",")]));
        }
        a.extend(args(self.extra));
        a
    }

    /// Starts the producer.
    pub fn spawn(&self, bootstrap: &str, scratch: &Path) -> anyhow::Result<ClientRun> {
        ClientRun::spawn(self.client, &self.argv(bootstrap), scratch)
    }

    /// Checks a finished run: exit 0, `done` with `count` sent and no error, one `sent`
    /// per record with the right key and value, offsets −1 exactly when acks=0.
    pub fn check(&self, code: i32, events: &[Value]) -> anyhow::Result<Vec<Sent>> {
        let what = format!(
            "{} produce acks={} compression={} to {}",
            self.client, self.acks, self.compression, self.topic
        );
        ensure!(code == 0, "{what}: exit {code}; events: {events:?}");
        let done = events
            .iter()
            .find(|e| e["event"] == "done")
            .with_context(|| format!("{what}: no done line"))?;
        ensure!(
            int(done, "sent")? == i64::try_from(self.count)? && int(done, "errors")? == 0,
            "{what}: {done}"
        );
        let headers: BTreeMap<String, String> = self
            .headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut sent = Vec::new();
        for e in events.iter().filter(|e| e["event"] == "sent") {
            let s = Sent {
                partition: int(e, "partition")?,
                offset: int(e, "offset")?,
                key: text(e, "key")?,
                value: text(e, "value")?,
                headers: headers.clone(),
                seq: int(e, "seq")?,
            };
            ensure!(
                s.key == format!("{}-{}", self.prefix, s.seq)
                    && s.value == format!("{}v-{}", self.prefix, s.seq),
                "{what}: unexpected key/value in {e}"
            );
            if self.acks == "0" {
                ensure!(s.offset == -1, "{what}: acks=0 yet an offset: {e}");
            } else {
                ensure!(s.offset >= 0, "{what}: acked without an offset: {e}");
            }
            ensure!(s.partition >= 0, "{what}: no partition: {e}");
            sent.push(s);
        }
        ensure!(
            sent.len() == self.count,
            "{what}: {} sent lines",
            sent.len()
        );
        let seqs: BTreeSet<i64> = sent.iter().map(|s| s.seq).collect();
        ensure!(seqs.len() == self.count, "{what}: repeated seq");
        Ok(sent)
    }

    /// Runs the producer to the end and checks it ([`check`](Self::check)).
    pub fn run(&self, bootstrap: &str, scratch: &Path) -> anyhow::Result<Vec<Sent>> {
        let (code, events) = self.spawn(bootstrap, scratch)?.wait(RUN)?;
        self.check(code, &events)
    }
}

/// Runs producers in parallel (at most `parallel` processes at once) and checks each.
pub fn produce_all(
    bootstrap: &str,
    scratch: &Path,
    runs: &[Produce<'_>],
    parallel: usize,
) -> anyhow::Result<Vec<Sent>> {
    let mut all = Vec::new();
    for chunk in runs.chunks(parallel.max(1)) {
        let started = chunk
            .iter()
            .map(|p| p.spawn(bootstrap, scratch))
            .collect::<anyhow::Result<Vec<_>>>()?;
        for (p, run) in chunk.iter().zip(started) {
            let (code, events) = run.wait(RUN)?;
            all.extend(p.check(code, &events)?);
        }
    }
    Ok(all)
}

/// Runs `client consume` of `topic` in a new group until `count` records arrived; returns
/// the records in the order printed.
pub fn consume(
    client: &str,
    bootstrap: &str,
    scratch: &Path,
    topic: &str,
    group: &str,
    count: usize,
    extra: &[&str],
) -> anyhow::Result<Vec<Recv>> {
    let mut a = args(&[
        "consume",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--group",
        group,
        "--count",
        &count.to_string(),
        "--timeout-ms",
        "45000",
    ]);
    a.extend(args(extra));
    let (code, events) = ClientRun::spawn(client, &a, scratch)?.wait(Duration::from_secs(90))?;
    let got = recvs(&events)?;
    ensure!(
        code == 0 && got.len() == count,
        "{client} consume {topic}: exit {code}, {} of {count} records; errors: {:?}",
        got.len(),
        events
            .iter()
            .filter(|e| e["event"] == "error")
            .collect::<Vec<_>>()
    );
    Ok(got)
}

/// What a consumption of everything `sent` must show: each record received once, with
/// its key, value, `seq` and other headers, in the partition (and, when acked, at the
/// offset) the producer was told; per partition, offsets in increasing order and dense
/// from 0 (the topic was fresh), each producer run's records in `seq` order.
pub fn check_exactly_once(sent: &[Sent], got: &[Recv]) -> anyhow::Result<()> {
    let by_key: HashMap<&str, &Sent> = sent.iter().map(|s| (s.key.as_str(), s)).collect();
    ensure!(by_key.len() == sent.len(), "repeated keys among the sent");
    let mut seen = BTreeSet::new();
    let mut last_offset: BTreeMap<i64, i64> = BTreeMap::new();
    let mut last_seq: BTreeMap<(i64, String), i64> = BTreeMap::new();
    for r in got {
        let s = by_key
            .get(r.key.as_str())
            .with_context(|| format!("received a record never sent: {r:?}"))?;
        ensure!(seen.insert(r.key.clone()), "received twice: {r:?}");
        ensure!(r.value == s.value, "value of {}: {r:?}, sent {s:?}", r.key);
        ensure!(
            r.partition == s.partition,
            "partition of {}: {r:?}, sent {s:?}",
            r.key
        );
        ensure!(
            s.offset < 0 || r.offset == s.offset,
            "offset of {}: {r:?}, sent {s:?}",
            r.key
        );
        ensure!(
            r.headers.get("seq").map(String::as_str) == Some(s.seq.to_string().as_str()),
            "seq header of {}: {r:?}",
            r.key
        );
        for (k, v) in &s.headers {
            ensure!(
                r.headers.get(k) == Some(v),
                "header {k} of {}: {r:?}",
                r.key
            );
        }
        if let Some(prev) = last_offset.insert(r.partition, r.offset) {
            ensure!(
                r.offset > prev,
                "partition {} went from offset {prev} to {}",
                r.partition,
                r.offset
            );
        }
        let run = s.key.rsplit_once('-').map_or("", |(p, _)| p).to_owned();
        if let Some(prev) = last_seq.insert((r.partition, run.clone()), s.seq) {
            ensure!(
                s.seq > prev,
                "run {run} in partition {}: seq {} after {prev}",
                r.partition,
                s.seq
            );
        }
    }
    let missing: Vec<&str> = sent
        .iter()
        .filter(|s| !seen.contains(&s.key))
        .map(|s| s.key.as_str())
        .collect();
    ensure!(missing.is_empty(), "never received: {missing:?}");
    check_dense(got)
}

/// Per partition, the received offsets are exactly 0..n (no gap, no repeat).
pub fn check_dense(got: &[Recv]) -> anyhow::Result<()> {
    let mut per: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for r in got {
        per.entry(r.partition).or_default().insert(r.offset);
    }
    for (p, offsets) in per {
        let n = i64::try_from(offsets.len())?;
        ensure!(
            offsets.first() == Some(&0) && offsets.last() == Some(&(n - 1)),
            "partition {p}: offsets not dense from 0: {offsets:?}"
        );
    }
    Ok(())
}

/// `client admin <command…>`: exit code and events.
pub fn admin(
    client: &str,
    bootstrap: &str,
    scratch: &Path,
    command: &[&str],
) -> anyhow::Result<(i32, Vec<Value>)> {
    let mut a = args(&["admin", "--bootstrap", bootstrap]);
    a.extend(args(command));
    ClientRun::spawn(client, &a, scratch)?.wait(RUN)
}

/// `client admin <command…>` that must succeed; returns its first line that is not
/// `done`.
pub fn admin_ok(
    client: &str,
    bootstrap: &str,
    scratch: &Path,
    command: &[&str],
) -> anyhow::Result<Value> {
    let (code, events) = admin(client, bootstrap, scratch, command)?;
    ensure!(
        code == 0,
        "{client} admin {command:?}: exit {code}: {events:?}"
    );
    events
        .into_iter()
        .find(|e| e["event"] != "done")
        .with_context(|| format!("{client} admin {command:?} printed nothing"))
}

/// Creates `topic` with `partitions` partitions through `client admin create-topic`.
pub fn create_topic(
    client: &str,
    bootstrap: &str,
    scratch: &Path,
    topic: &str,
    partitions: u32,
) -> anyhow::Result<()> {
    let p = partitions.to_string();
    admin_ok(
        client,
        bootstrap,
        scratch,
        &["create-topic", topic, "--partitions", &p],
    )?;
    Ok(())
}

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// `java` (`kafka-java` or `kafka-java3`) produces 20 records with each of acks 0, 1 and
/// all × compression none, gzip, snappy, lz4, zstd into one 3-partition topic (headers
/// naming the combination); one consumer then gets every one of the 300 exactly once,
/// intact ([`check_exactly_once`]; acks=0 records too: on loopback nothing is lost).
pub fn produce_consume_every_acks_and_compression(
    java: &str,
    bootstrap: &str,
    scratch: &Path,
) -> anyhow::Result<()> {
    let topic = unique("acks-codecs");
    create_topic(java, bootstrap, scratch, &topic, 3)?;
    let combos: Vec<(String, &str, &str)> = ["0", "1", "all"]
        .into_iter()
        .flat_map(|acks| {
            CODECS
                .into_iter()
                .map(move |c| (format!("a{acks}-{c}"), acks, c))
        })
        .collect();
    produce_combos_and_consume(java, bootstrap, scratch, &topic, &combos, 5)
}

/// An idempotent producer (acks=all, `enable.idempotence=true`) of 300 records into a
/// 1-partition topic: the log holds exactly 300 (end offset 300), each once, in order.
pub fn idempotent_producer_no_duplicates(bootstrap: &str, scratch: &Path) -> anyhow::Result<()> {
    let java = "kafka-java";
    let topic = unique("idempotent");
    create_topic(java, bootstrap, scratch, &topic, 1)?;
    let sent = Produce {
        extra: &["--idempotent", "true", "--linger-ms", "0"],
        ..Produce::new(java, &topic, 300, "idem")
    }
    .run(bootstrap, scratch)?;
    let got = consume(java, bootstrap, scratch, &topic, &unique("g"), 300, &[])?;
    check_exactly_once(&sent, &got)?;
    let end = seek(java, bootstrap, scratch, &topic, 0, "end")?;
    ensure!(
        end.end == 300 && end.beginning == 0 && end.position == 300 && end.first.is_none(),
        "idempotent log: {end:?}"
    );
    Ok(())
}

/// What `seek` printed.
#[derive(Debug, Clone)]
pub struct Seek {
    /// Log start offset.
    pub beginning: i64,
    /// Log end offset.
    pub end: i64,
    /// `offsetsForTimes` answer (−1: none), for `timestamp:`.
    pub for_timestamp: Option<i64>,
    /// Position after the seek.
    pub position: i64,
    /// The first record read from there, if any within the wait.
    pub first: Option<Recv>,
}

/// `client seek --partition P --to TO` (TO = beginning, end or timestamp:MS).
pub fn seek(
    client: &str,
    bootstrap: &str,
    scratch: &Path,
    topic: &str,
    partition: i64,
    to: &str,
) -> anyhow::Result<Seek> {
    // Past the end nothing comes: a short wait there.
    let wait = if to == "end" { 500 } else { 5000 };
    seek_spawn(client, bootstrap, scratch, topic, partition, to, wait)?
        .wait(RUN)
        .and_then(|(code, events)| seek_result(code, &events))
}

fn seek_spawn(
    client: &str,
    bootstrap: &str,
    scratch: &Path,
    topic: &str,
    partition: i64,
    to: &str,
    wait_ms: u64,
) -> anyhow::Result<ClientRun> {
    let wait = wait_ms.to_string();
    ClientRun::spawn(
        client,
        &args(&[
            "seek",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--partition",
            &partition.to_string(),
            "--to",
            to,
            "--timeout-ms",
            &wait,
        ]),
        scratch,
    )
}

fn seek_result(code: i32, events: &[Value]) -> anyhow::Result<Seek> {
    ensure!(code == 0, "seek: exit {code}: {events:?}");
    let offsets = events
        .iter()
        .find(|e| e["event"] == "offsets")
        .context("seek: no offsets line")?;
    let position = events
        .iter()
        .find(|e| e["event"] == "position")
        .context("seek: no position line")?;
    Ok(Seek {
        beginning: int(offsets, "beginning")?,
        end: int(offsets, "end")?,
        for_timestamp: offsets["forTimestamp"].as_i64(),
        position: int(position, "offset")?,
        first: recvs(events)?.into_iter().next(),
    })
}

/// A 1-partition topic of 10 records sent one at a time, 3 ms apart: seeking to the
/// beginning reads offset 0 (`k-0`); to the end gives position 10 and no record; to the
/// timestamp of record 6 gives the first offset whose timestamp is ≥ it (as computed from
/// the producer's timestamps) and reads that record; past the last timestamp,
/// `offsetsForTimes` has no answer.
pub fn seek_beginning_end_timestamp(bootstrap: &str, scratch: &Path) -> anyhow::Result<()> {
    let java = "kafka-java";
    let topic = unique("seek");
    create_topic(java, bootstrap, scratch, &topic, 1)?;
    let sent = Produce {
        extra: &["--interval-ms", "3", "--linger-ms", "0"],
        ..Produce::new(java, &topic, 10, "s")
    }
    .run(bootstrap, scratch)?;
    let got = consume(java, bootstrap, scratch, &topic, &unique("g"), 10, &[])?;
    check_exactly_once(&sent, &got)?;
    let ts: Vec<i64> = got.iter().map(|r| r.timestamp).collect();
    let target = ts[6];
    let expect = i64::try_from(ts.iter().position(|t| *t >= target).unwrap_or(6))?;
    let after = ts.iter().max().copied().unwrap_or(0) + 60_000;
    // Nothing comes past the end: a short wait there.
    let runs = [
        ("beginning".to_owned(), 5000),
        ("end".to_owned(), 500),
        (format!("timestamp:{target}"), 5000),
        (format!("timestamp:{after}"), 500),
    ]
    .iter()
    .map(|(to, wait)| seek_spawn(java, bootstrap, scratch, &topic, 0, to, *wait))
    .collect::<anyhow::Result<Vec<_>>>()?;
    let mut results = Vec::new();
    for r in runs {
        let (code, events) = r.wait(RUN)?;
        results.push(seek_result(code, &events)?);
    }
    let [begin, end, at, past] = results.as_slice() else {
        bail!("four seeks");
    };
    ensure!(
        begin.beginning == 0 && begin.end == 10 && begin.position == 0,
        "beginning: {begin:?}"
    );
    ensure!(
        begin.first.as_ref().map(|r| (r.offset, r.key.as_str())) == Some((0, "s-0")),
        "beginning: {begin:?}"
    );
    ensure!(end.position == 10 && end.first.is_none(), "end: {end:?}");
    ensure!(
        at.for_timestamp == Some(expect) && at.position == expect,
        "timestamp {target} (record timestamps {ts:?}): {at:?}"
    );
    ensure!(
        at.first.as_ref().map(|r| r.offset) == Some(expect),
        "timestamp: {at:?}"
    );
    ensure!(
        past.for_timestamp == Some(-1) && past.position == 10 && past.first.is_none(),
        "past the last timestamp: {past:?}"
    );
    Ok(())
}

/// 20 records on 2 partitions; a consumer of group G takes 10 and commits exactly those
/// (commitSync of what it printed); `describe-group` then shows the group empty with
/// committed offsets adding up to 10; a second consumer of G gets exactly the other 10,
/// after which the committed offsets are the partitions' end offsets.
pub fn commit_and_resume(bootstrap: &str, scratch: &Path) -> anyhow::Result<()> {
    let java = "kafka-java";
    let topic = unique("resume");
    let group = unique("resume-g");
    create_topic(java, bootstrap, scratch, &topic, 2)?;
    let sent = Produce::new(java, &topic, 20, "r").run(bootstrap, scratch)?;
    let first = consume(java, bootstrap, scratch, &topic, &group, 10, &[])?;
    let committed = group_offsets(java, bootstrap, scratch, &group)?;
    ensure!(
        committed.values().sum::<i64>() == 10,
        "after the first 10: committed {committed:?}"
    );
    let second = consume(java, bootstrap, scratch, &topic, &group, 10, &[])?;
    let mut all = first.clone();
    all.extend(second.iter().cloned());
    check_dense(&all)?;
    let keys: BTreeSet<&str> = all.iter().map(|r| r.key.as_str()).collect();
    ensure!(
        keys.len() == 20,
        "overlap or loss between the two consumers"
    );
    // Each consumer's records of one partition form a run: the second starts where the
    // first committed.
    for r in &second {
        ensure!(
            committed.get(&r.partition).is_none_or(|c| r.offset >= *c),
            "second consumer re-read {r:?} (committed {committed:?})"
        );
    }
    let mut end: BTreeMap<i64, i64> = BTreeMap::new();
    for s in &sent {
        *end.entry(s.partition).or_default() += 1;
    }
    let after = group_offsets(java, bootstrap, scratch, &group)?;
    ensure!(
        after == end,
        "committed at the end {after:?}, log ends {end:?}"
    );
    Ok(())
}

/// Committed offsets of `group` (partition → offset) from `admin describe-group`, which
/// must find the group with no member.
pub fn group_offsets(
    client: &str,
    bootstrap: &str,
    scratch: &Path,
    group: &str,
) -> anyhow::Result<BTreeMap<i64, i64>> {
    let g = admin_ok(client, bootstrap, scratch, &["describe-group", group])?;
    ensure!(
        g["members"].as_array().is_some_and(Vec::is_empty),
        "group {group} still has members: {g}"
    );
    ensure!(g["state"] == "Empty", "group {group}: {g}");
    g["offsets"]
        .as_array()
        .context("no offsets")?
        .iter()
        .map(|o| Ok((int(o, "partition")?, int(o, "offset")?)))
        .collect()
}

/// Create a 2-partition topic (a second create fails with TopicExistsException), see it
/// in `list-topics` and `describe-topic` (2 partitions, each with a live leader and one
/// replica in sync), grow it to 5 (`add-partitions`), read its configs
/// (`cleanup.policy=delete`), describe the cluster (an id, at least one node), delete it
/// and see it gone from `list-topics`.
pub fn admin_create_delete_add_partitions(bootstrap: &str, scratch: &Path) -> anyhow::Result<()> {
    let java = "kafka-java";
    let topic = unique("admin");
    create_topic(java, bootstrap, scratch, &topic, 2)?;
    let (code, events) = admin(
        java,
        bootstrap,
        scratch,
        &["create-topic", &topic, "--partitions", "2"],
    )?;
    ensure!(
        code == 1
            && events.iter().any(|e| e["event"] == "error"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("TopicExistsException"))),
        "second create-topic: exit {code}: {events:?}"
    );
    let listed = admin_ok(java, bootstrap, scratch, &["list-topics"])?;
    ensure!(
        listed["topics"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| *t == topic.as_str())),
        "list-topics lacks {topic}: {listed}"
    );
    let check_partitions = |n: usize| -> anyhow::Result<()> {
        let d = admin_ok(java, bootstrap, scratch, &["describe-topic", &topic])?;
        let parts = d["partitions"].as_array().context("no partitions")?;
        ensure!(parts.len() == n, "{n} partitions expected: {d}");
        for (i, p) in parts.iter().enumerate() {
            ensure!(
                int(p, "partition")? == i64::try_from(i)?
                    && int(p, "leader")? >= 0
                    && p["replicas"].as_array().map(Vec::len) == Some(1)
                    && p["isr"] == p["replicas"],
                "partition {i}: {p}"
            );
        }
        ensure!(
            d["internal"] == false && d["topic"] == topic.as_str(),
            "{d}"
        );
        Ok(())
    };
    check_partitions(2)?;
    admin_ok(java, bootstrap, scratch, &["add-partitions", &topic, "5"])?;
    check_partitions(5)?;
    let configs = admin_ok(java, bootstrap, scratch, &["describe-configs", &topic])?;
    ensure!(
        configs["configs"]["cleanup.policy"] == "delete",
        "configs: {configs}"
    );
    // A topic's retention, set and deleted through incrementalAlterConfigs.
    let retention = |configs: &Value| {
        configs["configs"]["retention.ms"]
            .as_str()
            .map(str::to_owned)
    };
    let before = retention(&configs);
    admin_ok(
        java,
        bootstrap,
        scratch,
        &["alter-config", &topic, "retention.ms=7200000"],
    )?;
    let altered = admin_ok(java, bootstrap, scratch, &["describe-configs", &topic])?;
    ensure!(
        retention(&altered).as_deref() == Some("7200000"),
        "after setting retention.ms: {altered}"
    );
    admin_ok(
        java,
        bootstrap,
        scratch,
        &["delete-config", &topic, "retention.ms"],
    )?;
    let reset = admin_ok(java, bootstrap, scratch, &["describe-configs", &topic])?;
    ensure!(
        retention(&reset) == before,
        "after deleting retention.ms, back to {before:?}: {reset}"
    );
    let cluster = admin_ok(java, bootstrap, scratch, &["describe-cluster"])?;
    ensure!(
        cluster["clusterId"].as_str().is_some_and(|c| !c.is_empty())
            && cluster["nodes"].as_array().is_some_and(|n| !n.is_empty()),
        "cluster: {cluster}"
    );
    admin_ok(java, bootstrap, scratch, &["delete-topic", &topic])?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed = admin_ok(java, bootstrap, scratch, &["list-topics"])?;
        if !listed["topics"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| *t == topic.as_str()))
        {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "{topic} still listed after delete"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// One `group-member` process and the partitions it holds now (from its `assigned` and
/// `revoked` lines).
#[derive(Debug)]
struct Member {
    name: String,
    run: ClientRun,
    stop_file: PathBuf,
}

impl Member {
    fn start(
        bootstrap: &str,
        scratch: &Path,
        topic: &str,
        group: &str,
        name: &str,
    ) -> anyhow::Result<Self> {
        let stop_file = scratch.join(format!("{}.stop", unique(name)));
        let run = ClientRun::spawn(
            "kafka-java",
            &args(&[
                "group-member",
                "--bootstrap",
                bootstrap,
                "--topic",
                topic,
                "--group",
                group,
                "--run-ms",
                "120000",
                "--stop-file",
                &stop_file.to_string_lossy(),
                "--client-id",
                name,
            ]),
            scratch,
        )?;
        Ok(Self {
            name: name.to_owned(),
            run,
            stop_file,
        })
    }

    fn holds(&self) -> BTreeSet<i64> {
        let mut held = BTreeSet::new();
        for e in self.run.events() {
            let parts = || -> BTreeSet<i64> {
                e["partitions"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_i64).collect())
                    .unwrap_or_default()
            };
            if e["event"] == "assigned" {
                held = parts();
            } else if e["event"] == "revoked" {
                held = held.difference(&parts()).copied().collect();
            }
        }
        held
    }

    /// Creates the stop file and waits for a clean exit (the member commits and leaves).
    fn stop(self) -> anyhow::Result<Vec<Value>> {
        std::fs::write(&self.stop_file, b"")?;
        let (code, events) = self.run.wait(Duration::from_secs(30))?;
        ensure!(code == 0, "member {} exited {code}", self.name);
        Ok(events)
    }
}

/// Waits until the members hold disjoint, non-empty partition sets covering 0..n, and
/// each holds `share` of them; returns the assignment.
fn wait_balanced(members: &[&Member], n: i64, share: usize) -> anyhow::Result<Vec<BTreeSet<i64>>> {
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        let held: Vec<BTreeSet<i64>> = members.iter().map(|m| m.holds()).collect();
        let union: BTreeSet<i64> = held.iter().flatten().copied().collect();
        let total: usize = held.iter().map(BTreeSet::len).sum();
        if union.len() == total && union == (0..n).collect() && held.iter().all(|h| !h.is_empty()) {
            ensure!(
                held.iter().all(|h| h.len() == share),
                "range assignment of {n} partitions over {} members: {held:?}",
                members.len()
            );
            return Ok(held);
        }
        ensure!(
            Instant::now() < deadline,
            "no balanced assignment within 45 s: {:?}",
            members
                .iter()
                .map(|m| (&m.name, m.holds()))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the members together printed every record of `sent` (by partition and
/// offset).
fn wait_received(members: &[&Member], sent: &[Sent]) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut seen = BTreeSet::new();
        for m in members {
            for r in recvs(&m.run.events())? {
                seen.insert((r.partition, r.offset));
            }
        }
        let missing = sent
            .iter()
            .filter(|s| !seen.contains(&(s.partition, s.offset)))
            .count();
        if missing == 0 {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "{missing} of {} records not consumed within 30 s",
            sent.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Three `group-member`s (classic protocol, range assignor) of one group on a 6-partition
/// topic get 2 partitions each; 60 records are consumed; one member leaves (commits and
/// sends LeaveGroup), the other two take 3 each and consume 60 more; a new member joins,
/// back to 2 each, 60 more. Every produced record is consumed (keys and values intact),
/// within each member's tenure of a partition offsets only go up, and a record consumed
/// twice (at-least-once across a hand-over) is counted: at most 10, each time by two
/// different members. Returns the number of such duplicates.
pub fn group_of_three_with_leave_and_join(
    bootstrap: &str,
    scratch: &Path,
) -> anyhow::Result<usize> {
    let java = "kafka-java";
    let topic = unique("group3");
    let group = unique("group3-g");
    create_topic(java, bootstrap, scratch, &topic, 6)?;
    let a = Member::start(bootstrap, scratch, &topic, &group, "member-a")?;
    let b = Member::start(bootstrap, scratch, &topic, &group, "member-b")?;
    let c = Member::start(bootstrap, scratch, &topic, &group, "member-c")?;
    wait_balanced(&[&a, &b, &c], 6, 2)?;
    let mut sent = Produce::new(java, &topic, 60, "p1").run(bootstrap, scratch)?;
    wait_received(&[&a, &b, &c], &sent)?;

    let a_events = a.stop()?;
    wait_balanced(&[&b, &c], 6, 3)?;
    let phase2 = Produce::new(java, &topic, 60, "p2").run(bootstrap, scratch)?;
    wait_received(&[&b, &c], &phase2)?;
    sent.extend(phase2);

    let d = Member::start(bootstrap, scratch, &topic, &group, "member-d")?;
    wait_balanced(&[&b, &c, &d], 6, 2)?;
    let phase3 = Produce::new(java, &topic, 60, "p3").run(bootstrap, scratch)?;
    wait_received(&[&b, &c, &d], &phase3)?;
    sent.extend(phase3);

    let mut per_member = vec![("member-a".to_owned(), a_events)];
    for m in [b, c, d] {
        let name = m.name.clone();
        per_member.push((name, m.stop()?));
    }

    let by_pos: HashMap<(i64, i64), &Sent> =
        sent.iter().map(|s| ((s.partition, s.offset), s)).collect();
    let mut first_by: HashMap<(i64, i64), String> = HashMap::new();
    let mut duplicates = 0;
    let mut all = Vec::new();
    for (name, events) in &per_member {
        // Offsets per partition rise within one tenure (reset when it is revoked).
        let mut last: BTreeMap<i64, i64> = BTreeMap::new();
        for e in events {
            if e["event"] == "revoked" {
                for p in e["partitions"].as_array().into_iter().flatten() {
                    if let Some(p) = p.as_i64() {
                        last.remove(&p);
                    }
                }
                continue;
            }
            if e["event"] != "recv" {
                continue;
            }
            let r = recvs(std::slice::from_ref(e))?.remove(0);
            let s = by_pos
                .get(&(r.partition, r.offset))
                .with_context(|| format!("{name} got a record never sent: {r:?}"))?;
            ensure!(
                r.key == s.key && r.value == s.value,
                "{name}: {r:?} is not what was sent there: {s:?}"
            );
            if let Some(prev) = last.insert(r.partition, r.offset) {
                ensure!(
                    r.offset > prev,
                    "{name}: partition {} went from {prev} to {}",
                    r.partition,
                    r.offset
                );
            }
            match first_by.get(&(r.partition, r.offset)) {
                Some(first) => {
                    ensure!(first != name, "{name} got {r:?} twice");
                    duplicates += 1;
                }
                None => {
                    first_by.insert((r.partition, r.offset), name.clone());
                }
            }
            all.push(r);
        }
    }
    ensure!(
        first_by.len() == sent.len(),
        "{} distinct records consumed of {} sent",
        first_by.len(),
        sent.len()
    );
    ensure!(duplicates <= 10, "{duplicates} records consumed twice");
    check_dense(&all)?;
    Ok(duplicates)
}

/// librdkafka (confluent-kafka): creates a 3-partition topic, produces 20 records with
/// each compression (none, gzip, snappy, lz4, zstd; acks=all, idempotent) and 20 each
/// with acks 0 and 1, consumes all 140 in a group: each exactly once and intact.
pub fn librdkafka_produce_consume(bootstrap: &str, scratch: &Path) -> anyhow::Result<()> {
    client_produce_consume("kafka-python", bootstrap, scratch)
}

/// franz-go: the same as [`librdkafka_produce_consume`] with the Go client.
pub fn franz_go_produce_consume(bootstrap: &str, scratch: &Path) -> anyhow::Result<()> {
    client_produce_consume("kafka-go", bootstrap, scratch)
}

fn client_produce_consume(client: &str, bootstrap: &str, scratch: &Path) -> anyhow::Result<()> {
    let topic = unique(client);
    create_topic(client, bootstrap, scratch, &topic, 3)?;
    let mut combos: Vec<(String, &str, &str)> = CODECS
        .into_iter()
        .map(|c| (format!("c-{c}"), "all", c))
        .collect();
    combos.push(("c-acks0".to_owned(), "0", "none"));
    combos.push(("c-acks1".to_owned(), "1", "lz4"));
    produce_combos_and_consume(client, bootstrap, scratch, &topic, &combos, 4)
}

/// One producer run of 20 records per `(key prefix, acks, codec)` (`parallel` at a time),
/// each record carrying its run's acks and codec as headers; then one consumer of a new
/// group reads everything back, checked with [`check_exactly_once`].
fn produce_combos_and_consume(
    client: &str,
    bootstrap: &str,
    scratch: &Path,
    topic: &str,
    combos: &[(String, &str, &str)],
    parallel: usize,
) -> anyhow::Result<()> {
    let headers: Vec<[(&str, &str); 2]> = combos
        .iter()
        .map(|(_, acks, codec)| [("acks", *acks), ("codec", *codec)])
        .collect();
    let runs: Vec<Produce<'_>> = combos
        .iter()
        .zip(&headers)
        .map(|((prefix, acks, codec), h)| Produce {
            acks,
            compression: codec,
            headers: h,
            ..Produce::new(client, topic, 20, prefix)
        })
        .collect();
    let sent = produce_all(bootstrap, scratch, &runs, parallel)?;
    let got = consume(
        client,
        bootstrap,
        scratch,
        topic,
        &unique("g"),
        sent.len(),
        &[],
    )?;
    check_exactly_once(&sent, &got)
}

/// A scenario: `(bootstrap, scratch directory)`.
pub type Scenario = fn(&str, &Path) -> anyhow::Result<()>;

/// Every scenario, by name, in the order they run.
pub fn scenarios() -> Vec<(&'static str, Scenario)> {
    vec![
        (
            "admin_create_delete_add_partitions",
            admin_create_delete_add_partitions,
        ),
        (
            "produce_consume_every_acks_and_compression (kafka-clients 4.4.0)",
            |b, s| produce_consume_every_acks_and_compression("kafka-java", b, s),
        ),
        (
            "produce_consume_every_acks_and_compression (kafka-clients 3.9.1)",
            |b, s| produce_consume_every_acks_and_compression("kafka-java3", b, s),
        ),
        (
            "idempotent_producer_no_duplicates",
            idempotent_producer_no_duplicates,
        ),
        ("seek_beginning_end_timestamp", seek_beginning_end_timestamp),
        ("commit_and_resume", commit_and_resume),
        ("group_of_three_with_leave_and_join", |b, s| {
            let dups = group_of_three_with_leave_and_join(b, s)?;
            eprintln!("  group_of_three_with_leave_and_join: {dups} records consumed twice");
            Ok(())
        }),
        ("librdkafka_produce_consume", librdkafka_produce_consume),
        ("franz_go_produce_consume", franz_go_produce_consume),
    ]
}

/// Runs every scenario against `bootstrap`, each reported with its time; returns the names
/// of those that failed (their clients' transcripts are kept and their path printed).
pub fn run_scenarios(bootstrap: &str) -> Vec<&'static str> {
    let mut failed = Vec::new();
    for (name, scenario) in scenarios() {
        let Ok(scratch) = tempfile::tempdir() else {
            failed.push(name);
            continue;
        };
        let t = Instant::now();
        let result = scenario(bootstrap, scratch.path());
        let secs = t.elapsed().as_secs_f64();
        match result {
            Ok(()) => eprintln!("ok   {name} ({secs:.1} s)"),
            Err(e) => {
                eprintln!("FAIL {name} ({secs:.1} s): {e:#}");
                failed.push(name);
                eprintln!("     client output kept in {}", scratch.keep().display());
            }
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(key: &str, seq: i64, partition: i64, offset: i64) -> Sent {
        Sent {
            partition,
            offset,
            key: key.to_owned(),
            value: format!("value of {key}"),
            headers: BTreeMap::from([("codec".to_owned(), "lz4".to_owned())]),
            seq,
        }
    }

    fn recv(s: &Sent, offset: i64) -> Recv {
        Recv {
            partition: s.partition,
            offset,
            key: s.key.clone(),
            value: s.value.clone(),
            headers: BTreeMap::from([
                ("seq".to_owned(), s.seq.to_string()),
                ("codec".to_owned(), "lz4".to_owned()),
            ]),
            timestamp: 0,
        }
    }

    fn three() -> Vec<Sent> {
        vec![
            sent("a-0", 0, 0, 0),
            sent("a-1", 1, 0, 1),
            sent("a-2", 2, 1, -1),
        ]
    }

    #[test]
    fn a_complete_ordered_consumption_passes() {
        let s = three();
        let got = vec![recv(&s[0], 0), recv(&s[2], 0), recv(&s[1], 1)];
        check_exactly_once(&s, &got).unwrap();
    }

    #[test]
    fn loss_duplicates_reordering_and_damage_are_caught() {
        let s = three();
        let lost = vec![recv(&s[0], 0), recv(&s[2], 0)];
        assert!(check_exactly_once(&s, &lost).is_err());
        let twice = vec![
            recv(&s[0], 0),
            recv(&s[0], 0),
            recv(&s[1], 1),
            recv(&s[2], 0),
        ];
        assert!(check_exactly_once(&s, &twice).is_err());
        let reordered = vec![recv(&s[1], 1), recv(&s[0], 0), recv(&s[2], 0)];
        assert!(check_exactly_once(&s, &reordered).is_err());
        let mut no_header = recv(&s[2], 0);
        no_header.headers.remove("codec");
        let damaged = vec![recv(&s[0], 0), recv(&s[1], 1), no_header];
        assert!(check_exactly_once(&s, &damaged).is_err());
        let mut moved = recv(&s[1], 1);
        moved.offset = 2;
        assert!(check_exactly_once(&s, &[recv(&s[0], 0), moved, recv(&s[2], 0)]).is_err());
    }

    #[test]
    fn offsets_must_be_dense_from_zero() {
        let s = three();
        check_dense(&[recv(&s[0], 0), recv(&s[1], 1)]).unwrap();
        assert!(check_dense(&[recv(&s[0], 0), recv(&s[1], 2)]).is_err());
        assert!(check_dense(&[recv(&s[1], 1)]).is_err());
    }
}
