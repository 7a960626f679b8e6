//! Harness for end-to-end tests: start a real `stratus` process on free loopback ports,
//! stop it with SIGTERM or kill -9, and run the real RocketMQ client programs of
//! `tests/clients/` against it, collecting their JSON-lines output.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

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
            log: data_dir.join("stratus.log"),
            extra: Vec::new(),
            envs: envs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            wait_for_broker: false,
        };
        node.spawn()?;
        Ok(node)
    }

    /// Starts a node on fresh ports with its data in `data_dir`.
    pub fn start(data_dir: &Path) -> anyhow::Result<Self> {
        Self::start_with(data_dir, &[])
    }

    /// Starts a node with extra `serve` arguments / env-style overrides.
    pub fn start_with(data_dir: &Path, extra: &[&str]) -> anyhow::Result<Self> {
        let namesrv: SocketAddr = format!("127.0.0.1:{}", free_port()).parse()?;
        let broker: SocketAddr = format!("127.0.0.1:{}", free_port()).parse()?;
        let mut node = Self {
            child: None,
            data_dir: data_dir.to_path_buf(),
            namesrv,
            broker,
            metrics: SocketAddr::from(([127, 0, 0, 1], free_port())),
            log: data_dir.join("stratus.log"),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
            envs: Vec::new(),
            wait_for_broker: true,
        };
        node.spawn()?;
        Ok(node)
    }

    fn spawn(&mut self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.data_dir)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(stratus_bin())
            .arg("serve")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--namesrv-addr")
            .arg(self.namesrv.to_string())
            .arg("--broker-addr")
            .arg(self.broker.to_string())
            .env("STRATUS_METRICS__ADDR", self.metrics.to_string())
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

/// The object store a multi-node test shares: a local directory under `dir`.
pub fn cluster_object_store_url(dir: &Path) -> String {
    format!("file://{}", dir.join("objects").display())
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
