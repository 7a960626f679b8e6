//! `stratus bench produce|consume|e2e`: a load tool speaking the remoting protocol to any
//! name server (Stratus or Apache RocketMQ). It resolves the topic's route (creating the
//! topic on every master broker with UPDATE_AND_CREATE_TOPIC unless told not to), drives
//! the brokers of the route directly, prints a progress line on stderr every second and a
//! report at the end (text, or one JSON object with `--json`).
//!
//! * `produce`: N connections send sync, pipelined (async) or one-way, single messages or
//!   SEND_BATCH_MESSAGE batches, optionally at a target rate, for a count or a duration.
//! * `consume`: drains the backlog of every queue of the route (offset 0 up to the end
//!   offset at start) with long-polling pulls.
//! * `e2e`: pullers follow every queue from its current end while producers send; each body
//!   carries its send time (run id + nanoseconds, first 16 bytes), so the report has
//!   end-to-end latency percentiles.
//!
//! * `query-by-key`: fills a topic with keyed messages (`--key-share` per key), then looks
//!   keys (or unique keys) up with QUERY_MESSAGE on every broker of the route, as mqadmin
//!   does: lookup latency percentiles and, with `--metrics`, object-store requests per
//!   lookup from the node's counters.
//!
//! The exit status is non-zero when a request failed (the report is printed first).

mod args;
mod consume;
mod histogram;
mod produce;
mod query;
mod report;
mod route;
mod stats;
mod time;

use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;

pub use args::{
    BenchArgs, BenchCommand, CommonArgs, ConsumeArgs, E2eArgs, ProduceArgs, PullArgs, QueryArgs,
    SendArgs, SendMode, TopicArgs,
};
use consume::{PullRun, Pullers, QueueSpan};
use report::{ConsumeReport, ProduceReport, Report};
use stats::{Live, Progress};
use time::Epoch;

/// Runs the benchmark.
///
/// # Errors
/// Connection or protocol failures before the run, or failed requests during it.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let (common, report) = match args.command {
        BenchCommand::QueryByKey(a) => {
            let common = a.common.clone();
            let report = query::run(a).await?;
            print_text_or_json(&common, &report.to_text(), &report.to_json())?;
            let failed = report.error_total();
            if failed > 0 {
                bail!("{failed} lookups or fill requests failed");
            }
            return Ok(());
        }
        BenchCommand::Produce(a) => (a.common.clone(), produce_cmd(a).await?),
        BenchCommand::Consume(a) => (a.common.clone(), consume_cmd(a).await?),
        BenchCommand::E2e(a) => (a.common.clone(), e2e_cmd(a).await?),
    };
    print(&common, &report)?;
    let failed = report.error_total();
    if failed > 0 {
        bail!("{failed} requests failed");
    }
    Ok(())
}

fn print(common: &CommonArgs, report: &Report) -> anyhow::Result<()> {
    print_text_or_json(common, &report.to_text(), &report.to_json())
}

#[allow(clippy::print_stdout)] // the report is the command's output
fn print_text_or_json(common: &CommonArgs, text: &str, json: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if common.json {
        writeln!(out, "{json}")?;
    } else {
        write!(out, "{text}")?;
    }
    out.flush()?;
    Ok(())
}

async fn produce_cmd(a: ProduceArgs) -> anyhow::Result<Report> {
    let c = &a.common;
    let route = route::resolve(&c.namesrv, &c.topic, !a.topic.no_create, a.topic.queues).await?;
    let live = Arc::new(Live::default());
    let progress = Progress::start(live.clone(), "produce", c.quiet);
    let out = produce::run(&a.send, &c.topic, c.timeout, &route, Epoch::new(), live).await;
    progress.finish();
    let out = out?;
    Ok(Report::new("produce", &c.namesrv, &c.topic, &route)
        .with_produce(ProduceReport::new(&a.send, out)))
}

async fn consume_cmd(a: ConsumeArgs) -> anyhow::Result<Report> {
    let c = &a.common;
    let route = route::resolve(&c.namesrv, &c.topic, false, 0).await?;
    let ends = consume::end_offsets(&route, &c.topic).await?;
    let expected: i64 = ends.iter().map(|(_, _, e)| (*e).max(0)).sum();
    let spans = ends
        .into_iter()
        .map(|(broker, queue_id, end)| QueueSpan {
            broker,
            queue_id,
            start: 0,
            end: Some(end),
        })
        .collect();
    let live = Arc::new(Live::default());
    let run = PullRun {
        pull: a.pull.clone(),
        topic: c.topic.clone(),
        timeout: c.timeout,
        connections: a.connections,
        limit: a.count,
        deadline: a.duration.map(|d| Instant::now() + d),
    };
    let progress = Progress::start(live.clone(), "consume", c.quiet);
    let pullers = Pullers::start(run, &route, spans, Epoch::new(), live).await;
    let out = match pullers {
        Ok(p) => p.finish().await,
        Err(e) => {
            progress.finish();
            return Err(e);
        }
    };
    progress.finish();
    let expected = u64::try_from(expected).ok();
    Ok(
        Report::new("consume", &c.namesrv, &c.topic, &route).with_consume(ConsumeReport::new(
            a.connections,
            expected,
            &out,
        )),
    )
}

async fn e2e_cmd(a: E2eArgs) -> anyhow::Result<Report> {
    let c = &a.common;
    let route = route::resolve(&c.namesrv, &c.topic, !a.topic.no_create, a.topic.queues).await?;
    let ends = consume::end_offsets(&route, &c.topic).await?;
    let spans = ends
        .into_iter()
        .map(|(broker, queue_id, end)| QueueSpan {
            broker,
            queue_id,
            start: end,
            end: None,
        })
        .collect();
    let epoch = Epoch::new();
    let live = Arc::new(Live::default());
    let run = PullRun {
        pull: a.pull.clone(),
        topic: c.topic.clone(),
        timeout: c.timeout,
        connections: a.pullers,
        limit: None,
        deadline: None,
    };
    let pullers = Pullers::start(run, &route, spans, epoch, live.clone()).await?;
    let progress = Progress::start(live.clone(), "e2e", c.quiet);
    let produced = produce::run(&a.send, &c.topic, c.timeout, &route, epoch, live.clone()).await;
    // Let the pullers receive what was acknowledged (more may arrive: a failed send may
    // still have been stored), then stop them.
    let target = produced.as_ref().map_or(0, |p| p.acked);
    let deadline = Instant::now() + a.drain_timeout;
    while Live::get(&live.consumed) < target && Instant::now() < deadline {
        time::sleep(std::time::Duration::from_millis(20)).await;
    }
    pullers.cancel();
    let pulled = pullers.finish().await;
    progress.finish();
    let produced = produced?;
    let e2e = pulled.e2e.summary_ms();
    Ok(Report::new("e2e", &c.namesrv, &c.topic, &route)
        .with_produce(ProduceReport::new(&a.send, produced))
        .with_consume(ConsumeReport::new(a.pullers, None, &pulled))
        .with_e2e(e2e))
}
