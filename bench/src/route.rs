//! Name-server lookups: the topic's route (brokers and queues), cluster info, topic
//! creation on every broker, and queue offsets. Works with Stratus and Apache RocketMQ.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::admin::CreateTopicRequestHeader;
use stratus_compat::request::offset::QueueRequestHeader;
use stratus_compat::request::route::{ClusterInfo, GetRouteInfoRequestHeader, TopicRouteData};
use stratus_compat::{RequestCode, ResponseCode};

use crate::time;

/// One broker of the route: its name and master address, and its queue counts.
#[derive(Debug, Clone)]
pub(crate) struct Broker {
    /// `brokerName` as the route publishes it.
    pub(crate) name: String,
    /// Master address (`brokerAddrs["0"]`).
    pub(crate) addr: String,
    /// Readable queues.
    pub(crate) read_queues: i32,
    /// Writable queues.
    pub(crate) write_queues: i32,
}

/// A topic's route.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// Brokers holding the topic, in route order.
    pub(crate) brokers: Vec<Broker>,
}

impl Route {
    /// Total writable queues.
    pub(crate) fn write_queue_count(&self) -> i32 {
        self.brokers.iter().map(|b| b.write_queues).sum()
    }
}

/// Apache RocketMQ's JSON (fastjson) writes integer map keys bare (`{0:"addr"}`); this
/// quotes them so a standard parser reads the body. Standard JSON passes through unchanged.
pub(crate) fn quote_bare_keys(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len() + 16);
    let mut in_str = false;
    let mut escaped = false;
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        out.push(c);
        i += 1;
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b',' => {
                let mut j = i;
                while j < src.len() && src[j].is_ascii_whitespace() {
                    j += 1;
                }
                let key_start = j;
                if j < src.len() && src[j] == b'-' {
                    j += 1;
                }
                while j < src.len() && src[j].is_ascii_digit() {
                    j += 1;
                }
                let key_end = j;
                while j < src.len() && src[j].is_ascii_whitespace() {
                    j += 1;
                }
                let is_key = key_end > key_start
                    && src[key_start..key_end].iter().any(u8::is_ascii_digit)
                    && src.get(j) == Some(&b':');
                if is_key {
                    out.extend_from_slice(&src[i..key_start]);
                    out.push(b'"');
                    out.extend_from_slice(&src[key_start..key_end]);
                    out.push(b'"');
                    i = key_end;
                }
            }
            _ => {}
        }
    }
    out
}

async fn call(
    client: &RemotingClient,
    cmd: RemotingCommand,
    what: &str,
) -> anyhow::Result<RemotingCommand> {
    let resp = client
        .invoke(cmd, Duration::from_secs(10))
        .await
        .with_context(|| format!("{what}: request failed"))?;
    Ok(resp)
}

/// Looks the topic's route up once; `Ok(None)` when the name server has no route.
pub(crate) async fn lookup(namesrv: &str, topic: &str) -> anyhow::Result<Option<Route>> {
    let client = RemotingClient::connect(namesrv)
        .await
        .with_context(|| format!("connect name server {namesrv}"))?;
    let mut cmd = RemotingCommand::request(RequestCode::GetRouteinfoByTopic.to_i32(), 0);
    GetRouteInfoRequestHeader {
        topic: topic.to_owned(),
        accept_standard_json_only: Some(true),
    }
    .write_to(&mut cmd);
    let resp = call(&client, cmd, "route lookup").await?;
    if resp.code == ResponseCode::TopicNotExist.to_i32() {
        return Ok(None);
    }
    if resp.code != ResponseCode::Success.to_i32() {
        bail!("route lookup for {topic}: {} {:?}", resp.code, resp.remark);
    }
    let data: TopicRouteData =
        serde_json::from_slice(&quote_bare_keys(&resp.body)).context("route body")?;
    let mut brokers = Vec::new();
    for q in &data.queue_datas {
        let Some(b) = data
            .broker_datas
            .iter()
            .find(|b| b.broker_name == q.broker_name)
        else {
            continue;
        };
        let Some(addr) = b.broker_addrs.get("0") else {
            continue;
        };
        brokers.push(Broker {
            name: q.broker_name.clone(),
            addr: addr.clone(),
            read_queues: q.read_queue_nums.max(0),
            write_queues: q.write_queue_nums.max(0),
        });
    }
    if brokers.is_empty() {
        bail!("route of {topic} has no master broker with queues");
    }
    Ok(Some(Route { brokers }))
}

/// Master addresses of every broker the name server knows (GET_BROKER_CLUSTER_INFO),
/// waiting up to 30 s for a broker that has just started to register.
pub(crate) async fn cluster_masters(namesrv: &str) -> anyhow::Result<Vec<String>> {
    let client = RemotingClient::connect(namesrv)
        .await
        .with_context(|| format!("connect name server {namesrv}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cmd = RemotingCommand::request(RequestCode::GetBrokerClusterInfo.to_i32(), 0);
        let resp = call(&client, cmd, "cluster info").await?;
        if resp.code != ResponseCode::Success.to_i32() {
            bail!("cluster info: {} {:?}", resp.code, resp.remark);
        }
        let info: ClusterInfo =
            serde_json::from_slice(&quote_bare_keys(&resp.body)).context("cluster info body")?;
        let addrs: Vec<String> = info
            .broker_addr_table
            .values()
            .filter_map(|b| b.broker_addrs.get("0").cloned())
            .collect();
        if !addrs.is_empty() {
            return Ok(addrs);
        }
        if Instant::now() > deadline {
            bail!("the name server knows no broker after 30 s");
        }
        time::sleep(Duration::from_millis(500)).await;
    }
}

/// Creates (or updates) the topic with `queues` read and write queues on every master
/// broker (UPDATE_AND_CREATE_TOPIC), then waits until the name server routes all of them.
pub(crate) async fn create_topic(namesrv: &str, topic: &str, queues: i32) -> anyhow::Result<Route> {
    let masters = cluster_masters(namesrv).await?;
    for addr in &masters {
        let client = RemotingClient::connect(addr.as_str())
            .await
            .with_context(|| format!("connect broker {addr}"))?;
        let mut cmd = RemotingCommand::request(RequestCode::UpdateAndCreateTopic.to_i32(), 0);
        CreateTopicRequestHeader {
            topic: topic.to_owned(),
            default_topic: "TBW102".into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: None,
        }
        .write_to(&mut cmd);
        let resp = call(&client, cmd, "create topic").await?;
        if resp.code != ResponseCode::Success.to_i32() {
            bail!(
                "create topic {topic} on {addr}: {} {:?}",
                resp.code,
                resp.remark
            );
        }
    }
    // Brokers register the new topic with the name server shortly after creating it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(route) = lookup(namesrv, topic).await?
            && route.brokers.len() >= masters.len()
            && route.brokers.iter().all(|b| b.write_queues == queues)
        {
            return Ok(route);
        }
        if Instant::now() > deadline {
            bail!("topic {topic} not routed with {queues} queues on every broker after 30 s");
        }
        time::sleep(Duration::from_millis(200)).await;
    }
}

/// The topic's route, creating the topic first when `create` is set.
pub(crate) async fn resolve(
    namesrv: &str,
    topic: &str,
    create: bool,
    queues: i32,
) -> anyhow::Result<Route> {
    if create {
        return create_topic(namesrv, topic, queues).await;
    }
    lookup(namesrv, topic)
        .await?
        .with_context(|| format!("topic {topic} has no route (create it or drop --no-create)"))
}

/// GET_MAX_OFFSET (30) of one queue: the next offset to be written.
pub(crate) async fn max_offset(
    client: &RemotingClient,
    topic: &str,
    queue_id: i32,
) -> anyhow::Result<i64> {
    let mut cmd = RemotingCommand::request(RequestCode::GetMaxOffset.to_i32(), 0);
    QueueRequestHeader {
        topic: topic.to_owned(),
        queue_id,
    }
    .write_to(&mut cmd);
    let resp = call(client, cmd, "max offset").await?;
    if resp.code != ResponseCode::Success.to_i32() {
        bail!(
            "max offset of {topic}/{queue_id}: {} {:?}",
            resp.code,
            resp.remark
        );
    }
    resp.ext_fields
        .get("offset")
        .and_then(|v| v.parse().ok())
        .context("max offset reply without a numeric offset")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_integer_keys_are_quoted_and_strings_left_alone() {
        let src =
            br#"{"brokerAddrs":{0:"127.0.0.1:10911", 1 : "x"},"s":"{2:3}","n":[1,2],"m":{-1:"a"}}"#;
        let out = String::from_utf8(quote_bare_keys(src)).unwrap();
        assert_eq!(
            out,
            r#"{"brokerAddrs":{"0":"127.0.0.1:10911", "1" : "x"},"s":"{2:3}","n":[1,2],"m":{"-1":"a"}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["brokerAddrs"]["0"], "127.0.0.1:10911");
        let std = br#"{"a":{"0":"x"},"b":"\"{1:2}"}"#;
        assert_eq!(quote_bare_keys(std), std.to_vec());
    }
}
