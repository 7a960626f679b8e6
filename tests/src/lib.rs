//! Harness for end-to-end tests: start a real `stratus` process on free loopback ports,
//! stop it with SIGTERM or kill -9, and run the real RocketMQ client programs of
//! `tests/clients/` against it, collecting their JSON-lines output.
//!
//! With `STRATUS_TEST_S3=endpoint,bucket,access_key,secret_key` every node keeps its
//! segments in that S3 bucket (under a prefix of its own, see [`S3Env::node_prefix`])
//! instead of its data directory, unless the test chose an object store itself.

pub mod kafka;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use serde_json::Value;
use stratus_compat::RequestCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND, PullMessageRequestHeader,
};
use stratus_compat::request::send::SendMessageRequestHeader;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Path of the `stratus` binary: `$STRATUS_BIN`, else `target/debug/stratus` (built on
/// demand with `cargo build -p stratus-gateway`).
pub fn stratus_bin() -> PathBuf {
    if let Ok(p) = std::env::var("STRATUS_BIN") {
        return PathBuf::from(p);
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("target"));
    let bin = target.join("debug").join("stratus");
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "stratus-gateway", "--bin", "stratus"])
            .current_dir(workspace_root())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build of stratus failed");
    });
    bin
}

/// `n` consecutive free loopback ports (bound then released); returns the first.
pub fn free_port_range(n: u16) -> u16 {
    for _ in 0..200 {
        let base = free_port();
        if base.checked_add(n).is_none() {
            continue;
        }
        let all_free = (0..n).all(|i| TcpListener::bind(("127.0.0.1", base + i)).is_ok());
        if all_free {
            return base;
        }
    }
    panic!("no {n} consecutive free ports");
}

/// Port of shard `shard` given a node's first broker port: shards are 3 apart, each also
/// served on its port − 2 (the VIP channel).
pub fn shard_port(base: u16, shard: u16) -> u16 {
    base + 3 * shard
}

/// A first broker port for a node with `shards` shards whose every port (each shard's port
/// and its VIP port, port − 2) is free on loopback.
pub fn free_shard_base(shards: u16) -> u16 {
    for _ in 0..200 {
        let base = free_port();
        if base < 3 || u32::from(base) + 3 * u32::from(shards) > 65535 {
            continue;
        }
        let all_free = (0..shards)
            .flat_map(|s| [shard_port(base, s), shard_port(base, s) - 2])
            .all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok());
        if all_free {
            return base;
        }
    }
    panic!("no free ports for {shards} shards");
}

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// GETs `/metrics` at `addr`: the Prometheus text of a node (a node's `metrics` address).
pub fn scrape_metrics(addr: SocketAddr) -> anyhow::Result<String> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(addr).context("connect to /metrics")?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: stratus\r\nConnection: close\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        bail!("malformed HTTP answer from /metrics: {text}");
    };
    if !head.starts_with("HTTP/1.1 200") {
        bail!("/metrics answered {head}");
    }
    Ok(body.to_owned())
}

/// A free Kafka bootstrap port with free ports after it for every shard the settings in
/// `envs` ask for (`STRATUS_NODE__SHARDS`, 1 by default).
fn kafka_base(envs: &[(&str, &str)]) -> SocketAddr {
    let shards: u16 = envs
        .iter()
        .find(|(k, _)| *k == "STRATUS_NODE__SHARDS")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(1);
    SocketAddr::from(([127, 0, 0, 1], free_port_range(shards + 1)))
}

/// A running `stratus serve` process.
#[derive(Debug)]
pub struct Node {
    child: Option<Child>,
    /// Data directory.
    pub data_dir: PathBuf,
    /// Name-server address.
    pub namesrv: SocketAddr,
    /// Broker address.
    pub broker: SocketAddr,
    /// `/metrics` endpoint (`STRATUS_METRICS__ADDR`, a free port; kept across restarts).
    pub metrics: SocketAddr,
    /// Kafka bootstrap port (`STRATUS_KAFKA__LISTEN_ADDR`; shard `s` on port + 1 + `s`),
    /// free ports for every shard; kept across restarts.
    pub kafka: SocketAddr,
    log: PathBuf,
    extra: Vec<String>,
    /// Extra environment (`STRATUS_<SECTION>__<KEY>` settings) of the process.
    envs: Vec<(String, String)>,
    /// Whether readiness waits for the broker port too (a cluster member may own no shard
    /// at first, so its first broker port may stay closed).
    wait_for_broker: bool,
}

impl Node {
    /// Starts one node of a cluster: its own name-server port and first broker port
    /// (`broker`, shard `s` on `broker` + `s`), settings in `envs` (meta URL, object store,
    /// node id, shard count…); ready once the name-server port answers.
    pub fn start_member(
        data_dir: &Path,
        namesrv: SocketAddr,
        broker: SocketAddr,
        envs: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let mut node = Self {
            child: None,
            data_dir: data_dir.to_path_buf(),
            namesrv,
            broker,
            metrics: SocketAddr::from(([127, 0, 0, 1], free_port())),
            kafka: kafka_base(envs),
            log: data_dir.join("stratus.log"),
            extra: Vec::new(),
            envs: envs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            wait_for_broker: false,
        };
        // The metrics port is picked here and may be taken before the node binds it (the
        // caller chose the other two): retry on a fresh one.
        let mut attempt = 0;
        loop {
            attempt += 1;
            match node.spawn() {
                Ok(()) => return Ok(node),
                Err(e) if attempt < 3 && format!("{e:#}").contains("metrics.addr: cannot bind") => {
                    eprintln!("metrics port taken before the node bound it; retrying");
                    node.metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Starts a node on fresh ports with its data in `data_dir`.
    pub fn start(data_dir: &Path) -> anyhow::Result<Self> {
        Self::start_with(data_dir, &[])
    }

    /// Starts a node with extra `serve` arguments / env-style overrides.
    ///
    /// A port picked free can be taken by another process before the node binds it; the
    /// start is then retried on fresh ports (up to three times).
    pub fn start_with(data_dir: &Path, extra: &[&str]) -> anyhow::Result<Self> {
        Self::start_with_env(data_dir, extra, &[])
    }

    /// Starts a node like [`start_with`](Self::start_with), with settings in `envs`
    /// (`STRATUS_<SECTION>__<KEY>` variables) as well.
    pub fn start_with_env(
        data_dir: &Path,
        extra: &[&str],
        envs: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let namesrv: SocketAddr = format!("127.0.0.1:{}", free_port()).parse()?;
            let broker: SocketAddr = format!("127.0.0.1:{}", free_shard_base(1)).parse()?;
            let mut node = Self {
                child: None,
                data_dir: data_dir.to_path_buf(),
                namesrv,
                broker,
                metrics: SocketAddr::from(([127, 0, 0, 1], free_port())),
                kafka: kafka_base(envs),
                log: data_dir.join("stratus.log"),
                extra: extra.iter().map(|s| (*s).to_owned()).collect(),
                envs: envs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                wait_for_broker: true,
            };
            match node.spawn() {
                Ok(()) => return Ok(node),
                Err(e) if attempt < 3 && format!("{e:#}").contains("Address already in use") => {
                    eprintln!("port taken before the node bound it; retrying on fresh ports");
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn spawn(&mut self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.data_dir)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(stratus_bin())
            .envs(s3_node_env(&self.data_dir)?)
            .arg("serve")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--namesrv-addr")
            .arg(self.namesrv.to_string())
            .arg("--broker-addr")
            .arg(self.broker.to_string())
            .env("STRATUS_METRICS__ADDR", self.metrics.to_string())
            .env("STRATUS_KAFKA__LISTEN_ADDR", self.kafka.to_string())
            .args(&self.extra)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("spawn stratus")?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if TcpStream::connect(self.namesrv).is_ok()
                && (!self.wait_for_broker || TcpStream::connect(self.broker).is_ok())
            {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut()
                && let Some(status) = c.try_wait()?
            {
                bail!(
                    "stratus exited early with {status}; log:\n{}",
                    self.log_text()
                );
            }
            if Instant::now() > deadline {
                bail!("stratus did not start in 30 s; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The node's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `host:port` of the name server, as clients take it.
    pub fn namesrv_arg(&self) -> String {
        self.namesrv.to_string()
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The process's resident set size in bytes (`VmRSS` of `/proc/<pid>/status`).
    ///
    /// # Errors
    /// Not running, or no `VmRSS` line (not Linux).
    pub fn rss_bytes(&self) -> anyhow::Result<u64> {
        let pid = self.pid().context("node not running")?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .context("no VmRSS in /proc/<pid>/status")?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()?;
        Ok(kib * 1024)
    }

    /// Stops with SIGTERM and waits; returns whether it exited successfully.
    pub fn terminate(&mut self) -> anyhow::Result<bool> {
        let Some(mut child) = self.child.take() else {
            return Ok(true);
        };
        let pid = child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status()?;
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status.success());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                bail!("stratus did not stop within 40 s after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Freezes the process (SIGSTOP), as a long pause or a network cut would.
    pub fn pause(&self) -> anyhow::Result<()> {
        self.signal("-STOP")
    }

    /// Thaws a paused process (SIGCONT).
    pub fn resume(&self) -> anyhow::Result<()> {
        self.signal("-CONT")
    }

    fn signal(&self, sig: &str) -> anyhow::Result<()> {
        let child = self.child.as_ref().context("node not running")?;
        let ok = Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()?
            .success();
        if !ok {
            bail!("kill {sig} failed");
        }
        Ok(())
    }

    /// Kills with SIGKILL (kill -9).
    pub fn kill9(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Starts the process again on the same data dir and ports.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        if self.child.is_some() {
            bail!("node still running");
        }
        self.spawn()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The real RocketMQ client programs (see `tests/clients/README.md`).
pub const CLIENTS: [&str; 5] = ["java49", "java5", "go", "cpp", "rust"];

/// Whether a client program is installed (what `tests/clients/install.sh` builds).
pub fn client_installed(client: &str) -> bool {
    let dir = workspace_root().join("tests/clients");
    let artifact = match client {
        "java49" | "java5" => dir
            .join(client)
            .join(format!("target/rmq-client-{client}-1.jar")),
        "go" => dir.join("go/bin/rmq-client-go"),
        "cpp" => dir.join("python/.venv/bin/python"),
        "rust" => dir.join("rust/target/debug/rmq-client"),
        _ => return false,
    };
    artifact.exists()
}

/// True when CI demands every client (`STRATUS_REQUIRE_CLIENTS=1`).
pub fn clients_required() -> bool {
    std::env::var("STRATUS_REQUIRE_CLIENTS").is_ok_and(|v| v == "1")
}

/// Whether the real `mqadmin` of `version` is installed (`tests/clients/mqadmin.sh install`).
pub fn mqadmin_installed(version: &str) -> bool {
    workspace_root()
        .join("tests/clients/mqadmin")
        .join(version)
        .join("lib/.done")
        .exists()
}

/// Runs one real `mqadmin` command (rocketmq-tools `version`) against the name server
/// `namesrv` and returns its stdout and stderr together. mqadmin exits 0 even when the
/// command failed, so callers check the text. `None` when that version is not installed
/// and clients are not required (`STRATUS_REQUIRE_CLIENTS`).
pub fn mqadmin(version: &str, namesrv: &str, command: &[&str]) -> anyhow::Result<Option<String>> {
    mqadmin_as(version, namesrv, command, None)
}

/// Runs `mqadmin` like [`mqadmin`], signing every request as `credentials` (access key,
/// secret key) when given: through a tools home of its own (a temporary directory) whose
/// `conf/tools.yml` holds them, as rocketmq-tools reads its ACL credentials.
pub fn mqadmin_as(
    version: &str,
    namesrv: &str,
    command: &[&str],
    credentials: Option<(&str, &str)>,
) -> anyhow::Result<Option<String>> {
    if !mqadmin_installed(version) {
        anyhow::ensure!(
            !clients_required(),
            "mqadmin {version} is required but not installed (tests/clients/mqadmin.sh install)"
        );
        eprintln!("skipping: mqadmin {version} not installed (tests/clients/mqadmin.sh install)");
        return Ok(None);
    }
    let script = workspace_root().join("tests/clients/mqadmin.sh");
    let mut cmd = Command::new("bash");
    let home = match credentials {
        Some((ak, sk)) => {
            let home = tempfile::tempdir()?;
            std::fs::create_dir_all(home.path().join("conf"))?;
            std::fs::write(
                home.path().join("conf/tools.yml"),
                format!("accessKey: {ak}\nsecretKey: {sk}\n"),
            )?;
            std::fs::write(
                home.path().join("conf/logback_tools.xml"),
                "<configuration><root level=\"OFF\"/></configuration>\n",
            )?;
            cmd.env("MQADMIN_HOME", home.path());
            Some(home)
        }
        None => None,
    };
    cmd.arg(script).arg(version).arg(command[0]);
    cmd.args(&command[1..]).arg("-n").arg(namesrv);
    let out = cmd.output()?;
    drop(home);
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(Some(text))
}

static NEXT_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A client program run in the background, its stdout parsed line by line.
#[derive(Debug)]
pub struct ClientRun {
    child: Child,
    events: Arc<Mutex<Vec<Value>>>,
    reader: Option<JoinHandle<()>>,
    stderr_path: PathBuf,
    /// Description for messages.
    pub what: String,
}

impl ClientRun {
    /// Starts `tests/clients/run.sh <client> <args…>`.
    pub fn spawn(client: &str, args: &[String], scratch: &Path) -> anyhow::Result<Self> {
        Self::spawn_with_env(client, args, scratch, &[])
    }

    /// Starts a client program like [`spawn`](Self::spawn), with extra environment (for
    /// example `JAVA_CLIENT_OPTS`, the Java clients' JVM options).
    pub fn spawn_with_env(
        client: &str,
        args: &[String],
        scratch: &Path,
        envs: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        use std::io::BufRead;
        std::fs::create_dir_all(scratch)?;
        let what = format!("{client} {}", args.join(" "));
        // Each run gets its own home and client state (local offset stores, logs), as two
        // processes on two hosts would.
        let run_id = NEXT_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = scratch.join(format!("{client}-{}-{run_id}", std::process::id()));
        std::fs::create_dir_all(&state)?;
        let stderr_path = state.join("stderr.log");
        let mut child = Command::new(workspace_root().join("tests/clients/run.sh"))
            .arg(client)
            .args(args)
            .env("HOME", &state)
            .env("STRATUS_CLIENT_STATE", &state)
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path)?)
            .spawn()
            .with_context(|| format!("spawn {what}"))?;
        let stdout = child.stdout.take().context("stdout")?;
        let events = Arc::new(Mutex::new(Vec::new()));
        let ev = events.clone();
        let mut transcript = std::fs::File::create(state.join("stdout.jsonl"))?;
        let reader = std::thread::Builder::new()
            .name(format!("{client}-out"))
            .spawn(move || {
                use std::io::Write;
                for line in std::io::BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                {
                    let _ = writeln!(transcript, "{line}");
                    if let Ok(mut v) = serde_json::from_str::<Value>(line.trim()) {
                        // When the harness saw the line (ms since the epoch): lets tests
                        // measure delivery times without trusting client clocks.
                        if let Some(obj) = v.as_object_mut() {
                            obj.insert("_rx_ms".into(), Value::from(now_ms()));
                        }
                        ev.lock().expect("events lock").push(v);
                    }
                }
            })?;
        Ok(Self {
            child,
            events,
            reader: Some(reader),
            stderr_path,
            what,
        })
    }

    /// Events seen so far.
    pub fn events(&self) -> Vec<Value> {
        self.events.lock().expect("events lock").clone()
    }

    /// Events of one kind (`sent`, `recv`, …).
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == kind)
            .collect()
    }

    /// Waits until an event of `kind` appears.
    pub fn wait_for(&self, kind: &str, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if !self.events_of(kind).is_empty() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!(
            "{}: no {kind:?} event within {timeout:?}; stderr:\n{}",
            self.what,
            self.stderr()
        )
    }

    /// Waits for the process to exit; returns its exit code.
    pub fn wait(mut self, timeout: Duration) -> anyhow::Result<(i32, Vec<Value>)> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = self.child.try_wait()? {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                bail!(
                    "{} did not finish within {timeout:?}; stderr:\n{}",
                    self.what,
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        Ok((status.code().unwrap_or(-1), self.events()))
    }

    /// The program's stderr so far (last 4 KiB).
    pub fn stderr(&self) -> String {
        let s = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let start = s.len().saturating_sub(4096);
        s.get(start..).unwrap_or(&s).to_owned()
    }
}

impl Drop for ClientRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a client to completion and returns (exit code, events).
pub fn run_client(
    client: &str,
    args: &[String],
    scratch: &Path,
    timeout: Duration,
) -> anyhow::Result<(i32, Vec<Value>)> {
    ClientRun::spawn(client, args, scratch)?.wait(timeout)
}

/// The object store every node of a multi-node test shares: one prefix of the
/// `STRATUS_TEST_S3` bucket when set (the harness gives each node the endpoint and
/// credentials), else a local directory under `dir`.
pub fn cluster_object_store_url(dir: &Path) -> String {
    match s3_env() {
        Ok(Some(s3)) => s3.object_store_url(&dir.join("cluster")),
        _ => format!("file://{}", dir.join("objects").display()),
    }
}

/// Converts `&str` arguments.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// Wall-clock milliseconds since the Unix epoch.
#[allow(clippy::disallowed_methods)] // the harness measures real time on purpose
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The S3-compatible server the suites run on when `STRATUS_TEST_S3` is set
/// (`endpoint,bucket,access_key,secret_key`, e.g.
/// `http://127.0.0.1:9000,stratus,stratus,stratus-secret`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Env {
    /// Endpoint URL.
    pub endpoint: String,
    /// Bucket (must exist).
    pub bucket: String,
    /// Access key id.
    pub access_key: String,
    /// Secret access key.
    pub secret_key: String,
}

/// An object as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Object {
    /// Key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// ETag, quotes included (a multipart upload's ends in `-<parts>`).
    pub etag: String,
}

/// `STRATUS_TEST_S3`, parsed; `None` when unset or empty.
///
/// # Errors
/// A value that is not four comma-separated fields.
pub fn s3_env() -> anyhow::Result<Option<S3Env>> {
    let Ok(v) = std::env::var("STRATUS_TEST_S3") else {
        return Ok(None);
    };
    if v.trim().is_empty() {
        return Ok(None);
    }
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let [endpoint, bucket, access_key, secret_key] = parts.as_slice() else {
        bail!("STRATUS_TEST_S3 must be endpoint,bucket,access_key,secret_key");
    };
    if [endpoint, bucket, access_key, secret_key]
        .iter()
        .any(|p| p.is_empty())
    {
        bail!("STRATUS_TEST_S3 has an empty field: endpoint,bucket,access_key,secret_key");
    }
    Ok(Some(S3Env {
        endpoint: endpoint.trim_end_matches('/').to_owned(),
        bucket: (*bucket).to_owned(),
        access_key: (*access_key).to_owned(),
        secret_key: (*secret_key).to_owned(),
    }))
}

/// True when CI demands the S3 server (`STRATUS_REQUIRE_S3=1`).
pub fn s3_required() -> bool {
    std::env::var("STRATUS_REQUIRE_S3").is_ok_and(|v| v == "1")
}

/// The settings (as `STRATUS_STORAGE__*` variables) that put a node whose data directory is
/// `data_dir` on the `STRATUS_TEST_S3` server; empty without it. A test's own
/// `--object-store-url` flag still wins (flags are the last settings layer).
fn s3_node_env(data_dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
    Ok(match s3_env()? {
        Some(s3) => s3.node_env(data_dir),
        None => Vec::new(),
    })
}

impl S3Env {
    /// The key prefix of the node with data directory `data_dir`: stable across restarts
    /// of that node, different for every directory.
    pub fn node_prefix(&self, data_dir: &Path) -> String {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        data_dir.hash(&mut h);
        format!("stratus-tests/{:016x}", h.finish())
    }

    /// `s3://bucket/<node prefix>`.
    pub fn object_store_url(&self, data_dir: &Path) -> String {
        format!("s3://{}/{}", self.bucket, self.node_prefix(data_dir))
    }

    /// Every `STRATUS_STORAGE__*` variable a node on this server needs.
    pub fn node_env(&self, data_dir: &Path) -> Vec<(String, String)> {
        self.settings_env(&self.object_store_url(data_dir))
    }

    /// The variables for an explicit object store URL (credentials and endpoint included).
    pub fn settings_env(&self, object_store_url: &str) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "STRATUS_STORAGE__OBJECT_STORE_URL",
                object_store_url.to_owned(),
            ),
            ("STRATUS_STORAGE__S3_ENDPOINT", self.endpoint.clone()),
            ("STRATUS_STORAGE__S3_ACCESS_KEY_ID", self.access_key.clone()),
            (
                "STRATUS_STORAGE__S3_SECRET_ACCESS_KEY",
                self.secret_key.clone(),
            ),
        ];
        if self.endpoint.starts_with("http://") {
            env.push(("STRATUS_STORAGE__S3_ALLOW_HTTP", "true".to_owned()));
        }
        env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    /// Every object under `prefix` (S3 ListObjectsV2, all pages).
    ///
    /// # Errors
    /// curl failing or a non-200 answer.
    pub fn list(&self, prefix: &str) -> anyhow::Result<Vec<S3Object>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            // Parameters sorted and fully encoded, as SigV4 signs them.
            let mut query = String::new();
            if let Some(t) = &token {
                query.push_str(&format!("continuation-token={}&", url_encode(t, false)));
            }
            query.push_str(&format!("list-type=2&prefix={}", url_encode(prefix, false)));
            let (status, body) = self.request("GET", &format!("?{query}"), None)?;
            let text = String::from_utf8_lossy(&body).into_owned();
            if status != 200 {
                bail!("list {prefix}: HTTP {status}: {text}");
            }
            for item in text.split("<Contents>").skip(1) {
                let key = xml_field(item, "Key").context("Contents without Key")?;
                let size = xml_field(item, "Size")
                    .context("Contents without Size")?
                    .parse()?;
                let etag = xml_unescape(&xml_field(item, "ETag").unwrap_or_default());
                out.push(S3Object {
                    key: xml_unescape(&key),
                    size,
                    etag,
                });
            }
            token = xml_field(&text, "NextContinuationToken");
            if xml_field(&text, "IsTruncated").as_deref() != Some("true") || token.is_none() {
                return Ok(out);
            }
        }
    }

    /// A whole object.
    ///
    /// # Errors
    /// curl failing or a non-200 answer.
    pub fn get(&self, key: &str) -> anyhow::Result<Vec<u8>> {
        let (status, body) = self.request("GET", &format!("/{}", url_encode(key, true)), None)?;
        if status != 200 {
            bail!(
                "get {key}: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        Ok(body)
    }

    /// Writes (overwrites) an object.
    ///
    /// # Errors
    /// curl failing or a non-200 answer.
    pub fn put(&self, key: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let (status, body) =
            self.request("PUT", &format!("/{}", url_encode(key, true)), Some(bytes))?;
        if status != 200 {
            bail!(
                "put {key}: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        Ok(())
    }

    /// One SigV4-signed path-style request through curl: (status, body).
    fn request(
        &self,
        method: &str,
        rest: &str,
        body: Option<&[u8]>,
    ) -> anyhow::Result<(u16, Vec<u8>)> {
        let scratch = tempfile::tempdir()?;
        let out = scratch.path().join("out");
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user"])
            .arg(format!("{}:{}", self.access_key, self.secret_key))
            .args(["-X", method, "-o"])
            .arg(&out)
            .args(["-w", "%{http_code}"]);
        if let Some(b) = body {
            let input = scratch.path().join("in");
            std::fs::write(&input, b)?;
            // `-T` (not `--data-binary`): curl's SigV4 then signs the payload MinIO checks.
            cmd.arg("-T").arg(&input);
        }
        // `rest` is `/key` or `?query`.
        let url = format!("{}/{}{rest}", self.endpoint, self.bucket);
        let output = cmd.arg(&url).output().context("run curl")?;
        if !output.status.success() {
            bail!(
                "curl {method} {url}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let status = String::from_utf8_lossy(&output.stdout).trim().parse()?;
        let body = std::fs::read(&out).unwrap_or_default();
        Ok((status, body))
    }
}

/// Percent-encodes all but unreserved characters (and `/` when `keep_slash`, for paths).
fn url_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn xml_field(text: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)? + open.len();
    let end = start + text.get(start..)?.find(&close)?;
    text.get(start..end).map(str::to_owned)
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// A throwaway PostgreSQL cluster a test can stop and start (`tests/servers/postgres.sh`);
/// stopped when dropped.
#[derive(Debug)]
pub struct Postgres {
    dir: PathBuf,
    port: u16,
}

impl Postgres {
    /// A cluster in `dir` on `port`, not started yet.
    pub fn new(dir: PathBuf, port: u16) -> Self {
        Self { dir, port }
    }

    fn script() -> PathBuf {
        workspace_root().join("tests/servers/postgres.sh")
    }

    /// Whether `initdb` and `pg_ctl` are installed (as `postgres.sh` looks for them).
    pub fn installed() -> bool {
        Command::new("bash")
            .args([
                "-c",
                "{ command -v initdb && command -v pg_ctl; } >/dev/null 2>&1 || \
                 ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1",
            ])
            .status()
            .is_ok_and(|s| s.success())
    }

    fn run(&self, what: &str) -> String {
        let mut cmd = Command::new("bash");
        cmd.arg(Self::script()).arg(what).arg(&self.dir);
        if what == "start" {
            cmd.arg(self.port.to_string());
        }
        let out = cmd.output().expect("run postgres.sh");
        assert!(
            out.status.success(),
            "postgres.sh {what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Starts (creating it the first time) the cluster; returns its URL.
    pub fn start(&self) -> String {
        self.run("start")
    }

    /// Stops the cluster.
    pub fn stop(&self) {
        self.run("stop");
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(Self::script())
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}

/// A metadata URL several nodes share: a fresh database on the PostgreSQL of
/// `STRATUS_TEST_POSTGRES_URL` when set, else one embedded database file in `dir`.
pub fn cluster_meta_url(dir: &Path) -> String {
    match std::env::var("STRATUS_TEST_POSTGRES_URL") {
        Ok(url) => postgres_database(&url),
        Err(_) => format!("embedded://{}", dir.join("meta.db").display()),
    }
}

/// A fresh, empty database on the PostgreSQL server of `url`; returns its URL.
pub fn postgres_database(url: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let db = format!("stratus_test_{}_{n}_{}", std::process::id(), now_ms());
    // From template0, which takes no connections: concurrent creates from template1 fail
    // while another copies it. Retried a few times for the same reason.
    let create = format!("CREATE DATABASE {db} TEMPLATE template0");
    let mut attempt = 0;
    loop {
        attempt += 1;
        let out = Command::new("psql")
            .args([url, "-q", "-c", &create])
            .output()
            .expect("psql");
        if out.status.success() {
            break;
        }
        assert!(
            attempt < 5,
            "psql CREATE DATABASE failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200 * attempt));
    }
    let (base, _) = url
        .rsplit_once('/')
        .expect("a PostgreSQL URL with a database");
    format!("{base}/{db}")
}

/// The brokers as a name server's cluster info lists them: broker name → address (empty
/// when the name server does not answer).
pub fn cluster_routes(namesrv: SocketAddr) -> std::collections::BTreeMap<String, String> {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return std::collections::BTreeMap::new();
    };
    rt.block_on(async {
        let Ok(client) = stratus_compat::client::RemotingClient::connect(namesrv).await else {
            return std::collections::BTreeMap::new();
        };
        let req = RemotingCommand::request(RequestCode::GetBrokerClusterInfo.to_i32(), 0);
        let Ok(resp) = client.invoke(req, Duration::from_secs(3)).await else {
            return std::collections::BTreeMap::new();
        };
        let Ok(info) =
            serde_json::from_slice::<stratus_compat::request::route::ClusterInfo>(&resp.body)
        else {
            return std::collections::BTreeMap::new();
        };
        info.broker_addr_table
            .into_iter()
            .filter_map(|(name, b)| Some((name, b.broker_addrs.get("0")?.clone())))
            .collect()
    })
}

/// Creates (or updates) `topic` with `queues` read and write queues through
/// UPDATE_AND_CREATE_TOPIC on the node at `addr` (any of its ports).
pub async fn create_topic(addr: SocketAddr, topic: &str, queues: i32) -> anyhow::Result<()> {
    let client = stratus_compat::client::RemotingClient::connect(addr).await?;
    let mut cmd = RemotingCommand::request(RequestCode::UpdateAndCreateTopic.to_i32(), 0);
    let queues = queues.to_string();
    for (k, v) in [
        ("topic", topic),
        ("defaultTopic", "TBW102"),
        ("readQueueNums", queues.as_str()),
        ("writeQueueNums", queues.as_str()),
        ("perm", "6"),
        ("topicFilterType", "SINGLE_TAG"),
        ("order", "false"),
    ] {
        cmd.put_ext(k, v);
    }
    let resp = client.invoke(cmd, Duration::from_secs(10)).await?;
    anyhow::ensure!(
        resp.code == 0,
        "create topic {topic}: code {} {:?}",
        resp.code,
        resp.remark
    );
    Ok(())
}

/// SEND_MESSAGE_V2 of `body` to queue 0 of `topic` on the broker named `broker`
/// (`broker-<n>`), with KEYS = `key` and UNIQ_KEY = `UNIQ-<key>`.
pub fn send_to_queue0(
    topic: &str,
    broker: &str,
    key: &str,
    body: impl Into<Bytes>,
) -> RemotingCommand {
    let mut props = Properties::default();
    props.insert(keys::KEYS, key);
    props.insert(keys::UNIQ_KEY, &format!("UNIQ-{key}"));
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
    SendMessageRequestHeader {
        producer_group: "pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        born_timestamp: now_ms(),
        properties: Some(props.encode()),
        broker_name: Some(broker.into()),
        ..Default::default()
    }
    .write_v2(&mut cmd);
    cmd.body = body.into();
    cmd
}

/// PULL_MESSAGE for `group` of up to 32 messages of queue 0 of `topic` on the broker named
/// `broker`, from `offset`, subscribing `*`; held up to `suspend_ms` when it is positive.
pub fn pull_queue0(
    group: &str,
    topic: &str,
    broker: &str,
    offset: i64,
    suspend_ms: i64,
) -> RemotingCommand {
    let suspend = if suspend_ms > 0 { PULL_FLAG_SUSPEND } else { 0 };
    let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 0);
    PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id: 0,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: PULL_FLAG_SUBSCRIPTION | suspend,
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: Some(broker.into()),
    }
    .write_to(&mut cmd);
    cmd
}
