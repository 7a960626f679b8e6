//! Command line of `stratus bench produce|consume|e2e`.

use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

/// Options of `stratus bench`.
#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// Workload.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The three workloads.
#[derive(Debug, Subcommand, Clone)]
pub enum BenchCommand {
    /// Send messages from N connections and report throughput and send latency.
    Produce(ProduceArgs),
    /// Drain a topic's backlog (every queue of the route, from its first offset up to the
    /// end offset seen at start) with long-polling pulls and report throughput.
    Consume(ConsumeArgs),
    /// Producers and pullers together at a target rate: end-to-end latency percentiles.
    E2e(E2eArgs),
    /// Fill a topic with keyed messages, then look keys up with QUERY_MESSAGE (every broker
    /// of the route, as mqadmin does): lookup latency and object-store requests per lookup.
    QueryByKey(QueryArgs),
}

/// Options every workload takes.
#[derive(Debug, Args, Clone)]
pub struct CommonArgs {
    /// Name-server address (Stratus or Apache RocketMQ).
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub namesrv: String,
    /// Topic.
    #[arg(long, default_value = "BenchTopic")]
    pub topic: String,
    /// Print one JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress line on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Timeout of one request (a pull waits its long-poll time on top of this).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

/// How the topic is set up before sending.
#[derive(Debug, Args, Clone)]
pub struct TopicArgs {
    /// Queues per broker when creating the topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Use the topic's existing route instead of creating or updating it with
    /// UPDATE_AND_CREATE_TOPIC on every master broker of the name server's clusters.
    #[arg(long)]
    pub no_create: bool,
}

/// How requests are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SendMode {
    /// One request in flight per connection.
    Sync,
    /// Pipelined: `--inflight` requests in flight per connection.
    Async,
    /// One-way requests (no reply, no latency; "acked" counts written messages).
    Oneway,
}

impl SendMode {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Async => "async",
            Self::Oneway => "oneway",
        }
    }
}

/// Producer options.
#[derive(Debug, Args, Clone)]
pub struct SendArgs {
    /// Producer connections (spread over the route's brokers).
    #[arg(long, default_value_t = 8)]
    pub connections: usize,
    /// Body size in bytes (bodies of 16 bytes or more carry the send time).
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Messages per request; above 1 sends SEND_BATCH_MESSAGE (320).
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// sync, async (pipelined) or oneway.
    #[arg(long, value_enum, default_value_t = SendMode::Sync)]
    pub mode: SendMode,
    /// Requests in flight per connection in async mode.
    #[arg(long, default_value_t = 32)]
    pub inflight: usize,
    /// Tags, comma-separated; message i gets tag i mod n.
    #[arg(long, default_value = "bench")]
    pub tags: String,
    /// Target rate in messages per second over all connections (0 = unlimited).
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
    /// Stop sending after this long.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many messages (default 20000 when no --duration is given).
    #[arg(long)]
    pub count: Option<u64>,
    /// Producer group.
    #[arg(long, default_value = "bench_producer")]
    pub group: String,
    /// Give message i the key `K<run id>-<i / N>` (KEYS), so N messages share each key;
    /// 0: no KEYS (every message has a UNIQ_KEY either way).
    #[arg(long, default_value_t = 0)]
    pub key_share: u64,
}

/// Puller options.
#[derive(Debug, Args, Clone)]
pub struct PullArgs {
    /// Consumer group of the pulls.
    #[arg(long = "consumer-group", default_value = "bench_consumer")]
    pub consumer_group: String,
    /// Messages asked per pull.
    #[arg(long, default_value_t = 32)]
    pub pull_batch: i32,
    /// Long-poll time the broker may hold a pull that finds nothing.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub poll: Duration,
}

/// `stratus bench produce`.
#[derive(Debug, Args, Clone)]
pub struct ProduceArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topic: TopicArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub send: SendArgs,
}

/// `stratus bench consume`.
#[derive(Debug, Args, Clone)]
pub struct ConsumeArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub pull: PullArgs,
    /// Connections per broker for the pullers (each queue has one pull in flight).
    #[arg(long, default_value_t = 8)]
    pub connections: usize,
    /// Stop after this many messages.
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop after this long.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
}

/// `stratus bench e2e`.
#[derive(Debug, Args, Clone)]
pub struct E2eArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topic: TopicArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub send: SendArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub pull: PullArgs,
    /// Puller connections per broker.
    #[arg(long, default_value_t = 8)]
    pub pullers: usize,
    /// After the producers stop, how long pullers may take to receive what was acked.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub drain_timeout: Duration,
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    /// `stratus bench` as the binary mounts it.
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn parse(args: &[&str]) -> BenchCommand {
        let argv = std::iter::once("bench").chain(args.iter().copied());
        Cli::try_parse_from(argv).unwrap().bench.command
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_and_durations_parse() {
        let BenchCommand::Produce(p) = parse(&["produce", "--mode", "async", "--duration", "5s"])
        else {
            panic!("not produce");
        };
        assert_eq!(p.common.namesrv, "127.0.0.1:9876");
        assert_eq!(p.common.topic, "BenchTopic");
        assert_eq!(p.common.timeout, Duration::from_secs(10));
        assert_eq!(p.send.mode, SendMode::Async);
        assert_eq!(p.send.duration, Some(Duration::from_secs(5)));
        assert_eq!(p.send.count, None);
        assert_eq!(p.topic.queues, 8);
        assert!(!p.topic.no_create);

        let BenchCommand::Consume(c) = parse(&["consume", "--namesrv", "h:1", "--poll", "250ms"])
        else {
            panic!("not consume");
        };
        assert_eq!(c.common.namesrv, "h:1");
        assert_eq!(c.pull.poll, Duration::from_millis(250));
        assert_eq!(c.pull.consumer_group, "bench_consumer");

        let BenchCommand::E2e(e) = parse(&["e2e", "--rate", "400", "--no-create"]) else {
            panic!("not e2e");
        };
        assert_eq!(e.send.rate, 400);
        assert!(e.topic.no_create);
        assert_eq!(e.drain_timeout, Duration::from_secs(15));
    }
}

/// `stratus bench query-by-key`.
#[derive(Debug, Args, Clone)]
pub struct QueryArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topic: TopicArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub send: SendArgs,
    /// Lookups after the fill (each one a random key of the fill).
    #[arg(long, default_value_t = 1000)]
    pub lookups: u64,
    /// Lookups in flight at once.
    #[arg(long, default_value_t = 4)]
    pub lookup_connections: usize,
    /// Look up by unique key (UNIQ_KEY, `_UNIQUE_KEY_QUERY`) instead of by KEYS.
    #[arg(long)]
    pub unique: bool,
    /// Do not fill: look up the keys of an earlier fill of `--count` messages and
    /// `--key-share`, whose run id (printed by that fill) is given here, in hex.
    #[arg(long)]
    pub run_id: Option<String>,
    /// The node's metrics address (`host:port` of `/metrics`): object-store requests per
    /// lookup are read from its counters before and after the lookups.
    #[arg(long)]
    pub metrics: Option<String>,
}
