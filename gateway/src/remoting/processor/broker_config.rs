//! GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25).
//!
//! GET answers the node's settings as Java properties text: the reference's key names where
//! a setting corresponds (`brokerClusterName`, `maxMessageSize`, `fileReservedTime`, …),
//! every Stratus setting as `stratus.<section>.<key>`, and the keys set at run time. UPDATE
//! keeps keys in meta (KV namespace [`NAMESPACE`]), so a change made through one node is
//! read by every node; keys that come from the node's settings are fixed until a restart
//! and are refused as the reference refuses its black-listed keys (NO_PERMISSION). Stratus
//! itself does not act on the run-time keys: they are kept for tools and operators.

use std::collections::BTreeMap;
use std::sync::Arc;

use stratus_compat::command::RemotingCommand;
use stratus_compat::request::stats::{GetBrokerConfigResponseHeader, parse_properties};

use crate::config::{Settings, millis};
use crate::error::{GatewayError, Result};
use crate::remoting::Remoting;
use crate::remoting::dispatch::success;

/// The meta KV namespace of run-time broker config.
pub(crate) const NAMESPACE: &str = "STRATUS_BROKER_CONFIG";
/// Its key holding the run-time keys as properties text.
const OVERRIDES: &str = "overrides";
/// Its key holding the update counter (the data version's `counter`).
const VERSION: &str = "version";

/// Keys the reference never lets UPDATE_BROKER_CONFIG change (`configBlackList`).
const BLACK_LIST: [&str; 2] = ["configBlackList", "brokerConfigPath"];

/// The node's settings under the reference's names, and Stratus's own.
fn fixed(settings: &Settings) -> BTreeMap<String, String> {
    let s = settings;
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        m.insert(k.to_owned(), v);
    };
    put("brokerClusterName", s.node.cluster_name.clone());
    put("brokerId", "0".into());
    put("brokerRole", "ASYNC_MASTER".into());
    // Acknowledged sends are durable in the object store and meta.
    put("flushDiskType", "SYNC_FLUSH".into());
    put("listenPort", s.listen.broker_addr.port().to_string());
    let advertised = s.advertised_addr();
    put(
        "brokerIP1",
        advertised
            .rsplit_once(':')
            .map_or(advertised.clone(), |(h, _)| h.to_owned()),
    );
    put(
        "autoCreateTopicEnable",
        s.broker.auto_create_topic.to_string(),
    );
    put(
        "defaultTopicQueueNums",
        s.broker.default_topic_queue_nums.to_string(),
    );
    put(
        "maxMessageSize",
        s.broker.max_message_size.as_u64().to_string(),
    );
    put("longPollingEnable", s.broker.long_polling.to_string());
    put(
        "shortPollingTimeMills",
        millis(s.broker.short_polling).to_string(),
    );
    put(
        "channelExpiredTimeout",
        millis(s.broker.channel_expired_timeout).to_string(),
    );
    put("messageDelayLevel", s.broker.message_delay_level.clone());
    put(
        "transactionTimeOut",
        millis(s.transaction.timeout).to_string(),
    );
    put(
        "transactionCheckInterval",
        millis(s.transaction.check_interval).to_string(),
    );
    put("transactionCheckMax", s.transaction.max_checks.to_string());
    put(
        "fileReservedTime",
        (s.retention.time.as_secs() / 3600).to_string(),
    );
    put(
        "serverChannelMaxIdleTimeSeconds",
        s.limits.idle_timeout.as_secs().to_string(),
    );
    if let Ok(Some(addr)) = crate::config::parse_metrics_addr(&s.metrics.addr) {
        put("metricsPromExporterPort", addr.port().to_string());
    }
    put("configBlackList", BLACK_LIST.join(";"));
    // Stratus's own settings, flattened from the effective TOML (secrets hidden there).
    if let Ok(toml::Value::Table(t)) = toml::from_str::<toml::Value>(&s.to_toml()) {
        for (section, v) in t {
            if let toml::Value::Table(keys) = v {
                for (k, v) in keys {
                    let text = match v {
                        toml::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    put(&format!("stratus.{section}.{k}"), text);
                }
            }
        }
    }
    m
}

async fn overrides(rmq: &Remoting) -> Result<(BTreeMap<String, String>, i64)> {
    let meta = &rmq.node.meta;
    let text = meta.get_kv(NAMESPACE, OVERRIDES).await?.unwrap_or_default();
    let version = meta
        .get_kv(NAMESPACE, VERSION)
        .await?
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Ok((parse_properties(&text).into_iter().collect(), version))
}

/// Java properties text of `map`, one `key=value` a line (`\n`, `=` and `:` in keys and
/// line breaks in values escaped as `Properties#store` does).
fn properties_text(map: &BTreeMap<String, String>) -> String {
    let esc = |s: &str, key: bool| {
        let mut o = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '\\' => o.push_str("\\\\"),
                '\n' => o.push_str("\\n"),
                '\r' => o.push_str("\\r"),
                '=' | ':' if key => {
                    o.push('\\');
                    o.push(c);
                }
                c => o.push(c),
            }
        }
        o
    };
    let mut out = String::new();
    for (k, v) in map {
        out.push_str(&esc(k, true));
        out.push('=');
        out.push_str(&esc(v, false));
        out.push('\n');
    }
    out
}

/// GET_BROKER_CONFIG (26).
pub(crate) async fn get(rmq: &Arc<Remoting>) -> Result<RemotingCommand> {
    let mut all = fixed(&rmq.node.config.settings);
    let (runtime, version) = overrides(rmq).await?;
    all.extend(runtime);
    let mut resp = success();
    GetBrokerConfigResponseHeader {
        version: format!(
            "{{\"counter\":{version},\"stateVersion\":0,\"timestamp\":{}}}",
            rmq.node.clock.now_ms()
        ),
    }
    .write_to(&mut resp);
    resp.body = properties_text(&all).into_bytes().into();
    Ok(resp)
}

/// UPDATE_BROKER_CONFIG (25): a properties body; every key is checked before any is kept.
pub(crate) async fn update(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    if cmd.body.is_empty() {
        return Ok(success());
    }
    let text = String::from_utf8_lossy(&cmd.body);
    let changes = parse_properties(&text);
    let fixed = fixed(&rmq.node.config.settings);
    if let Some((k, _)) = changes
        .iter()
        .find(|(k, _)| BLACK_LIST.contains(&k.as_str()) || fixed.contains_key(k))
    {
        return Err(GatewayError::ConfigNotUpdatable { key: k.clone() });
    }
    if changes.is_empty() {
        return Ok(success());
    }
    let (mut runtime, version) = overrides(rmq).await?;
    for (k, v) in changes {
        tracing::info!(key = %k, value = %v, "broker config updated");
        runtime.insert(k, v);
    }
    let meta = &rmq.node.meta;
    meta.put_kv(NAMESPACE, OVERRIDES, &properties_text(&runtime))
        .await?;
    meta.put_kv(NAMESPACE, VERSION, &(version + 1).to_string())
        .await?;
    Ok(success())
}
