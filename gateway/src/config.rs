//! Settings: plain data, loaded in layers (built-in defaults, then the TOML file, then
//! `STRATUS_<SECTION>__<KEY>` environment variables, then command-line overrides) and
//! validated once at start-up.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// The checked configuration of a node: the settings as loaded, and every value derived
/// from them parsed once (nothing downstream re-parses a string).
#[derive(Debug, Clone)]
pub struct Config {
    /// The settings as loaded and validated.
    pub settings: Settings,
    /// The effective metadata URL (`meta.url`, else `embedded://<data_dir>/meta.db`).
    pub meta_url: String,
    /// The object store `storage.object_store_url` names (else `<data_dir>/objects`).
    pub object_store: ObjectStoreUrl,
    /// The group-commit linger (`storage.linger`, else by object store kind).
    pub linger: Duration,
    /// `host:port` published for the first broker port.
    pub advertised_addr: String,
    /// Frame and header limits of every connection.
    pub frame_limits: stratus_compat::FrameLimits,
    /// Delay of each delay level, level 1 first (`broker.message_delay_level`).
    pub delay_levels: Vec<Duration>,
    /// The `/metrics` address; `None` when off.
    pub metrics_addr: Option<SocketAddr>,
}

impl std::ops::Deref for Config {
    type Target = Settings;

    fn deref(&self) -> &Settings {
        &self.settings
    }
}

/// Where `storage.object_store_url` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectStoreUrl {
    /// `memory://`.
    Memory,
    /// `file://DIR`.
    File(String),
    /// `s3://BUCKET/PREFIX`.
    S3 {
        /// Bucket name.
        bucket: String,
        /// Key prefix, without slashes at either end.
        prefix: String,
    },
}

impl ObjectStoreUrl {
    /// Parses `storage.object_store_url`.
    ///
    /// # Errors
    /// An unsupported scheme, an `s3://` URL without a bucket, or a prefix that is not a
    /// valid object path.
    pub fn parse(url: &str) -> Result<Self, String> {
        if url == "memory://" {
            return Ok(Self::Memory);
        }
        if let Some(path) = url.strip_prefix("file://") {
            return Ok(Self::File(path.to_owned()));
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty()
                || !bucket
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            {
                return Err(format!(
                    "{url:?} needs a bucket name of letters, digits, '.', '-' or '_' (s3://bucket/prefix)"
                ));
            }
            let prefix = prefix.trim_matches('/');
            if !prefix.is_empty() {
                object_store::path::Path::parse(prefix)
                    .map_err(|e| format!("invalid key prefix {prefix:?}: {e}"))?;
            }
            return Ok(Self::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
            });
        }
        Err(format!(
            "unsupported url {url:?} (use file://, memory:// or s3://bucket/prefix)"
        ))
    }
}

/// Parses delay levels (`messageDelayLevel`): whitespace-separated `<n><unit>`, unit s, m,
/// h or d.
///
/// # Errors
/// A part without a number or with another unit, or no level at all.
pub fn parse_delay_levels(text: &str) -> Result<Vec<Duration>, String> {
    let mut out = Vec::new();
    for part in text.split_whitespace() {
        let (num, unit) = part.split_at(part.len().saturating_sub(1));
        let n: u64 = num
            .parse()
            .map_err(|_| format!("bad delay level {part:?}"))?;
        let secs = match unit {
            "s" => n,
            "m" => n * 60,
            "h" => n * 3600,
            "d" => n * 86_400,
            _ => {
                return Err(format!(
                    "bad unit in delay level {part:?} (use s, m, h or d)"
                ));
            }
        };
        out.push(Duration::from_secs(secs));
    }
    if out.is_empty() {
        return Err("no delay levels".into());
    }
    Ok(out)
}

/// The `/metrics` address: `None` when `addr` is empty or `off`.
///
/// # Errors
/// When `addr` is neither a socket address nor off.
pub fn parse_metrics_addr(addr: &str) -> Result<Option<SocketAddr>, String> {
    let addr = addr.trim();
    if addr.is_empty() || addr.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    addr.parse()
        .map(Some)
        .map_err(|e| format!("{addr:?} is not host:port or \"off\": {e}"))
}

/// A duration as whole milliseconds for timestamp arithmetic (saturating).
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A byte size: written as `"4MiB"`, `"256KiB"`, `"16777212B"` or a plain integer of bytes,
/// and printed exactly (never rounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(u64);

impl ByteSize {
    /// `n` bytes.
    pub const fn b(n: u64) -> Self {
        Self(n)
    }
    /// `n` KiB.
    pub const fn kib(n: u64) -> Self {
        Self(n * 1024)
    }
    /// `n` MiB.
    pub const fn mib(n: u64) -> Self {
        Self(n * 1024 * 1024)
    }
    /// Bytes.
    pub const fn as_u64(self) -> u64 {
        self.0
    }
    /// Bytes as usize (saturating).
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        const MIB: u64 = 1024 * 1024;
        let text = match self.0 {
            0 => "0B".to_owned(),
            n if n % (1024 * MIB) == 0 => format!("{}GiB", n / (1024 * MIB)),
            n if n % MIB == 0 => format!("{}MiB", n / MIB),
            n if n % 1024 == 0 => format!("{}KiB", n / 1024),
            n => format!("{n}B"),
        };
        s.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(Self(n)),
            Raw::Text(t) => t
                .parse::<bytesize::ByteSize>()
                .map(|b| Self(b.as_u64()))
                .map_err(|e| serde::de::Error::custom(format!("invalid size {t:?}: {e}"))),
        }
    }
}

/// Every setting of a node. Each field has a default; see `deploy/stratus.example.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Identity of this node and its data directory.
    pub node: NodeSettings,
    /// Listening and advertised addresses.
    pub listen: ListenSettings,
    /// RocketMQ broker behaviour (topics, limits, long polling).
    pub broker: BrokerSettings,
    /// Object storage and group commit.
    pub storage: StorageSettings,
    /// Metadata database.
    pub meta: MetaSettings,
    /// Connection limits.
    pub limits: LimitSettings,
    /// Transactional messages: check-back timing.
    pub transaction: TransactionSettings,
    /// Retention of stored messages and cleanup of orphaned objects.
    pub retention: RetentionSettings,
    /// The Prometheus `/metrics` endpoint.
    pub metrics: MetricsSettings,
    /// TLS on every listener.
    pub tls: TlsSettings,
    /// Broker statistics (mqadmin's figures, per-topic and per-group metrics).
    pub stats: StatsSettings,
    /// Access control (RocketMQ ACL 2.0): authentication and authorization.
    pub auth: AuthSettings,
    /// The Kafka listener: the same topics for Kafka clients.
    pub kafka: KafkaSettings,
}

/// The Kafka protocol front end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaSettings {
    /// Serve Kafka clients.
    pub enabled: bool,
    /// First Kafka port: shard `s` is served as Kafka broker `s` on this port + `s` while
    /// this node owns it.
    pub listen_addr: SocketAddr,
    /// `host:port` Kafka clients are told to dial for shard 0 (shard `s`: port + `s`);
    /// defaults to `listen_addr`.
    pub advertised_addr: Option<String>,
    /// Largest request accepted (`socket.request.max.bytes`).
    pub max_request_bytes: ByteSize,
    /// Create a topic on a Metadata request naming it, when the client allows it
    /// (`auto.create.topics.enable`).
    pub auto_create_topics: bool,
    /// Partitions of a topic created without a count (`num.partitions`).
    pub default_partitions: i32,
    /// How long the first member of an empty group waits for others before the group's
    /// first rebalance completes (`group.initial.rebalance.delay.ms`).
    #[serde(with = "humantime_serde")]
    pub group_initial_rebalance_delay: Duration,
    /// Shortest session timeout a member may ask for (`group.min.session.timeout.ms`).
    #[serde(with = "humantime_serde")]
    pub group_min_session_timeout: Duration,
    /// Longest session timeout a member may ask for (`group.max.session.timeout.ms`).
    #[serde(with = "humantime_serde")]
    pub group_max_session_timeout: Duration,
    /// Largest fetch answer whatever the client asks (`fetch.max.bytes`, broker side).
    pub max_fetch_bytes: ByteSize,
    /// An idempotent producer silent for this long is forgotten: its next batch is taken
    /// at whatever sequence it carries (`producer.id.expiration.ms`).
    #[serde(with = "humantime_serde")]
    pub producer_id_expiration: Duration,
}

impl Default for KafkaSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            listen_addr: SocketAddr::from(([127, 0, 0, 1], 9092)),
            advertised_addr: None,
            max_request_bytes: ByteSize::b(104_857_600),
            auto_create_topics: true,
            default_partitions: 1,
            group_initial_rebalance_delay: Duration::from_secs(3),
            group_min_session_timeout: Duration::from_secs(6),
            group_max_session_timeout: Duration::from_secs(1800),
            max_fetch_bytes: ByteSize::b(57_671_680),
            producer_id_expiration: Duration::from_secs(86_400),
        }
    }
}

/// Broker statistics.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StatsSettings {
    /// Most keys (topics, `topic@group` pairs) each statistic keeps; past it new keys are
    /// counted together under `__OVERFLOW__`.
    pub max_keys: usize,
    /// Most label sets each per-topic or per-group metric family exports; past it the rest
    /// are summed into one series whose topic and group labels are `__overflow__`.
    pub metrics_label_cap: usize,
}

impl Default for StatsSettings {
    fn default() -> Self {
        Self {
            max_keys: 10_000,
            metrics_label_cap: 1000,
        }
    }
}

/// Access control: signed requests (authentication) and users' policies (authorization),
/// the users and ACLs kept in meta (`docs/acl.md`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// Requests must be signed by a known, enabled user (`authenticationEnabled`).
    pub authentication_enabled: bool,
    /// Normal users need an ACL entry allowing what they ask (`authorizationEnabled`).
    pub authorization_enabled: bool,
    /// Bootstrap super user, created in meta at start unless it exists
    /// (`initAuthenticationUser`'s username).
    pub init_user: Option<String>,
    /// The bootstrap super user's password (its secret key); never printed.
    pub init_password: Option<String>,
    /// Key user passwords are encrypted with in meta (AES-256-GCM under its SHA-256);
    /// needed to store or check any password; never printed. Every node needs the same one.
    pub encryption_key: Option<String>,
    /// Request codes neither authenticated nor authorized (`authenticationWhitelist` and
    /// `authorizationWhitelist`).
    pub whitelist: Vec<i32>,
    /// Check name-server requests (routes, cluster info, topic lists, KV config) too; the
    /// reference's name server checks none. Broker requests are checked on every port.
    pub namesrv_checks: bool,
    /// How often the users' and ACLs' version is read from meta.
    #[serde(with = "humantime_serde")]
    pub refresh_interval: Duration,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            authentication_enabled: false,
            authorization_enabled: false,
            init_user: None,
            init_password: None,
            encryption_key: None,
            whitelist: Vec::new(),
            namesrv_checks: false,
            refresh_interval: Duration::from_secs(1),
        }
    }
}

/// Retention: how long and how much each shard keeps, and the cleanup of objects that were
/// uploaded but never committed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionSettings {
    /// Sections whose newest message is older than this are deleted
    /// (`fileReservedTime`, 72 h in the reference); a topic's `retention_hours` overrides it.
    #[serde(with = "humantime_serde")]
    pub time: Duration,
    /// Most section bytes one shard keeps; the oldest sections go first above it. 0: no limit.
    pub shard_bytes: ByteSize,
    /// How often retention runs over every owned shard.
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    /// An object that no section references is deleted only once it is this old (an upload
    /// whose commit is still under way is younger).
    #[serde(with = "humantime_serde")]
    pub orphan_grace: Duration,
    /// How often the object store is listed for orphaned objects.
    #[serde(with = "humantime_serde")]
    pub orphan_scan_interval: Duration,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self {
            time: Duration::from_secs(72 * 3600),
            shard_bytes: ByteSize::b(0),
            interval: Duration::from_secs(300),
            orphan_grace: Duration::from_secs(3600),
            orphan_scan_interval: Duration::from_secs(3600),
        }
    }
}

/// The metrics endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// `host:port` of the HTTP `/metrics` endpoint (RocketMQ 5's `metricsPromExporterPort`
    /// is 5557); `"off"` or `""` disables it.
    pub addr: String,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self {
            addr: "127.0.0.1:5557".into(),
        }
    }
}

/// TLS mode of every listener (`tls.server.mode` of the reference).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// Plaintext only.
    #[default]
    Off,
    /// TLS and plaintext on the same port, chosen by the connection's first byte.
    Permissive,
    /// TLS only.
    Enforcing,
}

/// Client certificates (`tls.server.need.client.auth` of the reference).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// Not asked for.
    #[default]
    None,
    /// Verified against `client_ca_file` when the client sends one.
    Optional,
    /// Required and verified against `client_ca_file`.
    Require,
}

/// TLS on the name-server port, every shard port and `/metrics`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSettings {
    /// `off`, `permissive` (TLS or plaintext, by the first byte) or `enforcing`.
    pub mode: TlsMode,
    /// PEM certificate chain, the server's certificate first; read again when it changes.
    pub cert_file: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1); read again when it changes.
    pub key_file: Option<PathBuf>,
    /// Client certificates: `none`, `optional` or `require`.
    pub client_auth: ClientAuth,
    /// PEM CA certificates client certificates must chain to.
    pub client_ca_file: Option<PathBuf>,
    /// How often the files are checked for changes.
    #[serde(with = "humantime_serde")]
    pub reload_interval: Duration,
    /// A connection that has not completed its handshake by then is closed.
    #[serde(with = "humantime_serde")]
    pub handshake_timeout: Duration,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            mode: TlsMode::Off,
            cert_file: None,
            key_file: None,
            client_auth: ClientAuth::None,
            client_ca_file: None,
            reload_interval: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// Transactional messages (`BrokerConfig` transaction settings).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TransactionSettings {
    /// A half message not ended within this time is checked back (`transactionTimeOut`);
    /// the message's CHECK_IMMUNITY_TIME_IN_SECONDS can only lengthen it.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// How often pending half messages are checked (`transactionCheckInterval`).
    #[serde(with = "humantime_serde")]
    pub check_interval: Duration,
    /// Check-backs per half message before it is given up (`transactionCheckMax`).
    pub max_checks: i32,
    /// After the last check: discard the half message (true), or keep it pending and stop
    /// checking (false). Either way it is logged.
    pub discard_after_max_checks: bool,
}

impl Default for TransactionSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(6),
            check_interval: Duration::from_secs(30),
            max_checks: 15,
            discard_after_max_checks: true,
        }
    }
}

/// Identity of this node.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct NodeSettings {
    /// Node id, stable across restarts of this node; names its segment objects.
    pub id: String,
    /// Directory for local state: the embedded metadata database and, by default, the
    /// object store directory.
    pub data_dir: PathBuf,
    /// Cluster name published in routes and cluster info.
    pub cluster_name: String,
    /// Shards (logical brokers) of the cluster; each appears in routes as `broker-<n>` and
    /// every topic has its queues on each. Nodes share them fairly. Raising it later adds
    /// shards (like adding brokers); lowering it is not supported.
    pub shards: u32,
    /// Longest time shutdown may take before the process exits non-zero.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
}

/// Addresses.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ListenSettings {
    /// Name-server port; it also answers broker requests.
    pub namesrv_addr: SocketAddr,
    /// First broker port: shard `s` is served on this port + 3·`s` while this node owns it
    /// (bound when taken, closed when given up). Broker ports answer name-server requests too.
    pub broker_addr: SocketAddr,
    /// `host:port` clients are told to dial for this node's first broker port (shard `s`:
    /// port + 3·`s`; used in routes and message ids); defaults to `broker_addr`.
    pub advertised_addr: Option<String>,
    /// Also serve each shard on its port − 2: the VIP channel that the Dashboard (on by
    /// default) and Java clients up to 4.4 dial (`vipChannelEnabled`, `isVIPChannel`).
    pub vip_channel: bool,
}

/// RocketMQ broker behaviour.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct BrokerSettings {
    /// Create an unknown topic on its first send, from `TBW102`, whose route is published
    /// only while this is on (`autoCreateTopicEnable`). Route lookups never create a topic.
    pub auto_create_topic: bool,
    /// Queues of `TBW102` (`defaultTopicQueueNums`); a topic created by a send gets
    /// min(the queues the producer asks for, this).
    pub default_topic_queue_nums: i32,
    /// Largest message body, and largest batch body (`maxMessageSize`).
    pub max_message_size: ByteSize,
    /// Hold pulls that find nothing until a message arrives (`longPollingEnable`).
    pub long_polling: bool,
    /// Hold time of a pull when long polling is off (`shortPollingTimeMills`).
    #[serde(with = "humantime_serde")]
    pub short_polling: Duration,
    /// Longest hold of a parked pull, whatever the client asks.
    #[serde(with = "humantime_serde")]
    pub max_suspend: Duration,
    /// A client channel without a heartbeat for this long is dropped (`channelExpiredTimeout`).
    #[serde(with = "humantime_serde")]
    pub channel_expired_timeout: Duration,
    /// Delay of each delay level, 1-based (`messageDelayLevel`; units s, m, h, d).
    pub message_delay_level: String,
    /// An orderly consumer's queue lock not renewed for this long is free again
    /// (`rocketmq.broker.rebalance.lockMaxLiveTime`).
    #[serde(with = "humantime_serde")]
    pub queue_lock_expiry: Duration,
    /// Most messages one pull returns.
    pub max_pull_messages: usize,
    /// Most bytes one pull returns (the first message is always returned).
    pub max_pull_bytes: ByteSize,
    /// Create a consumer's subscription group in meta at its first heartbeat
    /// (`autoCreateSubscriptionGroup`); when off, only groups made by an operator (and the
    /// system groups) may consume.
    pub auto_create_subscription_group: bool,
}

/// Object storage and group commit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// Object store URL: `file:///abs/dir` or `file://relative/dir`, `memory://`, or
    /// `s3://bucket/prefix` (the optional prefix starts every object key; `s3_*` settings
    /// apply). Default: `<data_dir>/objects`.
    pub object_store_url: Option<String>,
    /// S3 endpoint, e.g. `http://127.0.0.1:9000` (MinIO); unset = AWS for `s3_region`.
    pub s3_endpoint: Option<String>,
    /// S3 region, used for request signing and for the AWS endpoint.
    pub s3_region: String,
    /// S3 access key id; unset (with the secret) = the AWS environment (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, web identity, instance metadata).
    pub s3_access_key_id: Option<String>,
    /// S3 secret access key, set together with `s3_access_key_id`; print-config hides it.
    pub s3_secret_access_key: Option<String>,
    /// Path-style requests (`endpoint/bucket/key`) rather than virtual-hosted ones
    /// (`bucket.endpoint/key`); unset = true when `s3_endpoint` is set, false for AWS.
    pub s3_path_style: Option<bool>,
    /// Allow a plain-HTTP `s3_endpoint` (requests and data travel unencrypted).
    pub s3_allow_http: bool,
    /// Segments larger than this are uploaded in parts (multipart; parts of at least 5 MiB).
    pub multipart_threshold: ByteSize,
    /// `file://` stores: fsync each segment file and its directory before the meta commit,
    /// so an acknowledged message survives a power loss, not only a crash of the process.
    pub file_fsync: bool,
    /// Seal the open segment when it reaches this size.
    pub segment_max_bytes: ByteSize,
    /// Group-commit pace: at most one segment sealed per linger; a message after a quiet
    /// linger is sealed at once, others wait for the current linger to end. It bounds the
    /// object PUTs per second (1 / linger). Unset: 2 ms on `file://` and `memory://` (no
    /// cost per request), 5 ms on `s3://` (every PUT is billed).
    #[serde(default, with = "humantime_serde::option")]
    pub linger: Option<Duration>,
    /// Bytes accepted but not yet durable; above it sends get SYSTEM_BUSY.
    pub max_buffered_bytes: ByteSize,
    /// Segment uploads in flight at once.
    pub upload_concurrency: usize,
    /// A send not durable within this time fails with FLUSH_DISK_TIMEOUT.
    #[serde(with = "humantime_serde")]
    pub durable_timeout: Duration,
    /// Capacity of the tail cache (recent segments kept whole).
    pub tail_cache: ByteSize,
    /// Capacity of the block cache (ranged reads of older segments).
    pub block_cache: ByteSize,
    /// Capacity of the footer (ConsumeQueue index) cache.
    pub footer_cache: ByteSize,
    /// Index every stored message's keys (`KEYS` words and `UNIQ_KEY`) in meta, in the
    /// commit of its segment, for QUERY_MESSAGE (mqadmin `queryMsgByKey`,
    /// `queryMsgByUniqueKey`, message traces). Off: one meta row per key less per message
    /// on the send path, and messages stored meanwhile are not found by key.
    pub key_index: bool,
}

/// Metadata database.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetaSettings {
    /// `embedded://<path>` (SQLite) or `memory://`. Default: `<data_dir>/meta.db`.
    pub url: Option<String>,
    /// Shard lease time to live.
    #[serde(with = "humantime_serde")]
    pub lease_ttl: Duration,
}

/// Connection limits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LimitSettings {
    /// Open connections at once, over every port. A connection past it is accepted and
    /// closed at once, unless the longest-idle connection can be evicted to make room.
    pub max_connections: usize,
    /// Open connections from one client IP address; past it new ones from that address are
    /// accepted and closed at once (no eviction).
    pub max_connections_per_ip: usize,
    /// Requests one connection has in progress; at it the connection is not read until one
    /// finishes (TCP backpressure). Parked pulls do not count while parked.
    pub max_in_flight_per_connection: usize,
    /// Requests in progress on the whole node, over every connection; connections take
    /// turns (first come, first served) for the free ones.
    pub max_in_flight: usize,
    /// Pulls parked for long polling at once; above it pulls are answered at once.
    pub max_parked_pulls: usize,
    /// Largest frame accepted (16 MiB is the protocol's limit).
    pub max_frame: ByteSize,
    /// Largest header accepted.
    pub max_header: ByteSize,
    /// Responses queued per connection for its writer; requests whose answer waits for
    /// room keep their connection's in-flight slot, so a client that does not read stalls
    /// only itself.
    pub writer_queue: usize,
    /// A connection without a request for this long is closed.
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
}

impl Default for NodeSettings {
    fn default() -> Self {
        Self {
            id: "node-1".into(),
            data_dir: PathBuf::from("./data"),
            cluster_name: "DefaultCluster".into(),
            shards: 1,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl Default for ListenSettings {
    fn default() -> Self {
        Self {
            namesrv_addr: SocketAddr::from(([127, 0, 0, 1], 9876)),
            broker_addr: SocketAddr::from(([127, 0, 0, 1], 10911)),
            advertised_addr: None,
            vip_channel: true,
        }
    }
}

impl Default for BrokerSettings {
    fn default() -> Self {
        Self {
            auto_create_topic: true,
            default_topic_queue_nums: 8,
            max_message_size: ByteSize::mib(4),
            long_polling: true,
            short_polling: Duration::from_secs(1),
            max_suspend: Duration::from_secs(20),
            channel_expired_timeout: Duration::from_secs(120),
            queue_lock_expiry: Duration::from_secs(60),
            message_delay_level: "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
                .into(),
            max_pull_messages: 32,
            max_pull_bytes: ByteSize::kib(256),
            auto_create_subscription_group: true,
        }
    }
}

impl Default for StorageSettings {
    fn default() -> Self {
        Self {
            object_store_url: None,
            s3_endpoint: None,
            s3_region: "us-east-1".into(),
            s3_access_key_id: None,
            s3_secret_access_key: None,
            s3_path_style: None,
            s3_allow_http: false,
            file_fsync: true,
            key_index: true,
            multipart_threshold: ByteSize::mib(16),
            segment_max_bytes: ByteSize::mib(4),
            linger: None,
            max_buffered_bytes: ByteSize::mib(64),
            upload_concurrency: 4,
            durable_timeout: Duration::from_secs(10),
            tail_cache: ByteSize::mib(256),
            block_cache: ByteSize::mib(128),
            footer_cache: ByteSize::mib(32),
        }
    }
}

impl Default for MetaSettings {
    fn default() -> Self {
        Self {
            url: None,
            lease_ttl: Duration::from_secs(10),
        }
    }
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            max_connections: 10_000,
            max_connections_per_ip: 1000,
            max_in_flight_per_connection: 256,
            max_in_flight: 2048,
            max_parked_pulls: 100_000,
            max_frame: ByteSize::b(16_777_212),
            max_header: ByteSize::mib(1),
            writer_queue: 256,
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// A setting that failed validation.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The layers could not be merged or parsed.
    #[error("configuration: {0}")]
    Load(#[from] Box<figment::Error>),
    /// A value is out of range.
    #[error("invalid setting {key}: {why}")]
    Invalid {
        /// Dotted key.
        key: &'static str,
        /// Why.
        why: String,
    },
}

impl Settings {
    /// Loads defaults, then `file` (if given), then `STRATUS_` environment variables.
    ///
    /// # Errors
    /// [`ConfigError`] when a layer does not parse or a value is invalid.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut fig = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(f) = file {
            fig = fig.merge(Toml::file_exact(f));
        }
        // Only `STRATUS_<SECTION>__<KEY>` variables are settings; other `STRATUS_*`
        // variables (log format, test switches) are not.
        fig = fig.merge(
            Env::prefixed("STRATUS_")
                .filter(|k| k.as_str().contains("__"))
                .split("__"),
        );
        let settings: Settings = fig.extract().map_err(Box::new)?;
        settings.validate()?;
        Ok(settings)
    }

    /// Checks ranges.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key, why: &str| {
            Err(ConfigError::Invalid {
                key,
                why: why.to_owned(),
            })
        };
        if self.node.shards == 0 || self.node.shards > 4096 {
            return bad("node.shards", "must be between 1 and 4096");
        }
        let port = u32::from(self.listen.broker_addr.port());
        let last = port + crate::node::shards::SHARD_PORT_STRIDE * (self.node.shards - 1);
        if port == 0 || last > 65535 {
            return bad(
                "listen.broker_addr",
                "port must be non-zero and leave room for every shard's port (port + 3 * (shards - 1) <= 65535)",
            );
        }
        if self.listen.vip_channel && port < 3 {
            return bad(
                "listen.broker_addr",
                "with listen.vip_channel the port must be at least 3 (port - 2 serves the VIP channel)",
            );
        }
        if self.tls.mode != TlsMode::Off {
            if self.tls.cert_file.is_none() || self.tls.key_file.is_none() {
                return bad(
                    "tls.mode",
                    "permissive and enforcing need tls.cert_file and tls.key_file",
                );
            }
            if self.tls.client_auth != ClientAuth::None && self.tls.client_ca_file.is_none() {
                return bad(
                    "tls.client_auth",
                    "optional and require need tls.client_ca_file",
                );
            }
            if self.tls.reload_interval.is_zero() || self.tls.handshake_timeout.is_zero() {
                return bad(
                    "tls.reload_interval",
                    "tls.reload_interval and tls.handshake_timeout must be positive",
                );
            }
        }
        if self.auth.init_user.is_some() != self.auth.init_password.is_some()
            || self.auth.init_user.as_deref().is_some_and(str::is_empty)
            || self
                .auth
                .init_password
                .as_deref()
                .is_some_and(str::is_empty)
        {
            return bad(
                "auth.init_user",
                "auth.init_user and auth.init_password come together, neither empty",
            );
        }
        let auth_on = self.auth.authentication_enabled || self.auth.authorization_enabled;
        if (self.auth.init_user.is_some() || auth_on) && self.auth.encryption_key.is_none() {
            return bad(
                "auth.encryption_key",
                "auth.init_user and the auth switches need auth.encryption_key (passwords are stored encrypted)",
            );
        }
        if self
            .auth
            .encryption_key
            .as_deref()
            .is_some_and(|k| k.len() < 16)
        {
            return bad("auth.encryption_key", "must be at least 16 characters");
        }
        if self.auth.refresh_interval.is_zero() {
            return bad("auth.refresh_interval", "must be positive");
        }
        if self.node.id.is_empty()
            || !self
                .node
                .id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return bad("node.id", "must be non-empty [A-Za-z0-9_-]");
        }
        if !(1..=1024).contains(&self.broker.default_topic_queue_nums) {
            return bad(
                "broker.default_topic_queue_nums",
                "must be between 1 and 1024",
            );
        }
        if self.broker.max_message_size.as_u64() == 0
            || self.broker.max_message_size.as_u64() > 15 * 1024 * 1024
        {
            return bad(
                "broker.max_message_size",
                "must be between 1 byte and 15 MiB",
            );
        }
        if let Err(e) = parse_delay_levels(&self.broker.message_delay_level) {
            return bad("broker.message_delay_level", &e);
        }
        if self.transaction.max_checks < 1 {
            return bad("transaction.max_checks", "must be at least 1");
        }
        if self.transaction.check_interval.is_zero() {
            return bad("transaction.check_interval", "must be positive");
        }
        if self.retention.time.is_zero() {
            return bad("retention.time", "must be positive");
        }
        if self.retention.interval.is_zero() || self.retention.orphan_scan_interval.is_zero() {
            return bad(
                "retention.interval",
                "interval and orphan_scan_interval must be positive",
            );
        }
        if self.kafka.enabled {
            let port = u32::from(self.kafka.listen_addr.port());
            if port == 0 || port + (self.node.shards - 1) > 65535 {
                return bad(
                    "kafka.listen_addr",
                    "port must be non-zero and leave room for every shard's port (port + shards - 1 <= 65535)",
                );
            }
        }
        if !(1..=100_000).contains(&self.kafka.default_partitions) {
            return bad("kafka.default_partitions", "must be between 1 and 100000");
        }
        if self.kafka.max_request_bytes.as_u64() < 1024
            || self.kafka.max_request_bytes.as_u64() > 1 << 30
        {
            return bad("kafka.max_request_bytes", "must be between 1 KiB and 1 GiB");
        }
        if self.kafka.group_min_session_timeout > self.kafka.group_max_session_timeout {
            return bad(
                "kafka.group_min_session_timeout",
                "must not exceed kafka.group_max_session_timeout",
            );
        }
        if let Err(e) = parse_metrics_addr(&self.metrics.addr) {
            return bad("metrics.addr", &e);
        }

        if self.stats.max_keys == 0 || self.stats.metrics_label_cap == 0 {
            return bad(
                "stats.max_keys",
                "max_keys and metrics_label_cap must be at least 1",
            );
        }
        if self.storage.upload_concurrency == 0 {
            return bad("storage.upload_concurrency", "must be at least 1");
        }
        if self.storage.segment_max_bytes.as_u64() < 1024 {
            return bad("storage.segment_max_bytes", "must be at least 1 KiB");
        }
        match (
            &self.storage.s3_access_key_id,
            &self.storage.s3_secret_access_key,
        ) {
            (Some(_), None) => {
                return bad(
                    "storage.s3_secret_access_key",
                    "must be set with storage.s3_access_key_id",
                );
            }
            (None, Some(_)) => {
                return bad(
                    "storage.s3_access_key_id",
                    "must be set with storage.s3_secret_access_key",
                );
            }
            _ => {}
        }
        if self.storage.multipart_threshold.as_u64() < 5 * 1024 * 1024 {
            return bad(
                "storage.multipart_threshold",
                "must be at least 5 MiB (S3's smallest part)",
            );
        }
        if self.limits.max_in_flight_per_connection == 0
            || self.limits.max_in_flight == 0
            || self.limits.writer_queue == 0
        {
            return bad(
                "limits",
                "max_in_flight_per_connection, max_in_flight and writer_queue must be at least 1",
            );
        }
        if self.limits.max_connections == 0 || self.limits.max_connections_per_ip == 0 {
            return bad(
                "limits.max_connections",
                "max_connections and max_connections_per_ip must be at least 1",
            );
        }
        if self.limits.max_in_flight > tokio::sync::Semaphore::MAX_PERMITS
            || self.limits.max_in_flight_per_connection > tokio::sync::Semaphore::MAX_PERMITS
        {
            return bad("limits.max_in_flight", "too large");
        }
        if stratus_compat::FrameLimits::try_new(
            self.limits.max_frame.as_usize(),
            self.limits.max_header.as_usize(),
        )
        .is_err()
        {
            return bad(
                "limits.max_frame",
                "max_header ≤ max_frame ≤ 16777212 required",
            );
        }
        Ok(())
    }

    /// Validates and parses every derived value once: the node's checked [`Config`].
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the key.
    pub fn check(self) -> Result<Config, ConfigError> {
        self.validate()?;
        let invalid = |key, why: String| ConfigError::Invalid { key, why };
        let frame_limits = stratus_compat::FrameLimits::try_new(
            self.limits.max_frame.as_usize(),
            self.limits.max_header.as_usize(),
        )
        .map_err(|e| invalid("limits.max_frame", e.to_string()))?;
        let delay_levels = parse_delay_levels(&self.broker.message_delay_level)
            .map_err(|e| invalid("broker.message_delay_level", e))?;
        let metrics_addr =
            parse_metrics_addr(&self.metrics.addr).map_err(|e| invalid("metrics.addr", e))?;
        let object_store = ObjectStoreUrl::parse(&self.object_store_url())
            .map_err(|e| invalid("storage.object_store_url", e))?;
        Ok(Config {
            meta_url: self.meta_url(),
            linger: self.linger(),
            advertised_addr: self.advertised_addr(),
            object_store,
            frame_limits,
            delay_levels,
            metrics_addr,
            settings: self,
        })
    }

    /// The effective metadata URL.
    pub fn meta_url(&self) -> String {
        self.meta.url.clone().unwrap_or_else(|| {
            format!(
                "embedded://{}",
                self.node.data_dir.join("meta.db").display()
            )
        })
    }

    /// The effective object store URL.
    pub fn object_store_url(&self) -> String {
        self.storage
            .object_store_url
            .clone()
            .unwrap_or_else(|| format!("file://{}", self.node.data_dir.join("objects").display()))
    }

    /// The group-commit linger: `storage.linger`, else 5 ms on S3 and 2 ms elsewhere.
    fn linger(&self) -> Duration {
        self.storage.linger.unwrap_or_else(|| {
            if self.object_store_url().starts_with("s3://") {
                Duration::from_millis(5)
            } else {
                Duration::from_millis(2)
            }
        })
    }

    /// The address put in routes and message ids.
    pub fn advertised_addr(&self) -> String {
        self.listen
            .advertised_addr
            .clone()
            .unwrap_or_else(|| self.listen.broker_addr.to_string())
    }

    /// `host:port` Kafka clients dial for shard 0.
    pub fn kafka_advertised_addr(&self) -> String {
        self.kafka
            .advertised_addr
            .clone()
            .unwrap_or_else(|| self.kafka.listen_addr.to_string())
    }

    /// The effective settings as TOML, with derived defaults filled in.
    pub fn to_toml(&self) -> String {
        let mut effective = self.clone();
        effective.meta.url = Some(self.meta_url());
        effective.storage.object_store_url = Some(self.object_store_url());
        effective.storage.linger = Some(self.linger());
        effective.listen.advertised_addr = Some(self.advertised_addr());
        if effective.storage.s3_secret_access_key.is_some() {
            effective.storage.s3_secret_access_key = Some("<hidden>".into());
        }
        for secret in [
            &mut effective.auth.init_password,
            &mut effective.auth.encryption_key,
        ] {
            if secret.is_some() {
                *secret = Some("<hidden>".into());
            }
        }
        toml::to_string_pretty(&effective).unwrap_or_else(|e| format!("# cannot render: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linger_defaults_follow_the_object_store() {
        let mut s = Settings::default();
        assert_eq!(s.linger(), Duration::from_millis(2));
        s.storage.object_store_url = Some("s3://bucket/p".into());
        assert_eq!(s.linger(), Duration::from_millis(5));
        s.storage.linger = Some(Duration::from_millis(9));
        assert_eq!(s.linger(), Duration::from_millis(9));
        assert!(s.to_toml().contains("linger = \"9ms\""));
    }

    #[test]
    fn defaults_are_valid_and_match_rocketmq() {
        let s = Settings::default();
        s.validate().unwrap();
        assert_eq!(s.listen.namesrv_addr.port(), 9876);
        assert_eq!(s.listen.broker_addr.port(), 10911);
        assert_eq!(s.broker.max_message_size, ByteSize::mib(4));
        assert_eq!(s.meta_url(), "embedded://./data/meta.db");
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API returns its own large error
    fn example_config_parses_and_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/stratus.example.toml");
        // Inside a jail: other tests set STRATUS_* variables in their jails meanwhile.
        figment::Jail::expect_with(|_jail| {
            let s = Settings::load(Some(&path)).unwrap();
            assert_eq!(s.node.shards, 1);
            Ok(())
        });
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.toml");
        std::fs::write(&f, "[node]\nshardz = 3\n").unwrap();
        let err = Settings::load(Some(&f)).unwrap_err().to_string();
        assert!(err.contains("shardz"), "{err}");
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API returns its own large error
    fn environment_overrides_the_file_and_other_variables_are_ignored() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("s.toml", "[node]\nshards = 2\n")?;
            jail.set_env("STRATUS_NODE__SHARDS", "3");
            jail.set_env("STRATUS_LOG_FORMAT", "json");
            jail.set_env("STRATUS_REQUIRE_CLIENTS", "1");
            let s = Settings::load(Some(Path::new("s.toml"))).expect("loads");
            assert_eq!(s.node.shards, 3);
            Ok(())
        });
    }

    #[test]
    fn invalid_values_name_their_key() {
        let mut s = Settings::default();
        s.node.shards = 0;
        assert!(
            s.validate()
                .unwrap_err()
                .to_string()
                .contains("node.shards")
        );
    }

    #[test]
    fn sizes_parse_and_print_exactly() {
        let s: ByteSize = serde_json::from_str("\"16777212B\"").unwrap();
        assert_eq!(s.as_u64(), 16_777_212);
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"16777212B\"");
        let s: ByteSize = serde_json::from_str("\"4MiB\"").unwrap();
        assert_eq!(s, ByteSize::mib(4));
        assert_eq!(
            serde_json::to_string(&ByteSize::kib(256)).unwrap(),
            "\"256KiB\""
        );
        let s: ByteSize = serde_json::from_str("1000").unwrap();
        assert_eq!(s.as_u64(), 1000);
        assert!(serde_json::from_str::<ByteSize>("\"lots\"").is_err());
    }

    #[test]
    fn s3_credentials_come_in_pairs_and_print_config_hides_the_secret() {
        let mut s = Settings::default();
        s.storage.s3_access_key_id = Some("AKIA".into());
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("storage.s3_secret_access_key"), "{err}");
        s.storage.s3_secret_access_key = Some("very-secret".into());
        s.validate().unwrap();
        let text = s.to_toml();
        assert!(!text.contains("very-secret"), "{text}");
        assert!(text.contains("s3_access_key_id = \"AKIA\""), "{text}");
        s.storage.multipart_threshold = ByteSize::mib(4);
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("storage.multipart_threshold"), "{err}");
    }

    #[test]
    fn auth_settings_are_checked_and_print_config_hides_their_secrets() {
        let mut s = Settings::default();
        assert!(!s.auth.authentication_enabled && !s.auth.authorization_enabled);
        s.auth.init_user = Some("root".into());
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("auth.init_user"), "{err}");
        s.auth.init_password = Some("rootpassword".into());
        let err = s.validate().unwrap_err().to_string();
        assert!(err.contains("auth.encryption_key"), "{err}");
        s.auth.encryption_key = Some("short".into());
        assert!(s.validate().is_err());
        s.auth.encryption_key = Some("0123456789abcdef-key".into());
        s.validate().unwrap();
        let mut on = Settings::default();
        on.auth.authorization_enabled = true;
        let err = on.validate().unwrap_err().to_string();
        assert!(err.contains("auth.encryption_key"), "{err}");
        let text = s.to_toml();
        assert!(
            !text.contains("rootpassword") && !text.contains("0123456789abcdef"),
            "{text}"
        );
        assert!(text.contains("init_user = \"root\""), "{text}");
    }

    #[test]
    fn print_config_round_trips() {
        let s = Settings::default();
        let text = s.to_toml();
        let back: Settings = toml::from_str(&text).unwrap();
        assert_eq!(back.node, s.node);
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API returns its own large error
    fn retention_and_metrics_settings_come_from_the_environment() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("STRATUS_RETENTION__TIME", "2s");
            jail.set_env("STRATUS_RETENTION__SHARD_BYTES", "64KiB");
            jail.set_env("STRATUS_RETENTION__ORPHAN_GRACE", "0s");
            jail.set_env("STRATUS_METRICS__ADDR", "off");
            let s = Settings::load(None).expect("loads");
            assert_eq!(s.retention.time, Duration::from_secs(2));
            assert_eq!(s.retention.shard_bytes, ByteSize::kib(64));
            assert_eq!(s.retention.orphan_grace, Duration::ZERO);
            assert_eq!(s.retention.interval, Duration::from_secs(300));
            assert_eq!(s.metrics.addr, "off");
            Ok(())
        });
        let mut s = Settings::default();
        s.metrics.addr = "nowhere".into();
        assert!(
            s.validate()
                .unwrap_err()
                .to_string()
                .contains("metrics.addr")
        );
        let mut s = Settings::default();
        s.retention.interval = Duration::ZERO;
        assert!(s.validate().unwrap_err().to_string().contains("retention."));
    }
    #[test]
    fn urls_parse_into_targets() {
        assert_eq!(
            ObjectStoreUrl::parse("memory://").unwrap(),
            ObjectStoreUrl::Memory
        );
        assert_eq!(
            ObjectStoreUrl::parse("file:///tmp/x").unwrap(),
            ObjectStoreUrl::File("/tmp/x".into())
        );
        assert_eq!(
            ObjectStoreUrl::parse("s3://bucket").unwrap(),
            ObjectStoreUrl::S3 {
                bucket: "bucket".into(),
                prefix: String::new()
            }
        );
        assert_eq!(
            ObjectStoreUrl::parse("s3://my-bucket/cluster-a/x/").unwrap(),
            ObjectStoreUrl::S3 {
                bucket: "my-bucket".into(),
                prefix: "cluster-a/x".into()
            }
        );
    }

    #[test]
    fn bad_urls_name_the_setting() {
        for url in [
            "s3://",
            "s3:///prefix",
            "s3://bad bucket/x",
            "gs://b/x",
            "s3://b/a/../c",
        ] {
            let e = ObjectStoreUrl::parse(url).unwrap_err();
            assert!(
                Settings {
                    storage: StorageSettings {
                        object_store_url: Some(url.into()),
                        ..StorageSettings::default()
                    },
                    ..Settings::default()
                }
                .check()
                .unwrap_err()
                .to_string()
                .contains("storage.object_store_url"),
                "{url}: {e}"
            );
        }
    }

    #[test]
    fn delay_levels_parse_like_the_reference() {
        let l = parse_delay_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
            .unwrap();
        assert_eq!(l.len(), 18);
        assert_eq!(l[2], Duration::from_secs(10));
        assert_eq!(l[17], Duration::from_secs(7200));
        assert_eq!(
            parse_delay_levels("1d").unwrap(),
            vec![Duration::from_secs(86_400)]
        );
        assert!(parse_delay_levels("5x").is_err());
        assert!(parse_delay_levels("").is_err());
    }

    #[test]
    fn metrics_addresses_parse_or_are_off() {
        assert_eq!(parse_metrics_addr("off"), Ok(None));
        assert_eq!(parse_metrics_addr(""), Ok(None));
        assert_eq!(
            parse_metrics_addr("127.0.0.1:5557"),
            Ok(Some("127.0.0.1:5557".parse().unwrap()))
        );
        assert!(parse_metrics_addr("localhost").is_err());
    }
}
