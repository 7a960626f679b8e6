//! Per-node statistics, kept as the reference's `BrokerStatsManager` / `StatsItem` /
//! `StoreStatsService` / `BrokerStats` keep them, protocol-neutral.
//!
//! * **Stats items** (`TOPIC_PUT_NUMS` by topic, `GROUP_GET_NUMS` by `topic@group`, …): each
//!   item is a value and a count of additions (`times`), both atomics. Every 10 s a sample
//!   `(time, times, value)` is kept for the minute window (7 samples), every 10 min for the
//!   hour window (7) and every hour for the day window (25); a window's `sum` is the value's
//!   growth from its first sample to its last, `tps` that sum per second, `avgpt` the sum
//!   per addition. The first sample of a window is a zero sample one period back, as the
//!   reference's.
//! * **Store counters** behind GET_BROKER_RUNTIME_INFO: messages put and their bytes, gets
//!   that found and that missed, messages transferred; sampled every second (601 samples),
//!   so `putTps` and friends are rates over the last 10, 60 and 600 s.
//! * **Day totals** (`msgPutTotalTodayMorning` …): user-topic puts and gets at the last two
//!   midnights (UTC).
//!
//! Counting is cheap: one lookup in one of 16 read-mostly maps and two atomic adds per
//! request (not per message); samples are taken by [`Stats::tick`], called once a second by
//! the stats service. The keys of each stats name are capped (`stats.max_keys`): past the
//! cap, new keys are counted under [`OVERFLOW_KEY`], so hostile topic or group names cannot
//! grow memory without bound.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Mutex, RwLock};
use stratus_meta::ShardId;

/// Messages put, by topic.
pub(crate) const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
/// Bytes put, by topic.
pub(crate) const TOPIC_PUT_SIZE: &str = "TOPIC_PUT_SIZE";
/// Messages got, by `topic@group`.
pub(crate) const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";
/// Bytes got, by `topic@group`.
pub(crate) const GROUP_GET_SIZE: &str = "GROUP_GET_SIZE";
/// Pull latency in ms, by `topic@group` (`addRTValue`: one addition per pull).
pub(crate) const GROUP_GET_LATENCY: &str = "GROUP_GET_LATENCY";
/// Messages sent back by consumers, by `topic@group`.
pub(crate) const SNDBCK_PUT_NUMS: &str = "SNDBCK_PUT_NUMS";
/// Messages put on the node, keyed by the cluster name.
pub(crate) const BROKER_PUT_NUMS: &str = "BROKER_PUT_NUMS";
/// Messages got on the node, keyed by the cluster name.
pub(crate) const BROKER_GET_NUMS: &str = "BROKER_GET_NUMS";
/// Messages diverted to a dead-letter topic, by `topic@group` (the reference's
/// `DLQ_PUT_NUMS`).
pub(crate) const DLQ_PUT_NUMS: &str = "DLQ_PUT_NUMS";

/// Every stats name, in the order of [`Stats::sets`].
pub(crate) const NAMES: [&str; 9] = [
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    GROUP_GET_LATENCY,
    SNDBCK_PUT_NUMS,
    BROKER_PUT_NUMS,
    BROKER_GET_NUMS,
    DLQ_PUT_NUMS,
];

/// The key new keys are counted under once a stats name has `stats.max_keys` keys.
pub(crate) const OVERFLOW_KEY: &str = "__OVERFLOW__";

const MINUTE_EVERY_MS: i64 = 10_000;
const HOUR_EVERY_MS: i64 = 600_000;
const DAY_EVERY_MS: i64 = 3_600_000;
const MINUTE_SAMPLES: usize = 7;
const HOUR_SAMPLES: usize = 7;
const DAY_SAMPLES: usize = 25;
/// Store samples are taken every second; 601 cover the longest rate (600 s).
const STORE_SAMPLES: usize = 601;
const DAY_MS: i64 = 86_400_000;

/// The item key of a per-topic or per-group statistic on `shard`: every shard is a broker
/// of its own, so each answers VIEW_BROKER_STATS_DATA and consume rates with its own
/// figures (the Dashboard and mqadmin sum them over brokers).
pub(crate) fn shard_key(shard: ShardId, key: &str) -> String {
    format!("{}/{key}", shard.0)
}

/// The statistic key of an item key (`shard_key`), without its shard; keys without one
/// (the overflow key) as they are.
pub(crate) fn unshard_key(key: &str) -> &str {
    key.split_once('/').map_or(key, |(_, k)| k)
}

/// The `topic@group` key of the group stats.
pub(crate) fn group_key(topic: &str, group: &str) -> String {
    let mut k = String::with_capacity(topic.len() + group.len() + 1);
    k.push_str(topic);
    k.push('@');
    k.push_str(group);
    k
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    at_ms: i64,
    times: u64,
    value: u64,
}

/// One window's figures (`StatsSnapshot`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Snapshot {
    /// Growth of the value over the window.
    pub(crate) sum: i64,
    /// `sum` per second.
    pub(crate) tps: f64,
    /// `sum` per addition.
    pub(crate) avgpt: f64,
    /// Additions over the window.
    pub(crate) times: i64,
}

#[derive(Debug, Default)]
struct Windows {
    minute: VecDeque<Sample>,
    hour: VecDeque<Sample>,
    day: VecDeque<Sample>,
}

/// One counter (`StatsItem`).
#[derive(Debug)]
pub(crate) struct StatsItem {
    value: AtomicU64,
    times: AtomicU64,
    /// Creation order within its stats name (metrics give the first ones their own series).
    pub(crate) ordinal: usize,
    windows: Mutex<Windows>,
}

impl StatsItem {
    fn new(ordinal: usize) -> Self {
        Self {
            value: AtomicU64::new(0),
            times: AtomicU64::new(0),
            ordinal,
            windows: Mutex::new(Windows::default()),
        }
    }

    /// Adds `value` over `times` additions.
    pub(crate) fn add(&self, value: u64, times: u64) {
        self.value.fetch_add(value, Ordering::Relaxed);
        self.times.fetch_add(times, Ordering::Relaxed);
    }

    /// The value since the item was created.
    pub(crate) fn value(&self) -> u64 {
        self.value.load(Ordering::Relaxed)
    }

    fn sample(&self, list: &mut VecDeque<Sample>, now_ms: i64, period_ms: i64, keep: usize) {
        if list.is_empty() {
            list.push_back(Sample {
                at_ms: now_ms - period_ms,
                times: 0,
                value: 0,
            });
        }
        list.push_back(Sample {
            at_ms: now_ms,
            times: self.times.load(Ordering::Relaxed),
            value: self.value(),
        });
        while list.len() > keep {
            list.pop_front();
        }
    }

    /// The minute window (`getStatsDataInMinute`).
    pub(crate) fn minute(&self) -> Snapshot {
        compute(&self.windows.lock().minute)
    }

    /// The hour window.
    pub(crate) fn hour(&self) -> Snapshot {
        compute(&self.windows.lock().hour)
    }

    /// The day window.
    pub(crate) fn day(&self) -> Snapshot {
        compute(&self.windows.lock().day)
    }
}

fn compute(list: &VecDeque<Sample>) -> Snapshot {
    let (Some(first), Some(last)) = (list.front(), list.back()) else {
        return Snapshot::default();
    };
    let sum = i64::try_from(last.value.saturating_sub(first.value)).unwrap_or(i64::MAX);
    let times = i64::try_from(last.times.saturating_sub(first.times)).unwrap_or(i64::MAX);
    let span = last.at_ms - first.at_ms;
    #[allow(clippy::cast_precision_loss)] // figures for people, not for arithmetic
    let tps = if span > 0 {
        sum as f64 * 1000.0 / span as f64
    } else {
        0.0
    };
    #[allow(clippy::cast_precision_loss)]
    let avgpt = if times > 0 {
        sum as f64 / times as f64
    } else {
        0.0
    };
    Snapshot {
        sum,
        tps,
        avgpt,
        times,
    }
}

const SHARDS: usize = 16;

/// The items of one stats name (`StatsItemSet`), in 16 maps so concurrent requests rarely
/// share a lock; the maps are read-locked to count and write-locked only to add a key.
#[derive(Debug)]
pub(crate) struct StatsSet {
    name: &'static str,
    shards: [RwLock<HashMap<Box<str>, Arc<StatsItem>>>; SHARDS],
    hasher: std::collections::hash_map::RandomState,
    keys: AtomicUsize,
    max_keys: usize,
}

impl StatsSet {
    fn new(name: &'static str, max_keys: usize) -> Self {
        Self {
            name,
            shards: std::array::from_fn(|_| RwLock::new(HashMap::new())),
            hasher: std::collections::hash_map::RandomState::new(),
            keys: AtomicUsize::new(0),
            max_keys: max_keys.max(1),
        }
    }

    fn shard(&self, key: &str) -> &RwLock<HashMap<Box<str>, Arc<StatsItem>>> {
        let i = usize::try_from(self.hasher.hash_one(key) % SHARDS as u64).unwrap_or(0);
        &self.shards[i]
    }

    /// Adds to `key`'s item, creating it (or, past the cap, adding to [`OVERFLOW_KEY`]).
    pub(crate) fn add(&self, key: &str, value: u64, times: u64) {
        if let Some(item) = self.shard(key).read().get(key) {
            item.add(value, times);
            return;
        }
        self.item_for_new(key).add(value, times);
    }

    fn item_for_new(&self, key: &str) -> Arc<StatsItem> {
        let full = self.keys.load(Ordering::Relaxed) >= self.max_keys;
        let key = if full && key != OVERFLOW_KEY {
            OVERFLOW_KEY
        } else {
            key
        };
        let mut map = self.shard(key).write();
        if let Some(item) = map.get(key) {
            return item.clone();
        }
        // The overflow key itself is allowed past the cap: it is one more key at most.
        let ordinal = self.keys.fetch_add(1, Ordering::Relaxed);
        let item = Arc::new(StatsItem::new(ordinal));
        map.insert(key.into(), item.clone());
        item
    }

    /// `key`'s item, if it was ever added to.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<StatsItem>> {
        self.shard(key).read().get(key).cloned()
    }

    /// Every key and item (a copy of the handles).
    pub(crate) fn items(&self) -> Vec<(String, Arc<StatsItem>)> {
        let mut out = Vec::new();
        for s in &self.shards {
            out.extend(s.read().iter().map(|(k, v)| (k.to_string(), v.clone())));
        }
        out
    }

    /// Keys held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.keys.load(Ordering::Relaxed)
    }

    fn sample(&self, now_ms: i64, which: Window) {
        for (_, item) in self.items() {
            let mut w = item.windows.lock();
            match which {
                Window::Minute => {
                    item.sample(&mut w.minute, now_ms, MINUTE_EVERY_MS, MINUTE_SAMPLES)
                }
                Window::Hour => item.sample(&mut w.hour, now_ms, HOUR_EVERY_MS, HOUR_SAMPLES),
                Window::Day => item.sample(&mut w.day, now_ms, DAY_EVERY_MS, DAY_SAMPLES),
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Window {
    Minute,
    Hour,
    Day,
}

/// The store counters (`StoreStatsService`).
#[derive(Debug, Default)]
struct StoreCounters {
    put_times: AtomicU64,
    put_bytes: AtomicU64,
    put_failed: AtomicU64,
    put_max_ms: AtomicU64,
    get_found: AtomicU64,
    get_miss: AtomicU64,
    get_max_ms: AtomicU64,
    transferred: AtomicU64,
    /// User-topic puts and gets (the `…WithoutSystemTopic` items).
    user_put: AtomicU64,
    user_get: AtomicU64,
    /// Sends by time to durable, in the buckets of [`PUT_BUCKETS`], and their sum (ms).
    put_buckets: [AtomicU64; 13],
    put_ms_sum: AtomicU64,
}

/// Upper bounds (ms, inclusive) of the put-time buckets and their names
/// (`PUT_MESSAGE_ENTIRE_TIME_MAX_DESC`); the last is open.
const PUT_BUCKETS: [(u64, &str); 13] = [
    (0, "[<=0ms]"),
    (10, "[0~10ms]"),
    (50, "[10~50ms]"),
    (100, "[50~100ms]"),
    (200, "[100~200ms]"),
    (500, "[200~500ms]"),
    (1000, "[500ms~1s]"),
    (2000, "[1~2s]"),
    (3000, "[2~3s]"),
    (4000, "[3~4s]"),
    (5000, "[4~5s]"),
    (10_000, "[5~10s]"),
    (u64::MAX, "[10s~]"),
];

/// One per-second sample of the store counters: put, found, miss, transferred.
#[derive(Debug, Clone, Copy)]
struct StoreSample {
    at_ms: i64,
    counts: [u64; 4],
}

#[derive(Debug, Default)]
struct DayTotals {
    /// The UTC day (ms / 86 400 000) of the last record; `None` before the first tick.
    day: Option<i64>,
    put_yesterday_morning: u64,
    put_today_morning: u64,
    get_yesterday_morning: u64,
    get_today_morning: u64,
}

#[derive(Debug, Default)]
struct Due {
    minute: Option<i64>,
    hour: Option<i64>,
    day: Option<i64>,
    store: Option<i64>,
}

/// The node's statistics.
#[derive(Debug)]
pub(crate) struct Stats {
    sets: [StatsSet; 9],
    store: StoreCounters,
    store_samples: Mutex<VecDeque<StoreSample>>,
    days: Mutex<DayTotals>,
    due: Mutex<Due>,
    /// The cluster name: the key of the BROKER_* items.
    cluster: String,
    /// When the node started (ms since the epoch).
    pub(crate) boot_ms: i64,
}

impl Stats {
    /// Empty statistics; `max_keys` caps the keys of each stats name.
    pub(crate) fn new(cluster: &str, max_keys: usize, boot_ms: i64) -> Self {
        Self {
            sets: NAMES.map(|n| StatsSet::new(n, max_keys)),
            store: StoreCounters::default(),
            store_samples: Mutex::new(VecDeque::with_capacity(STORE_SAMPLES + 1)),
            days: Mutex::new(DayTotals::default()),
            due: Mutex::new(Due::default()),
            cluster: cluster.to_owned(),
            boot_ms,
        }
    }

    /// The items of `name` (`None`: not a stats name Stratus keeps).
    pub(crate) fn set(&self, name: &str) -> Option<&StatsSet> {
        self.sets.iter().find(|s| s.name == name)
    }

    fn named(&self, name: &'static str) -> &StatsSet {
        // NAMES and sets are built from one list.
        self.sets
            .iter()
            .find(|s| s.name == name)
            .unwrap_or(&self.sets[0])
    }

    /// `name`'s item for `key` on `shard` (VIEW_BROKER_STATS_DATA); the BROKER_* items
    /// (keyed by the cluster name) are the node's.
    pub(crate) fn item(&self, name: &str, shard: ShardId, key: &str) -> Option<Arc<StatsItem>> {
        let set = self.set(name)?;
        set.get(&shard_key(shard, key)).or_else(|| {
            // Node-wide items: the BROKER_* counters and the overflow of every shard.
            (name == BROKER_PUT_NUMS || name == BROKER_GET_NUMS || key == OVERFLOW_KEY)
                .then(|| set.get(key))
                .flatten()
        })
    }

    /// A send of `messages` messages and `bytes` body bytes to `topic` was stored.
    pub(crate) fn on_put(
        &self,
        shard: ShardId,
        topic: &str,
        messages: u64,
        bytes: u64,
        took_ms: u64,
    ) {
        let key = shard_key(shard, topic);
        self.named(TOPIC_PUT_NUMS).add(&key, messages, 1);
        self.named(TOPIC_PUT_SIZE).add(&key, bytes, 1);
        self.named(BROKER_PUT_NUMS).add(&self.cluster, messages, 1);
        let s = &self.store;
        s.put_times.fetch_add(messages, Ordering::Relaxed);
        s.put_bytes.fetch_add(bytes, Ordering::Relaxed);
        s.put_max_ms.fetch_max(took_ms, Ordering::Relaxed);
        let b = PUT_BUCKETS
            .iter()
            .position(|(max, _)| took_ms <= *max)
            .unwrap_or(PUT_BUCKETS.len() - 1);
        s.put_buckets[b].fetch_add(1, Ordering::Relaxed);
        s.put_ms_sum.fetch_add(took_ms, Ordering::Relaxed);
        if !stratus_compat::topic::is_system_topic(topic) {
            s.user_put.fetch_add(messages, Ordering::Relaxed);
        }
    }

    /// A send failed to be stored.
    pub(crate) fn on_put_failed(&self) {
        self.store.put_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// A pull of `group` on `topic` returned `messages` messages of `bytes` bytes (0: it
    /// found nothing) after `took_ms`.
    pub(crate) fn on_get(
        &self,
        shard: ShardId,
        topic: &str,
        group: &str,
        messages: u64,
        bytes: u64,
        took_ms: u64,
    ) {
        let s = &self.store;
        s.get_max_ms.fetch_max(took_ms, Ordering::Relaxed);
        if messages == 0 {
            s.get_miss.fetch_add(1, Ordering::Relaxed);
            return;
        }
        s.get_found.fetch_add(1, Ordering::Relaxed);
        s.transferred.fetch_add(messages, Ordering::Relaxed);
        let key = shard_key(shard, &group_key(topic, group));
        self.named(GROUP_GET_NUMS).add(&key, messages, 1);
        self.named(GROUP_GET_SIZE).add(&key, bytes, 1);
        self.named(GROUP_GET_LATENCY).add(&key, took_ms, 1);
        self.named(BROKER_GET_NUMS).add(&self.cluster, messages, 1);
        if !stratus_compat::topic::is_system_topic(topic) {
            s.user_get.fetch_add(messages, Ordering::Relaxed);
        }
    }

    /// A consumer sent a message of `topic` back for `group`; `to_dlq` when it went to the
    /// group's dead-letter topic.
    pub(crate) fn on_send_back(&self, shard: ShardId, topic: &str, group: &str, to_dlq: bool) {
        let key = shard_key(shard, &group_key(topic, group));
        self.named(SNDBCK_PUT_NUMS).add(&key, 1, 1);
        if to_dlq {
            self.named(DLQ_PUT_NUMS).add(&key, 1, 1);
        }
    }

    /// Takes the samples that are due at `now_ms`: the store counters every second, the
    /// minute windows every 10 s, the hour windows every 10 min, the day windows every
    /// hour, the day totals at each UTC midnight.
    pub(crate) fn tick(&self, now_ms: i64) {
        let (store, minute, hour, day) = {
            let mut d = self.due.lock();
            let due = |slot: &mut Option<i64>, every: i64| match *slot {
                Some(next) if now_ms < next => false,
                _ => {
                    *slot = Some(now_ms + every);
                    true
                }
            };
            (
                due(&mut d.store, 1000),
                due(&mut d.minute, MINUTE_EVERY_MS),
                due(&mut d.hour, HOUR_EVERY_MS),
                due(&mut d.day, DAY_EVERY_MS),
            )
        };
        if store {
            let s = &self.store;
            let mut samples = self.store_samples.lock();
            samples.push_back(StoreSample {
                at_ms: now_ms,
                counts: [
                    s.put_times.load(Ordering::Relaxed),
                    s.get_found.load(Ordering::Relaxed),
                    s.get_miss.load(Ordering::Relaxed),
                    s.transferred.load(Ordering::Relaxed),
                ],
            });
            while samples.len() > STORE_SAMPLES {
                samples.pop_front();
            }
        }
        for (due, w) in [
            (minute, Window::Minute),
            (hour, Window::Hour),
            (day, Window::Day),
        ] {
            if due {
                for set in &self.sets {
                    set.sample(now_ms, w);
                }
            }
        }
        let today = now_ms.div_euclid(DAY_MS);
        let mut d = self.days.lock();
        match d.day {
            None => d.day = Some(today),
            Some(day) if day < today => {
                // BrokerStats#record, at midnight.
                d.put_yesterday_morning = d.put_today_morning;
                d.get_yesterday_morning = d.get_today_morning;
                d.put_today_morning = self.store.user_put.load(Ordering::Relaxed);
                d.get_today_morning = self.store.user_get.load(Ordering::Relaxed);
                d.day = Some(today);
            }
            Some(_) => {}
        }
    }

    /// The rate of store counter `i` over the last `secs` seconds ("x" of "x y z"): from
    /// the sample `secs` back, or the oldest there is while the node is younger.
    fn store_tps(&self, i: usize, secs: usize) -> f64 {
        let samples = self.store_samples.lock();
        let Some(last) = samples.back() else {
            return 0.0;
        };
        let back = samples.len().saturating_sub(secs + 1);
        let first = samples[back];
        let span = last.at_ms - first.at_ms;
        if span <= 0 {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let r = last.counts[i].saturating_sub(first.counts[i]) as f64 * 1000.0 / span as f64;
        r
    }

    /// Sends by time to durable since start (`putMessageDistributeTime`).
    pub(crate) fn put_distribution(&self) -> String {
        let mut out = String::new();
        for (i, (_, name)) in PUT_BUCKETS.iter().enumerate() {
            let n = self.store.put_buckets[i].load(Ordering::Relaxed);
            out.push_str(&format!("{name}:{n} "));
        }
        out
    }

    /// Sends by time to durable as a histogram: (upper bound in ms, `None` for the open
    /// bucket; sends at or below it), and the sum of the times in ms.
    pub(crate) fn put_histogram(&self) -> (Vec<(Option<u64>, u64)>, u64) {
        let mut cumulative = 0;
        let buckets = PUT_BUCKETS
            .iter()
            .enumerate()
            .map(|(i, (max, _))| {
                cumulative += self.store.put_buckets[i].load(Ordering::Relaxed);
                ((*max != u64::MAX).then_some(*max), cumulative)
            })
            .collect();
        (buckets, self.store.put_ms_sum.load(Ordering::Relaxed))
    }

    /// The `q` quantile of the time to durable, ms: the upper bound of the bucket it falls
    /// in (the open bucket counts as 10 s); 0 before any send.
    pub(crate) fn put_latency(&self, q: f64) -> f64 {
        let counts: Vec<u64> = self
            .store
            .put_buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let rank = ((total as f64) * q).ceil() as u64;
        let mut seen = 0;
        for (i, n) in counts.iter().enumerate() {
            seen += n;
            if seen >= rank.max(1) {
                #[allow(clippy::cast_precision_loss)]
                return PUT_BUCKETS[i].0.min(10_000) as f64;
            }
        }
        10_000.0
    }

    /// The store figures GET_BROKER_RUNTIME_INFO reports.
    pub(crate) fn store_view(&self) -> StoreView {
        let s = &self.store;
        let tps3 = |i| [10, 60, 600].map(|secs| self.store_tps(i, secs));
        let d = self.days.lock();
        StoreView {
            put_times: s.put_times.load(Ordering::Relaxed),
            put_bytes: s.put_bytes.load(Ordering::Relaxed),
            put_failed: s.put_failed.load(Ordering::Relaxed),
            put_max_ms: s.put_max_ms.load(Ordering::Relaxed),
            get_max_ms: s.get_max_ms.load(Ordering::Relaxed),
            put_tps: tps3(0),
            get_found_tps: tps3(1),
            get_miss_tps: tps3(2),
            get_transferred_tps: tps3(3),
            put_today_now: s.user_put.load(Ordering::Relaxed),
            get_today_now: s.user_get.load(Ordering::Relaxed),
            put_today_morning: d.put_today_morning,
            put_yesterday_morning: d.put_yesterday_morning,
            get_today_morning: d.get_today_morning,
            get_yesterday_morning: d.get_yesterday_morning,
        }
    }
}

/// The store counters and their rates at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoreView {
    pub(crate) put_times: u64,
    pub(crate) put_bytes: u64,
    pub(crate) put_failed: u64,
    pub(crate) put_max_ms: u64,
    pub(crate) get_max_ms: u64,
    /// Rates over 10, 60 and 600 s.
    pub(crate) put_tps: [f64; 3],
    pub(crate) get_found_tps: [f64; 3],
    pub(crate) get_miss_tps: [f64; 3],
    pub(crate) get_transferred_tps: [f64; 3],
    pub(crate) put_today_now: u64,
    pub(crate) get_today_now: u64,
    pub(crate) put_today_morning: u64,
    pub(crate) put_yesterday_morning: u64,
    pub(crate) get_today_morning: u64,
    pub(crate) get_yesterday_morning: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000;

    #[test]
    fn the_minute_window_is_the_growth_over_its_samples() {
        let s = Stats::new("c", 100, T0);
        s.tick(T0);
        s.on_put(ShardId(0), "T", 10, 1000, 1);
        s.on_put(ShardId(0), "T", 20, 2000, 1);
        let item = s.item(TOPIC_PUT_NUMS, ShardId(0), "T").unwrap();
        // One tick: the zero sample 10 s back and this one.
        s.tick(T0 + 10_000);
        let m = item.minute();
        assert_eq!(m.sum, 30);
        assert!((m.tps - 3.0).abs() < 1e-9, "{m:?}");
        assert!((m.avgpt - 15.0).abs() < 1e-9, "{m:?}");
        // 7 samples kept: after 60 s more with no traffic the window is empty.
        for i in 2..=8 {
            s.tick(T0 + i * 10_000);
        }
        assert_eq!(item.minute().sum, 0);
        // The hour window is sampled every 10 min: nothing yet, then the growth.
        assert_eq!(item.hour().sum, 0);
        s.tick(T0 + 600_000);
        assert_eq!(item.hour().sum, 30, "{:?}", item.hour());
        assert_eq!(item.day().sum, 0);
        s.tick(T0 + 3_600_000);
        assert_eq!(item.day().sum, 30);
        let size = s.item(TOPIC_PUT_SIZE, ShardId(0), "T").unwrap();
        assert_eq!(size.day().sum, 3000);
        assert!(s.item(TOPIC_PUT_NUMS, ShardId(0), "U").is_none());
        assert!(s.item("NO_SUCH_STATS", ShardId(0), "T").is_none());
    }

    #[test]
    fn gets_count_by_topic_and_group_and_misses_only_in_the_store_counters() {
        let s = Stats::new("c", 100, T0);
        s.tick(T0);
        s.on_get(ShardId(0), "T", "g", 5, 50, 2);
        s.on_get(ShardId(0), "T", "g", 0, 0, 0);
        s.on_get(ShardId(0), "RMQ_SYS_TRACE_TOPIC", "g", 1, 10, 0);
        s.tick(T0 + 10_000);
        assert_eq!(
            s.item(GROUP_GET_NUMS, ShardId(0), "T@g")
                .unwrap()
                .minute()
                .sum,
            5
        );
        assert_eq!(
            s.item(GROUP_GET_SIZE, ShardId(0), "T@g")
                .unwrap()
                .minute()
                .sum,
            50
        );
        assert_eq!(
            s.item(BROKER_GET_NUMS, ShardId(0), "c")
                .unwrap()
                .minute()
                .sum,
            6
        );
        let v = s.store_view();
        assert_eq!(v.get_today_now, 5, "system topics are left out");
        // Store rates: two samples 10 s apart, 2 found gets and 1 miss between them.
        assert!((v.get_found_tps[0] - 0.2).abs() < 1e-9, "{v:?}");
        assert!((v.get_miss_tps[0] - 0.1).abs() < 1e-9, "{v:?}");
        assert!((v.get_transferred_tps[2] - 0.6).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn keys_past_the_cap_are_folded_into_one() {
        let s = Stats::new("c", 3, T0);
        for i in 0..10 {
            s.on_put(ShardId(0), &format!("T{i}"), 1, 1, 0);
        }
        let set = s.set(TOPIC_PUT_NUMS).unwrap();
        assert_eq!(set.len(), 4, "three keys and the overflow key");
        assert_eq!(set.get(OVERFLOW_KEY).unwrap().value(), 7);
        assert!(set.get("0/T9").is_none());
        // A known key keeps counting under its own name.
        s.on_put(ShardId(0), "T0", 5, 1, 0);
        assert_eq!(set.get("0/T0").unwrap().value(), 6);
    }

    #[test]
    fn day_totals_move_at_midnight() {
        let midnight = (T0 / DAY_MS + 1) * DAY_MS;
        let s = Stats::new("c", 100, T0);
        s.tick(midnight - 5000);
        s.on_put(ShardId(0), "T", 7, 70, 0);
        s.tick(midnight - 1000);
        assert_eq!(s.store_view().put_today_morning, 0);
        s.tick(midnight + 1000);
        s.on_put(ShardId(0), "T", 3, 30, 0);
        let v = s.store_view();
        assert_eq!(v.put_today_morning, 7);
        assert_eq!(v.put_yesterday_morning, 0);
        assert_eq!(v.put_today_now, 10);
        s.tick(midnight + DAY_MS + 1);
        let v = s.store_view();
        assert_eq!((v.put_yesterday_morning, v.put_today_morning), (7, 10));
    }

    #[test]
    fn store_rates_use_the_oldest_sample_while_the_node_is_young() {
        let s = Stats::new("c", 100, T0);
        assert_eq!(s.store_view().put_tps, [0.0; 3]);
        s.tick(T0);
        for i in 1..=5 {
            s.on_put(ShardId(0), "T", 10, 1, 0);
            s.tick(T0 + i * 1000);
        }
        let v = s.store_view();
        assert_eq!(v.put_tps, [10.0, 10.0, 10.0]);
        assert_eq!(v.put_times, 50);
        assert!(s.put_distribution().starts_with("[<=0ms]:5 [0~10ms]:0 "));
        s.on_put(ShardId(0), "T", 1, 1, 700);
        assert_eq!(s.put_latency(0.5), 0.0);
        assert_eq!(s.put_latency(0.99), 1000.0);
    }
}
