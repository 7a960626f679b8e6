//! Bounded under abuse (issue 16): a running `stratus` process under a pipelined flood of
//! route lookups (clients that read their answers and clients that never do), hoarded
//! idle connections, and a bad frame behind a parked pull. Bounds are asserted from the
//! process's own accounting (VmRSS, its metrics) and from what a well-behaved client gets;
//! latencies are printed, and asserted only with a generous margin.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic; real timers are fine

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::pull::PullMessageResponseHeader;
use stratus_compat::request::route::GetRouteInfoRequestHeader;
use stratus_compat::request::send::SendMessageResponseHeader;
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::{Node, pull_queue0, scrape_metrics, send_to_queue0};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const T: Duration = Duration::from_secs(10);
const MIB: u64 = 1024 * 1024;

fn route_cmd(topic: &str) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::GetRouteinfoByTopic.to_i32(), 0);
    GetRouteInfoRequestHeader {
        topic: topic.into(),
        accept_standard_json_only: None,
    }
    .write_to(&mut cmd);
    cmd
}

/// One send and one pull of what it stored, each timed; panics unless both succeed.
async fn send_and_pull(c: &RemotingClient, topic: &str, key: &str) -> (Duration, Duration) {
    let t0 = Instant::now();
    let r = c
        .invoke(
            send_to_queue0(topic, "broker-0", key, &b"well-behaved"[..]),
            T,
        )
        .await
        .expect("send");
    let send = t0.elapsed();
    assert_eq!(
        r.code,
        ResponseCode::Success.to_i32(),
        "send: {:?}",
        r.remark
    );
    let offset = SendMessageResponseHeader::from_command(&r)
        .expect("send header")
        .queue_offset;
    let t1 = Instant::now();
    let r = c
        .invoke(pull_queue0("cg", topic, "broker-0", offset, 0), T)
        .await
        .expect("pull");
    let pull = t1.elapsed();
    assert_eq!(
        r.code,
        ResponseCode::Success.to_i32(),
        "pull: {:?}",
        r.remark
    );
    let h = PullMessageResponseHeader::from_command(&r).expect("pull header");
    assert_eq!(h.next_begin_offset, offset + 1);
    (send, pull)
}

fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get((v.len() * 99).div_ceil(100).saturating_sub(1))
        .copied()
        .unwrap_or_default()
}

/// 64 KiB-ish of back-to-back GET_ROUTEINFO_BY_TOPIC frames.
fn flood_bytes(topic: &str) -> Bytes {
    let mut one = BytesMut::new();
    route_cmd(topic).encode(&mut one);
    let mut all = BytesMut::new();
    while all.len() < 64 * 1024 {
        all.extend_from_slice(&one);
    }
    all.freeze()
}

/// `conns` connections writing route lookups as fast as TCP takes them for `run`; each
/// reads and discards its answers when `read` (else never reads). Returns frames written.
async fn flood(addr: SocketAddr, conns: usize, read: bool, run: Duration, bytes: Bytes) -> u64 {
    let frame_len = {
        let mut one = BytesMut::new();
        route_cmd("Abuse").encode(&mut one);
        one.len()
    };
    let deadline = tokio::time::Instant::now() + run;
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let bytes = bytes.clone();
        tasks.push(tokio::spawn(async move {
            let s = TcpStream::connect(addr).await.unwrap();
            let (mut r, mut w) = s.into_split();
            let reader = read.then(|| {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while matches!(r.read(&mut buf).await, Ok(n) if n > 0) {}
                })
            });
            let mut written = 0u64;
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => break,
                    res = w.write_all(&bytes) => {
                        if res.is_err() { break; }
                        written += bytes.len() as u64;
                    }
                }
            }
            drop(w);
            if let Some(h) = reader {
                h.abort();
            }
            written
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total / frame_len as u64
}

/// RSS of `node` sampled every 100 ms while `work` runs; returns (work's output, max RSS).
async fn with_rss_peak<F: Future>(node: &Node, work: F) -> (F::Output, u64) {
    let pid_rss = {
        let pid = node.pid().unwrap();
        move || -> u64 {
            let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
                * 1024
        }
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            // Bounded: 600 samples (60 s) at most.
            for _ in 0..600 {
                peak = peak.max(pid_rss());
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        })
    };
    let out = work.await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    (out, sampler.await.unwrap())
}

/// Sends and pulls one at a time until `run` ends (at most 2,000 rounds); their latencies.
async fn well_behaved(c: &RemotingClient, topic: &str, run: Duration) -> Vec<Duration> {
    let end = Instant::now() + run;
    let mut lat = Vec::new();
    for i in 0..2_000 {
        if Instant::now() > end {
            break;
        }
        let (s, p) = send_and_pull(c, topic, &format!("k{i}")).await;
        lat.push(s);
        lat.push(p);
    }
    lat
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipelined_flood_is_held_back_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let good = RemotingClient::connect(node.broker).await.unwrap();
    // Warm up: the topic exists and the first send has paid for its creation.
    for i in 0..20 {
        send_and_pull(&good, "Abuse", &format!("warm{i}")).await;
    }
    let r = good.invoke(route_cmd("Abuse"), T).await.unwrap();
    assert_eq!(r.code, 0);
    let base = node.rss_bytes().unwrap();
    let bytes = flood_bytes("Abuse");
    let run = Duration::from_secs(4);
    let conns = 64;

    for read in [true, false] {
        let ((frames, lat), peak) = with_rss_peak(&node, async {
            tokio::join!(
                flood(node.namesrv, conns, read, run, bytes.clone()),
                well_behaved(&good, "Abuse", run)
            )
        })
        .await;
        let n = lat.len();
        let p = p99(lat);
        let growth = peak.saturating_sub(base);
        let metrics = scrape_metrics(node.metrics).unwrap();
        let answered = metrics
            .lines()
            .find(|l| {
                l.starts_with("stratus_gateway_requests_total{")
                    && l.contains("GET_ROUTEINFO_BY_TOPIC")
                    && l.contains("\"SUCCESS\"")
            })
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or("0")
            .to_owned();
        println!(
            "flood ({conns} connections, {}): {frames} frames taken by the kernel, {answered} route lookups answered so far; \
             well-behaved client: {n} requests, p99 {p:?}; node RSS {} MiB -> peak {} MiB (+{} MiB)",
            if read {
                "reading answers"
            } else {
                "never reading"
            },
            base / MIB,
            peak / MIB,
            growth / MIB,
        );
        assert!(
            n >= 10,
            "the well-behaved client got only {n} requests through"
        );
        assert!(
            growth < 200 * MIB,
            "node RSS grew by {} MiB under the flood",
            growth / MIB
        );
        assert!(
            p < Duration::from_secs(1),
            "well-behaved p99 {p:?} under the flood"
        );
    }
    // The flooders are gone; the node still answers at once.
    let t0 = Instant::now();
    send_and_pull(&good, "Abuse", "after").await;
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hoarded_idle_connections_do_not_lock_out_a_new_client() {
    let dir = tempfile::tempdir().unwrap();
    let max = 1000;
    let hoard = 2000;
    let node = Node::start_with_env(
        dir.path(),
        &[],
        &[
            ("STRATUS_LIMITS__MAX_CONNECTIONS", "1000"),
            // Every test connection comes from 127.0.0.1: the node limit is under test here.
            ("STRATUS_LIMITS__MAX_CONNECTIONS_PER_IP", "100000"),
        ],
    )
    .unwrap();
    // The hoarder: idle connections, each admitted one evicting the longest idle when full.
    let mut held = Vec::with_capacity(hoard);
    for _ in 0..hoard {
        held.push(TcpStream::connect(node.broker).await.unwrap());
    }
    // Let the node settle (evicted connections close), bounded.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut open = i64::MAX;
    while Instant::now() < deadline {
        let m = scrape_metrics(node.metrics).unwrap();
        open = gauge(&m, "stratus_gateway_connections");
        if open <= max {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(open <= max, "{open} connections open, limit {max}");

    // A new client is served: route, send, pull.
    let t0 = Instant::now();
    let ns = RemotingClient::connect(node.namesrv).await.unwrap();
    // A producer's first lookup of a new topic falls back to the default topic's route.
    let r = ns.invoke(route_cmd("TBW102"), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::Success.to_i32());
    let b = RemotingClient::connect(node.broker).await.unwrap();
    send_and_pull(&b, "Hoard", "new").await;
    let served = t0.elapsed();
    let m = scrape_metrics(node.metrics).unwrap();
    let evicted = counter(&m, "stratus_gateway_connections_evicted_total");
    let refused: i64 = m
        .lines()
        .filter(|l| l.starts_with("stratus_gateway_connections_refused_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<i64>().ok())
        .sum();
    println!(
        "{hoard} idle connections against max_connections = {max}: {evicted} evicted, {refused} refused, \
         {open} open; a new client was served (route + send + pull) in {served:?}"
    );
    // Every connection past the limit evicted an idle one or, while a tenth of the limit
    // was already being evicted, was itself refused at once: none waited for a slot.
    assert!(evicted >= 1, "no eviction");
    assert!(
        evicted + refused >= i64::try_from(hoard).unwrap() - max,
        "{evicted} evicted + {refused} refused for {hoard} connections over {max}"
    );
    assert!(
        served < Duration::from_secs(5),
        "the new client waited {served:?}"
    );
    drop(held);
}

fn gauge(metrics: &str, name: &str) -> i64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

fn counter(metrics: &str, name: &str) -> i64 {
    gauge(metrics, name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_frame_closes_the_connection_at_once_despite_a_parked_pull() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let c = Arc::new(RemotingClient::connect(node.broker).await.unwrap());
    let r = c
        .invoke(
            send_to_queue0("BadFrame", "broker-0", "one", &b"well-behaved"[..]),
            T,
        )
        .await
        .unwrap();
    let next = SendMessageResponseHeader::from_command(&r)
        .unwrap()
        .queue_offset
        + 1;
    // A pull past the end, suspended for 20 s.
    let pulling = {
        let c = c.clone();
        tokio::spawn(async move {
            c.invoke(
                pull_queue0("cg", "BadFrame", "broker-0", next, 20_000),
                Duration::from_secs(30),
            )
            .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let m = scrape_metrics(node.metrics).unwrap();
        if gauge(&m, "stratus_gateway_parked_pulls") >= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the pull never parked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A frame with a negative length.
    let t0 = Instant::now();
    c.send_raw(Bytes::from_static(&[0xFF, 0xFF, 0xFF, 0xF0, 0, 0, 0, 0]))
        .await
        .unwrap();
    let res = tokio::time::timeout(Duration::from_secs(5), pulling)
        .await
        .expect("the connection stayed open")
        .unwrap();
    let closed_after = t0.elapsed();
    println!("bad frame with a pull parked for 20 s: connection closed after {closed_after:?}");
    assert!(res.is_err(), "the parked pull was answered: {res:?}");
    assert!(c.is_closed());
    assert!(
        closed_after < Duration::from_secs(1),
        "closed only after {closed_after:?}"
    );
    // The node still serves others.
    let other = RemotingClient::connect(node.broker).await.unwrap();
    send_and_pull(&other, "BadFrame", "two").await;
}
