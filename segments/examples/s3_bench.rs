//! Storage figures on a real S3 server (MinIO in `tests/servers/minio.sh`):
//!
//! * the server's raw PUT ceiling: 8 concurrent 8 MiB PUTs straight through `object_store`;
//! * PUTs per second and bytes per PUT through the [`Writer`] (group commit) at the same
//!   ingest rate spread over 1, 100 and 10,000 queues, with acknowledgement latency;
//! * a tailing consumer (reading right behind the writer) and the GETs it causes;
//! * cold-read MB/s through a fresh [`Reader`] (empty caches: ranged GETs from the server)
//!   and cache-hit MB/s (the same reads again).
//!
//! ```sh
//! eval "$(tests/servers/minio.sh start /tmp/minio)"   # prints STRATUS_TEST_S3=…
//! STRATUS_TEST_S3=… cargo run --release -p stratus-segments --example s3_bench
//! tests/servers/minio.sh stop /tmp/minio
//! ```
//!
//! `STRATUS_TEST_S3=endpoint,bucket,access_key,secret_key` names the server (required);
//! `STRATUS_BENCH_RATE` (messages/s, default 4000), `STRATUS_BENCH_SECS` (per run, default
//! 10), `STRATUS_BENCH_SIZE` (body bytes, default 1024) and `STRATUS_BENCH_QUEUES` (queue
//! counts of the write runs, default `1,100,10000`) shape the load. Objects go under
//! `stratus-bench/<random>/` and are deleted at the end.

// A measuring tool: wall-clock pacing and timing, figures printed to stdout.
#![allow(clippy::disallowed_methods, clippy::print_stdout, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload};
use stratus_compat::types::{QueueId, QueueOffset, Topic, java_string_hash};
use stratus_meta::{MetaStore, NodeId, QueueKey, ShardId};
use stratus_segments::cache::{Cache, CacheConfig};
use stratus_segments::clock::{Clock, SystemClock};
use stratus_segments::heads::QueueHeads;
use stratus_segments::metrics;
use stratus_segments::reader::Reader;
use stratus_segments::store::{SegmentStore, StoreConfig};
use stratus_segments::writer::{MessageToStore, Writer, WriterConfig};
use tokio_util::sync::CancellationToken;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Clone)]
struct Load {
    rate: u64,
    secs: u64,
    size: usize,
}

fn env_u64(name: &str, default: u64) -> Result<u64, BoxError> {
    match std::env::var(name) {
        Ok(v) => Ok(v.parse().map_err(|e| format!("{name}={v:?}: {e}"))?),
        Err(_) => Ok(default),
    }
}

/// `STRATUS_BENCH_QUEUES`: the queue counts of the write runs, in order (default 1,100,10000).
fn queue_counts() -> Result<Vec<u64>, BoxError> {
    let spec = std::env::var("STRATUS_BENCH_QUEUES").unwrap_or_else(|_| "1,100,10000".into());
    spec.split(',')
        .map(|q| match q.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("STRATUS_BENCH_QUEUES: {q:?} is not a positive count").into()),
        })
        .collect()
}

fn s3_store() -> Result<(Arc<dyn ObjectStore>, String), BoxError> {
    let spec = std::env::var("STRATUS_TEST_S3")
        .map_err(|_| "set STRATUS_TEST_S3=endpoint,bucket,access_key,secret_key")?;
    let parts: Vec<&str> = spec.split(',').map(str::trim).collect();
    let [endpoint, bucket, key, secret] = parts.as_slice() else {
        return Err("STRATUS_TEST_S3 must be endpoint,bucket,access_key,secret_key".into());
    };
    let store = AmazonS3Builder::new()
        .with_endpoint(*endpoint)
        .with_bucket_name(*bucket)
        .with_access_key_id(*key)
        .with_secret_access_key(*secret)
        .with_region("us-east-1")
        .with_virtual_hosted_style_request(false)
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .with_client_options(ClientOptions::new().with_allow_http(endpoint.starts_with("http://")))
        .build()?;
    Ok((Arc::new(store), (*endpoint).to_owned()))
}

fn counter(op: &str, result: &str) -> u64 {
    metrics::OBJECT_STORE_REQUESTS
        .with_label_values(&[op, result])
        .get()
}

/// GET-like requests so far (whole, ranged, HEAD), any result.
fn gets() -> u64 {
    ["get", "get_range", "head"]
        .iter()
        .flat_map(|op| ["ok", "error"].map(|r| counter(op, r)))
        .sum()
}

fn put_bytes() -> u64 {
    metrics::OBJECT_STORE_BYTES
        .with_label_values(&["put"])
        .get()
}

fn mb(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

/// The server's own ceiling: `rounds` × 8 concurrent 8 MiB PUTs.
async fn raw_put_ceiling(store: &Arc<dyn ObjectStore>, prefix: &str) -> Result<f64, BoxError> {
    let body = Bytes::from(vec![0x5a_u8; 8 << 20]);
    let rounds = 4;
    let started = Instant::now();
    for round in 0..rounds {
        let puts = (0..8).map(|i| {
            let store = store.clone();
            let path = Path::from(format!("{prefix}/raw/{round}-{i}"));
            let payload = PutPayload::from(body.clone());
            tokio::spawn(async move { store.put(&path, payload).await })
        });
        for p in futures::future::join_all(puts).await {
            p??;
        }
    }
    Ok(mb(rounds * 8 * (8 << 20), started.elapsed()))
}

fn message(q: u64, queues: u64, body: &Bytes) -> MessageToStore {
    let topic = format!("bench-{}", q / 100);
    let host: SocketAddr = "127.0.0.1:10911".parse().expect("literal address");
    MessageToStore {
        topic: Topic::new(topic),
        queue_id: QueueId(i32::try_from(q % 100.min(queues)).unwrap_or(0)),
        flag: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: host,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: body.clone(),
        properties: "TAGS\u{1}TagA\u{2}".into(),
        tags_code: java_string_hash("TagA"),
    }
}

fn queue_keys(queues: u64) -> Vec<QueueKey> {
    (0..queues)
        .map(|q| QueueKey {
            shard: ShardId(0),
            topic: Topic::new(format!("bench-{}", q / 100)),
            queue_id: QueueId(i32::try_from(q % 100.min(queues)).unwrap_or(0)),
        })
        .collect()
}

#[derive(Debug)]
struct WriteRun {
    queues: u64,
    sent: u64,
    busy: u64,
    puts: u64,
    put_bytes: u64,
    secs: f64,
    ack_p50_ms: f64,
    ack_p99_ms: f64,
    tail_read: u64,
    tail_gets: Option<u64>,
}

struct Storage {
    store: SegmentStore,
    meta: Arc<dyn MetaStore>,
}

/// Writes `load` spread over `queues` queues through a fresh writer; with `tail`, a
/// consumer reads every queue right behind it.
async fn write_run(
    st: &Storage,
    prefix: &str,
    queues: u64,
    load: &Load,
    tail: bool,
) -> Result<WriteRun, BoxError> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let heads = Arc::new(QueueHeads::default());
    let cache = Arc::new(Cache::new(CacheConfig::default()));
    let node = NodeId(format!("bench-{queues}"));
    let cancel = CancellationToken::new();
    let writer = Writer::start(
        WriterConfig {
            key_prefix: prefix.to_owned(),
            ..WriterConfig::default()
        },
        st.store.clone(),
        st.meta.clone(),
        clock.clone(),
        heads.clone(),
        cache.clone(),
        node.clone(),
        cancel.clone(),
    );
    let lease = st
        .meta
        .acquire_shard(ShardId(0), &node, clock.now_ms(), 3_600_000)
        .await?
        .ok_or("shard 0 is held")?;
    let state = st.meta.shard_state(ShardId(0)).await?;
    let start_offsets: Vec<QueueOffset> = queue_keys(queues)
        .iter()
        .map(|k| {
            state
                .queues
                .iter()
                .find(|r| r.queue == *k)
                .map_or(QueueOffset(0), |r| r.max_offset)
        })
        .collect();
    writer.open_shard(ShardId(0), lease.epoch, state);

    let stop_tail = CancellationToken::new();
    let tail_read = Arc::new(AtomicU64::new(0));
    let tail_task = tail.then(|| {
        let reader = Reader::new(
            st.store.clone(),
            st.meta.clone(),
            cache.clone(),
            heads.clone(),
        );
        let keys = queue_keys(queues);
        let mut next = start_offsets.clone();
        let stop = stop_tail.clone();
        let read = tail_read.clone();
        tokio::spawn(async move {
            loop {
                let mut progressed = false;
                for (k, from) in keys.iter().zip(next.iter_mut()) {
                    if heads.max_offset(k) <= *from {
                        continue;
                    }
                    let b = reader.read(k, *from, 32, usize::MAX, &|_| true).await?;
                    read.fetch_add(b.messages.len() as u64, Ordering::Relaxed);
                    *from = b.next_offset;
                    progressed = true;
                }
                if !progressed {
                    if stop.is_cancelled() {
                        return Ok::<_, stratus_segments::SegmentError>(());
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        })
    });

    let (acks_tx, mut acks_rx) = tokio::sync::mpsc::channel(1 << 16);
    let waiter = tokio::spawn(async move {
        let mut lat = Vec::new();
        while let Some((ticket, at)) = acks_rx.recv().await {
            let ticket: stratus_segments::writer::AppendTicket = ticket;
            let at: Instant = at;
            if ticket.durable().await.is_ok() {
                lat.push(at.elapsed().as_secs_f64() * 1e3);
            }
        }
        lat
    });

    let body = Bytes::from(vec![b'm'; load.size]);
    let total = load.rate * load.secs;
    let gets_before = gets();
    let puts_before = counter("put", "ok") + counter("complete_multipart", "ok");
    let bytes_before = put_bytes();
    let started = Instant::now();
    let mut sent = 0u64;
    let mut busy = 0u64;
    while sent < total {
        let due = ((started.elapsed().as_secs_f64() * load.rate as f64) as u64).min(total);
        while sent < due {
            match writer.append(ShardId(0), vec![message(sent % queues, queues, &body)]) {
                Ok(t) => acks_tx.send((t, Instant::now())).await?,
                Err(_) => busy += 1,
            }
            sent += 1;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    drop(acks_tx);
    let mut lat = waiter.await?;
    let secs = started.elapsed().as_secs_f64();
    stop_tail.cancel();
    if let Some(t) = tail_task {
        t.await??;
    }
    let tail_gets = tail.then(|| gets() - gets_before);
    let puts = counter("put", "ok") + counter("complete_multipart", "ok") - puts_before;
    let put_bytes = put_bytes() - bytes_before;
    cancel.cancel();
    writer.shutdown().await?;
    st.meta
        .release_shard(ShardId(0), &node, lease.epoch)
        .await?;
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    };
    Ok(WriteRun {
        queues,
        sent: sent - busy,
        busy,
        puts,
        put_bytes,
        secs,
        ack_p50_ms: pct(0.50),
        ack_p99_ms: pct(0.99),
        tail_read: tail_read.load(Ordering::Relaxed),
        tail_gets,
    })
}

/// Reads every queue from 0 to its end; returns (record bytes, seconds).
async fn read_all(reader: &Reader, keys: &[QueueKey]) -> Result<(u64, f64), BoxError> {
    let started = Instant::now();
    let mut bytes = 0u64;
    for k in keys {
        let mut from = QueueOffset(0);
        loop {
            let b = reader.read(k, from, 32, usize::MAX, &|_| true).await?;
            if b.messages.is_empty() {
                break;
            }
            bytes += b.messages.iter().map(|m| m.len() as u64).sum::<u64>();
            from = b.next_offset;
        }
    }
    Ok((bytes, started.elapsed().as_secs_f64()))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let load = Load {
        rate: env_u64("STRATUS_BENCH_RATE", 4000)?,
        secs: env_u64("STRATUS_BENCH_SECS", 10)?,
        size: usize::try_from(env_u64("STRATUS_BENCH_SIZE", 1024)?)?,
    };
    let (raw, endpoint) = s3_store()?;
    let prefix = format!("stratus-bench/{:016x}", rand::random::<u64>());
    println!("server {endpoint}, objects under {prefix}/, load {load:?}");

    let ceiling = raw_put_ceiling(&raw, &prefix).await?;
    println!("raw PUT ceiling (8 concurrent 8 MiB PUTs): {ceiling:.1} MB/s");

    let meta_dir = tempfile::tempdir()?;
    let meta = stratus_meta::open(&format!(
        "embedded://{}",
        meta_dir.path().join("meta.db").display()
    ))
    .await?;
    meta.ensure_shards(1).await?;
    let st = Storage {
        store: SegmentStore::new(raw.clone(), StoreConfig::default()),
        meta,
    };
    println!(
        "\n| queues | msgs/s sent | PUTs/s | bytes/PUT | ack p50 | ack p99 | tailing consumer |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut runs = Vec::new();
    for queues in queue_counts()? {
        let r = write_run(
            &st,
            &format!("{prefix}/w{queues}"),
            queues,
            &load,
            queues <= 100,
        )
        .await?;
        let tail = match r.tail_gets {
            Some(g) => format!("{} msgs read, {g} GETs", r.tail_read),
            None => "-".into(),
        };
        println!(
            "| {} | {:.0} | {:.1} | {:.0} | {:.1} ms | {:.1} ms | {tail} |",
            r.queues,
            r.sent as f64 / r.secs,
            r.puts as f64 / r.secs,
            r.put_bytes as f64 / r.puts.max(1) as f64,
            r.ack_p50_ms,
            r.ack_p99_ms,
        );
        if r.busy > 0 {
            println!("  ({} appends refused as busy)", r.busy);
        }
        runs.push(r);
    }

    // Reads of the 100-queue run through a fresh reader: empty caches, heads from meta.
    let heads = Arc::new(QueueHeads::default());
    heads.load(&st.meta.shard_state(ShardId(0)).await?);
    let cache = Arc::new(Cache::new(CacheConfig {
        block_bytes: 1 << 30,
        ..CacheConfig::default()
    }));
    let reader = Reader::new(st.store.clone(), st.meta.clone(), cache, heads);
    let keys = queue_keys(100);
    let g0 = gets();
    let (cold_bytes, cold_secs) = read_all(&reader, &keys).await?;
    let cold_gets = gets() - g0;
    let g1 = gets();
    let (hot_bytes, hot_secs) = read_all(&reader, &keys).await?;
    let hot_gets = gets() - g1;
    println!(
        "\ncold read (100 queues, empty caches): {:.1} MB/s ({cold_bytes} B, {cold_gets} GETs)",
        cold_bytes as f64 / 1e6 / cold_secs
    );
    println!(
        "cache-hit read (same reads again): {:.1} MB/s ({hot_bytes} B, {hot_gets} GETs)",
        hot_bytes as f64 / 1e6 / hot_secs
    );

    // Clean up everything under the bench prefix.
    let listed: Vec<_> = raw
        .list(Some(&Path::from(prefix.as_str())))
        .map_ok(|m| m.location)
        .try_collect()
        .await?;
    for p in &listed {
        raw.delete(p).await?;
    }
    println!("deleted {} objects", listed.len());
    Ok(())
}
