//! `stratus bench`: a load tool speaking the remoting protocol to any name server (Stratus
//! or Apache RocketMQ). It looks up the topic's route, sends from N connections, then pulls
//! everything back, and prints throughput and latency percentiles.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::request::route::{GetRouteInfoRequestHeader, TopicRouteData};
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::{RequestCode, ResponseCode};

/// Options of `stratus bench`.
#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// Name-server address.
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub namesrv: SocketAddr,
    /// Topic (created by the server's auto-create if missing).
    #[arg(long, default_value = "BenchTopic")]
    pub topic: String,
    /// Producer connections.
    #[arg(long, default_value_t = 8)]
    pub connections: usize,
    /// Messages to send in total.
    #[arg(long, default_value_t = 20_000)]
    pub count: u64,
    /// Body size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Requests in flight per connection.
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// Tag on every message.
    #[arg(long, default_value = "bench")]
    pub tag: String,
    /// Skip the consume phase.
    #[arg(long)]
    pub no_consume: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

struct Route {
    broker: SocketAddr,
    broker_name: String,
    queues: i32,
}

async fn route(args: &BenchArgs) -> anyhow::Result<Route> {
    let client = RemotingClient::connect(args.namesrv)
        .await
        .context("connect name server")?;
    let mut cmd = RemotingCommand::request(RequestCode::GetRouteinfoByTopic.to_i32(), 0);
    GetRouteInfoRequestHeader {
        topic: args.topic.clone(),
        accept_standard_json_only: Some(true),
    }
    .write_to(&mut cmd);
    let resp = client.invoke(cmd, Duration::from_secs(5)).await?;
    if resp.code != ResponseCode::Success.to_i32() {
        bail!("route lookup failed: code {} {:?}", resp.code, resp.remark);
    }
    let data: TopicRouteData = serde_json::from_slice(&resp.body)?;
    let q = data.queue_datas.first().context("route has no queues")?;
    let b = data
        .broker_datas
        .iter()
        .find(|b| b.broker_name == q.broker_name)
        .context("route has no broker")?;
    let addr = b.broker_addrs.get("0").context("no master address")?;
    Ok(Route {
        broker: addr.parse()?,
        broker_name: q.broker_name.clone(),
        queues: q.write_queue_nums.max(1),
    })
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// Runs the benchmark.
///
/// # Errors
/// Connection or protocol failures.
#[allow(clippy::print_stdout)]
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let route = Arc::new(route(&args).await?);
    let body = Bytes::from(vec![b'x'; args.size]);
    let per_conn = args.count / args.connections.max(1) as u64;
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..args.connections.max(1) {
        let route = route.clone();
        let args = args.clone();
        let body = body.clone();
        tasks.spawn(async move {
            let client = Arc::new(RemotingClient::connect(route.broker).await?);
            let mut lat = Vec::with_capacity(per_conn as usize);
            let mut errors = 0u64;
            let mut inflight = tokio::task::JoinSet::new();
            for i in 0..per_conn {
                let mut props = Properties::default();
                props.insert(keys::TAGS, &args.tag);
                props.insert(keys::WAIT, "true");
                let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
                SendMessageRequestHeader {
                    producer_group: "bench_producer".into(),
                    topic: args.topic.clone(),
                    default_topic: "TBW102".into(),
                    default_topic_queue_nums: 4,
                    queue_id: i32::try_from((c as u64 + i) % route.queues as u64).unwrap_or(0),
                    born_timestamp: 0,
                    properties: Some(props.encode()),
                    broker_name: Some(route.broker_name.clone()),
                    ..Default::default()
                }
                .write_v2(&mut cmd);
                cmd.body = body.clone();
                let client = client.clone();
                inflight.spawn(async move {
                    let t = Instant::now();
                    let r = client.invoke(cmd, Duration::from_secs(10)).await;
                    (t.elapsed(), r.map(|r| r.code == 0).unwrap_or(false))
                });
                if inflight.len() >= args.pipeline.max(1)
                    && let Some(Ok((d, ok))) = inflight.join_next().await
                {
                    if ok { lat.push(d) } else { errors += 1 }
                }
            }
            while let Some(Ok((d, ok))) = inflight.join_next().await {
                if ok { lat.push(d) } else { errors += 1 }
            }
            anyhow::Ok((lat, errors))
        });
    }
    let mut lat = Vec::new();
    let mut errors = 0;
    while let Some(r) = tasks.join_next().await {
        let (l, e) = r??;
        lat.extend(l);
        errors += e;
    }
    let elapsed = start.elapsed().as_secs_f64();
    lat.sort();
    let sent = lat.len() as u64;
    let mb = sent as f64 * args.size as f64 / 1_048_576.0;
    let consumed = if args.no_consume {
        None
    } else {
        Some(consume(&args, &route).await?)
    };
    if args.json {
        let v = serde_json::json!({
            "sent": sent, "errors": errors, "seconds": elapsed,
            "msgs_per_sec": sent as f64 / elapsed, "mb_per_sec": mb / elapsed,
            "p50_ms": percentile(&lat, 0.50), "p99_ms": percentile(&lat, 0.99), "p999_ms": percentile(&lat, 0.999),
            "consumed": consumed.map(|c| c.0), "consume_msgs_per_sec": consumed.map(|c| c.0 as f64 / c.1),
        });
        println!("{v}");
    } else {
        println!(
            "produce: {sent} msgs, {errors} errors in {elapsed:.2}s: {:.0} msgs/s, {:.2} MB/s; send latency p50 {:.2} ms, p99 {:.2} ms, p999 {:.2} ms",
            sent as f64 / elapsed,
            mb / elapsed,
            percentile(&lat, 0.50),
            percentile(&lat, 0.99),
            percentile(&lat, 0.999)
        );
        if let Some((n, secs)) = consumed {
            println!(
                "consume: {n} msgs in {secs:.2}s: {:.0} msgs/s",
                n as f64 / secs
            );
        }
    }
    if errors > 0 {
        bail!("{errors} sends failed");
    }
    Ok(())
}

/// Pulls every queue from offset 0 to its end; returns (messages, seconds).
async fn consume(args: &BenchArgs, route: &Route) -> anyhow::Result<(u64, f64)> {
    let client = RemotingClient::connect(route.broker).await?;
    let start = Instant::now();
    let mut total = 0u64;
    for q in 0..route.queues {
        let mut offset = 0i64;
        loop {
            let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 0);
            PullMessageRequestHeader {
                consumer_group: "bench_consumer".into(),
                topic: args.topic.clone(),
                queue_id: q,
                queue_offset: offset,
                max_msg_nums: 32,
                sys_flag: PULL_FLAG_SUBSCRIPTION,
                commit_offset: 0,
                suspend_timeout_millis: 0,
                subscription: Some("*".into()),
                sub_version: 0,
                expression_type: Some("TAG".into()),
                max_msg_bytes: None,
                broker_name: Some(route.broker_name.clone()),
            }
            .write_to(&mut cmd);
            let resp = client.invoke(cmd, Duration::from_secs(10)).await?;
            let h = PullMessageResponseHeader::from_command(&resp)?;
            if resp.code != ResponseCode::Success.to_i32() {
                break;
            }
            total += MessageExt::decode_all(resp.body.clone())?.len() as u64;
            offset = h.next_begin_offset;
        }
    }
    Ok((total, start.elapsed().as_secs_f64()))
}
