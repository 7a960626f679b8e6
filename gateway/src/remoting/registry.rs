//! Producer and consumer registries (in memory, per node): which channels belong to which
//! group, each consumer group's subscriptions, and NOTIFY_CONSUMER_IDS_CHANGED on changes.
//!
//! Mirrors `ConsumerManager`, `ConsumerGroupInfo`, `ProducerManager` and
//! `ClientHousekeepingService` (channel expiry after `channelExpiredTimeout`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use stratus_compat::code::LanguageCode;
use stratus_compat::request::group::{Connection, ConsumerConnection, ProducerConnection};
use stratus_compat::request::heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, SubscriptionData,
};

use crate::remoting::filter::MessageFilter;
use crate::remoting::net::Channel;

/// A stored subscription of a group to a topic.
#[derive(Debug, Clone)]
pub(crate) struct Subscription {
    /// As sent.
    pub(crate) data: SubscriptionData,
    /// Compiled filter (tags recomputed from `sub_string`, never the client's codes).
    pub(crate) filter: MessageFilter,
}

#[derive(Debug)]
struct Member {
    channel: Arc<Channel>,
    client_id: String,
    last_heartbeat_ms: i64,
}

#[derive(Debug)]
struct ConsumerGroupInfo {
    members: HashMap<u64, Member>,
    subscriptions: BTreeMap<String, Subscription>,
    consume_type: ConsumeType,
    message_model: MessageModel,
    consume_from_where: ConsumeFromWhere,
}

#[derive(Debug, Default)]
struct State {
    consumers: HashMap<String, ConsumerGroupInfo>,
    producers: HashMap<String, HashMap<u64, Member>>,
    /// The client id each connection last sent a request-reply request for (its
    /// `REPLY_TO_CLIENT`), by channel id: one entry per connection at most.
    requesters: HashMap<u64, (String, Arc<Channel>)>,
    /// The language and version ordinal of each heartbeating channel, by channel id
    /// (connection lists, GET_ALL_PRODUCER_INFO).
    clients: HashMap<u64, (LanguageCode, i32)>,
    /// Groups whose config turns NOTIFY_CONSUMER_IDS_CHANGED off for registrations and
    /// unregistrations (`notifyConsumerIdsChangedEnable`; a closed channel still notifies,
    /// as the reference).
    quiet: std::collections::HashSet<String>,
}

/// A producer as GET_ALL_PRODUCER_INFO lists it.
#[derive(Debug, Clone)]
pub(crate) struct ProducerEntry {
    pub(crate) group: String,
    pub(crate) client_id: String,
    pub(crate) peer: std::net::SocketAddr,
    pub(crate) language: LanguageCode,
    pub(crate) version: i32,
    pub(crate) last_heartbeat_ms: i64,
}

/// The registry.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    state: Mutex<State>,
}

impl Registry {
    /// Registers a consumer channel from a heartbeat. Returns true when the group's
    /// membership or topic set changed (then members were notified).
    pub(crate) fn register_consumer(
        &self,
        channel: &Arc<Channel>,
        client_id: &str,
        data: &ConsumerData,
        now_ms: i64,
    ) -> bool {
        let mut st = self.state.lock();
        let quiet = st.quiet.contains(&data.group_name);
        let info = st
            .consumers
            .entry(data.group_name.clone())
            .or_insert_with(|| ConsumerGroupInfo {
                members: HashMap::new(),
                subscriptions: BTreeMap::new(),
                consume_type: data.consume_type,
                message_model: data.message_model,
                consume_from_where: data.consume_from_where,
            });
        info.consume_type = data.consume_type;
        info.message_model = data.message_model;
        info.consume_from_where = data.consume_from_where;
        let new_member = match info.members.get_mut(&channel.id) {
            Some(m) => {
                m.last_heartbeat_ms = now_ms;
                m.client_id = client_id.to_owned();
                false
            }
            None => {
                info.members.insert(
                    channel.id,
                    Member {
                        channel: channel.clone(),
                        client_id: client_id.to_owned(),
                        last_heartbeat_ms: now_ms,
                    },
                );
                true
            }
        };
        // Replace the subscription table (ConsumerGroupInfo#updateSubscription): newer or
        // equal versions replace, topics no longer listed are dropped.
        let mut topics_changed = false;
        let listed: Vec<&str> = data
            .subscription_data_set
            .iter()
            .map(|s| s.topic.as_str())
            .collect();
        for sub in &data.subscription_data_set {
            match info.subscriptions.get(&sub.topic) {
                Some(old) if old.data.sub_version > sub.sub_version => {}
                Some(old) => {
                    if old.data.sub_string != sub.sub_string {
                        topics_changed = true;
                    }
                    info.subscriptions
                        .insert(sub.topic.clone(), subscription(sub));
                }
                None => {
                    topics_changed = true;
                    info.subscriptions
                        .insert(sub.topic.clone(), subscription(sub));
                }
            }
        }
        let before = info.subscriptions.len();
        info.subscriptions
            .retain(|t, _| listed.contains(&t.as_str()));
        topics_changed |= before != info.subscriptions.len();
        let changed = new_member || topics_changed;
        if changed && !quiet {
            notify(&data.group_name, info);
        }
        changed
    }

    /// Registers a producer channel.
    pub(crate) fn register_producer(
        &self,
        channel: &Arc<Channel>,
        client_id: &str,
        group: &str,
        now_ms: i64,
    ) {
        let mut st = self.state.lock();
        st.producers.entry(group.to_owned()).or_default().insert(
            channel.id,
            Member {
                channel: channel.clone(),
                client_id: client_id.to_owned(),
                last_heartbeat_ms: now_ms,
            },
        );
    }

    /// UNREGISTER_CLIENT: removes the channel from the named groups.
    pub(crate) fn unregister(
        &self,
        channel_id: u64,
        producer_group: Option<&str>,
        consumer_group: Option<&str>,
    ) {
        let mut st = self.state.lock();
        if let Some(g) = producer_group
            && let Some(p) = st.producers.get_mut(g)
        {
            p.remove(&channel_id);
            if p.is_empty() {
                st.producers.remove(g);
            }
        }
        if let Some(g) = consumer_group {
            if st.quiet.contains(g) {
                remove_consumer_quietly(&mut st, g, channel_id);
            } else {
                remove_consumer(&mut st, g, channel_id);
            }
        }
    }

    /// Connection closed: removes the channel from every group.
    pub(crate) fn channel_closed(&self, channel_id: u64) {
        let mut st = self.state.lock();
        st.requesters.remove(&channel_id);
        st.clients.remove(&channel_id);
        st.producers.retain(|_, members| {
            members.remove(&channel_id);
            !members.is_empty()
        });
        let groups: Vec<String> = st
            .consumers
            .iter()
            .filter(|(_, i)| i.members.contains_key(&channel_id))
            .map(|(g, _)| g.clone())
            .collect();
        for g in groups {
            remove_consumer(&mut st, &g, channel_id);
        }
    }

    /// Drops members whose last heartbeat is older than `expiry_ms`; returns how many.
    pub(crate) fn expire(&self, now_ms: i64, expiry_ms: i64) -> usize {
        let mut st = self.state.lock();
        let mut expired = 0;
        let stale: Vec<(String, u64)> = st
            .consumers
            .iter()
            .flat_map(|(g, i)| {
                i.members
                    .iter()
                    .filter(|(_, m)| now_ms - m.last_heartbeat_ms > expiry_ms)
                    .map(|(id, _)| (g.clone(), *id))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (g, id) in stale {
            remove_consumer(&mut st, &g, id);
            expired += 1;
        }
        for members in st.producers.values_mut() {
            let before = members.len();
            members.retain(|_, m| now_ms - m.last_heartbeat_ms <= expiry_ms);
            expired += before - members.len();
        }
        st.producers.retain(|_, m| !m.is_empty());
        expired
    }

    /// Client ids of a group's live consumers.
    pub(crate) fn consumer_ids(&self, group: &str) -> Vec<String> {
        let st = self.state.lock();
        let mut ids: Vec<String> = st
            .consumers
            .get(group)
            .map(|i| i.members.values().map(|m| m.client_id.clone()).collect())
            .unwrap_or_default();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The group's subscription to `topic`, if the group is registered and subscribes it.
    /// `Err(())` when the group is not registered at all.
    pub(crate) fn subscription(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<Option<Subscription>, ()> {
        let st = self.state.lock();
        let info = st.consumers.get(group).ok_or(())?;
        Ok(info.subscriptions.get(topic).cloned())
    }
}

impl Registry {
    /// Every registered producer, by group.
    pub(crate) fn producers(&self) -> Vec<ProducerEntry> {
        let st = self.state.lock();
        let mut out = Vec::new();
        for (group, members) in &st.producers {
            for (id, m) in members {
                let (language, version) = st.clients.get(id).copied().unwrap_or_default();
                out.push(ProducerEntry {
                    group: group.clone(),
                    client_id: m.client_id.clone(),
                    peer: m.channel.peer,
                    language,
                    version,
                    last_heartbeat_ms: m.last_heartbeat_ms,
                });
            }
        }
        out
    }

    /// Groups with registered consumers.
    pub(crate) fn consumer_groups(&self) -> Vec<String> {
        self.state.lock().consumers.keys().cloned().collect()
    }

    /// How many topics a registered group subscribes (`findSubscriptionDataCount`).
    pub(crate) fn subscription_count(&self, group: &str) -> usize {
        self.state
            .lock()
            .consumers
            .get(group)
            .map_or(0, |i| i.subscriptions.len())
    }

    /// Live channels of a producer group, most recently heartbeating first.
    pub(crate) fn producer_channels(&self, group: &str) -> Vec<Arc<Channel>> {
        let st = self.state.lock();
        let mut members: Vec<&Member> = st
            .producers
            .get(group)
            .map(|m| m.values().collect())
            .unwrap_or_default();
        members.sort_by_key(|m| std::cmp::Reverse(m.last_heartbeat_ms));
        members
            .into_iter()
            .filter(|m| !m.channel.closed.is_cancelled())
            .map(|m| m.channel.clone())
            .collect()
    }
}

impl Registry {
    /// The open channel of `client_id` in consumer `group` that heartbeated last
    /// (`ConsumerManager#findChannel`).
    pub(crate) fn consumer_channel(&self, group: &str, client_id: &str) -> Option<Arc<Channel>> {
        let st = self.state.lock();
        let info = st.consumers.get(group)?;
        latest(info.members.values().filter(|m| m.client_id == client_id))
    }

    /// One open channel per client id of consumer `group` (the one that heartbeated last),
    /// by client id.
    pub(crate) fn consumer_channels_by_client(&self, group: &str) -> Vec<(String, Arc<Channel>)> {
        let st = self.state.lock();
        let Some(info) = st.consumers.get(group) else {
            return Vec::new();
        };
        let mut by_client: BTreeMap<&str, Vec<&Member>> = BTreeMap::new();
        for m in info.members.values() {
            by_client.entry(m.client_id.as_str()).or_default().push(m);
        }
        by_client
            .into_iter()
            .filter_map(|(id, ms)| latest(ms.into_iter()).map(|ch| (id.to_owned(), ch)))
            .collect()
    }

    /// The open channel of producer client `client_id` in any group that heartbeated last
    /// (`ProducerManager#findChannel`).
    pub(crate) fn producer_channel_by_client(&self, client_id: &str) -> Option<Arc<Channel>> {
        let st = self.state.lock();
        latest(
            st.producers
                .values()
                .flat_map(|g| g.values())
                .filter(|m| m.client_id == client_id),
        )
    }
}

impl Registry {
    /// `channel` sent a request whose replies go to `client_id` (its `REPLY_TO_CLIENT`).
    pub(crate) fn note_requester(&self, channel: &Arc<Channel>, client_id: &str) {
        let mut st = self.state.lock();
        match st.requesters.get(&channel.id) {
            Some((c, _)) if c == client_id => {}
            _ => {
                st.requesters
                    .insert(channel.id, (client_id.to_owned(), channel.clone()));
            }
        }
    }

    /// Where replies to `client_id` go: its producer channel (`ProducerManager#findChannel`),
    /// else an open connection on which it sent a request (a requester whose first
    /// heartbeat has not arrived yet).
    pub(crate) fn requester_channel(&self, client_id: &str) -> Option<Arc<Channel>> {
        if let Some(ch) = self.producer_channel_by_client(client_id) {
            return Some(ch);
        }
        let st = self.state.lock();
        st.requesters
            .values()
            .filter(|(c, ch)| c == client_id && !ch.closed.is_cancelled())
            .max_by_key(|(_, ch)| ch.id)
            .map(|(_, ch)| ch.clone())
    }
}

/// The open channel among `members` that heartbeated last.
fn latest<'a>(members: impl Iterator<Item = &'a Member>) -> Option<Arc<Channel>> {
    members
        .filter(|m| !m.channel.closed.is_cancelled())
        .max_by_key(|m| (m.last_heartbeat_ms, m.channel.id))
        .map(|m| m.channel.clone())
}

/// Operators' views (GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST,
/// QUERY_TOPIC_CONSUME_BY_WHO, CLONE_GROUP_OFFSET).
impl Registry {
    /// Whether a consumer group's members are told of membership changes at registration
    /// and unregistration (its `notifyConsumerIdsChangedEnable`).
    pub(crate) fn set_notify_enabled(&self, group: &str, enabled: bool) {
        let mut st = self.state.lock();
        if enabled {
            st.quiet.remove(group);
        } else {
            st.quiet.insert(group.to_owned());
        }
    }

    /// Records the language and version a channel's heartbeat command carried.
    pub(crate) fn set_client_version(&self, channel_id: u64, language: LanguageCode, version: i32) {
        self.state
            .lock()
            .clients
            .insert(channel_id, (language, version));
    }

    /// A consumer group's channels that `on` accepts (those of one shard: a broker lists
    /// the channels to itself), its subscriptions and modes; `None` when it has none.
    pub(crate) fn consumer_connection(
        &self,
        group: &str,
        on: impl Fn(&Channel) -> bool,
    ) -> Option<ConsumerConnection> {
        let st = self.state.lock();
        let info = st.consumers.get(group)?;
        let connection_set = connections(&st, info.members.iter(), on);
        if connection_set.is_empty() {
            return None;
        }
        Some(ConsumerConnection {
            connection_set,
            subscription_table: info
                .subscriptions
                .iter()
                .map(|(t, s)| (t.clone(), s.data.clone()))
                .collect(),
            consume_type: info.consume_type,
            message_model: info.message_model,
            consume_from_where: info.consume_from_where,
        })
    }

    /// A producer group's channels that `on` accepts; `None` when it has none.
    pub(crate) fn producer_connection(
        &self,
        group: &str,
        on: impl Fn(&Channel) -> bool,
    ) -> Option<ProducerConnection> {
        let st = self.state.lock();
        let members = st.producers.get(group)?;
        let connection_set = connections(&st, members.iter(), on);
        (!connection_set.is_empty()).then_some(ProducerConnection { connection_set })
    }

    /// The consumer groups whose members subscribe `topic`, sorted.
    pub(crate) fn groups_subscribing(&self, topic: &str) -> Vec<String> {
        let st = self.state.lock();
        let mut groups: Vec<String> = st
            .consumers
            .iter()
            .filter(|(_, i)| i.subscriptions.contains_key(topic))
            .map(|(g, _)| g.clone())
            .collect();
        groups.sort();
        groups
    }

    /// The topics a registered consumer group subscribes (`None`: not registered).
    pub(crate) fn subscribed_topics(&self, group: &str) -> Option<Vec<String>> {
        let st = self.state.lock();
        st.consumers
            .get(group)
            .map(|i| i.subscriptions.keys().cloned().collect())
    }
}

fn connections<'a>(
    st: &State,
    members: impl Iterator<Item = (&'a u64, &'a Member)>,
    on: impl Fn(&Channel) -> bool,
) -> Vec<Connection> {
    let mut set: Vec<Connection> = members
        .filter(|(_, m)| on(&m.channel))
        .map(|(id, m)| {
            let (language, version) = st
                .clients
                .get(id)
                .copied()
                .unwrap_or((LanguageCode::Java, 0));
            Connection {
                client_id: m.client_id.clone(),
                client_addr: m.channel.peer.to_string(),
                language: language.name().to_owned(),
                version,
            }
        })
        .collect();
    set.sort();
    set
}

/// [`remove_consumer`] without notifying the remaining members.
fn remove_consumer_quietly(st: &mut State, group: &str, channel_id: u64) {
    let Some(info) = st.consumers.get_mut(group) else {
        return;
    };
    info.members.remove(&channel_id);
    if info.members.is_empty() {
        st.consumers.remove(group);
    }
}

fn subscription(sub: &SubscriptionData) -> Subscription {
    Subscription {
        data: sub.clone(),
        filter: MessageFilter::compile(&sub.sub_string, sub.expression_type.as_deref()),
    }
}

fn remove_consumer(st: &mut State, group: &str, channel_id: u64) {
    let Some(info) = st.consumers.get_mut(group) else {
        return;
    };
    if info.members.remove(&channel_id).is_none() {
        return;
    }
    if info.members.is_empty() {
        st.consumers.remove(group);
    } else {
        notify(group, info);
    }
}

/// Sends NOTIFY_CONSUMER_IDS_CHANGED to every member (one-way, never blocks).
/// Broadcasting groups are not notified (`ConsumerManager#registerConsumer` only notifies
/// clustering groups): every member consumes every queue anyway, and a needless rebalance
/// makes some clients drop in-flight messages.
fn notify(group: &str, info: &ConsumerGroupInfo) {
    if info.message_model == MessageModel::Broadcasting {
        return;
    }
    for m in info.members.values() {
        m.channel.notify_consumer_ids_changed(group);
    }
}

#[cfg(test)]
mod tests {
    use stratus_compat::request::heartbeat::SubscriptionData;
    use tokio::sync::mpsc;

    use super::*;

    fn consumer(group: &str, topics: &[(&str, &str)]) -> ConsumerData {
        ConsumerData {
            group_name: group.into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            subscription_data_set: topics
                .iter()
                .map(|(t, e)| SubscriptionData {
                    topic: (*t).into(),
                    sub_string: (*e).into(),
                    sub_version: 1,
                    ..Default::default()
                })
                .collect(),
            unit_mode: false,
        }
    }

    fn channel(
        id: u64,
    ) -> (
        Arc<Channel>,
        mpsc::Receiver<stratus_compat::RemotingCommand>,
    ) {
        let (tx, rx) = mpsc::channel(16);
        (
            Arc::new(Channel::new(id, "127.0.0.1:1".parse().unwrap(), None, tx)),
            rx,
        )
    }

    #[test]
    fn expired_channels_are_dropped_and_the_rest_notified() {
        let reg = Registry::default();
        let (a, mut rx_a) = channel(1);
        let (b, _rx_b) = channel(2);
        assert!(reg.register_consumer(&a, "a", &consumer("g", &[("T", "TagA || TagB")]), 0));
        assert!(reg.register_consumer(&b, "b", &consumer("g", &[("T", "TagA || TagB")]), 0));
        while rx_a.try_recv().is_ok() {}
        // a keeps heartbeating, b stops.
        assert!(!reg.register_consumer(&a, "a", &consumer("g", &[("T", "TagA || TagB")]), 100_000));
        assert_eq!(reg.expire(130_000, 120_000), 1);
        assert_eq!(reg.consumer_ids("g"), vec!["a".to_owned()]);
        let n = rx_a.try_recv().expect("a is told the group changed");
        assert_eq!(
            n.code,
            stratus_compat::RequestCode::NotifyConsumerIdsChanged.to_i32()
        );
    }

    #[test]
    fn channels_are_found_by_client_id_the_latest_open_one_first() {
        let reg = Registry::default();
        let (a1, _r1) = channel(1);
        let (a2, _r2) = channel(2);
        let (b, _r3) = channel(3);
        let data = consumer("g", &[("T", "*")]);
        reg.register_consumer(&a1, "a", &data, 10);
        reg.register_consumer(&a2, "a", &data, 20);
        reg.register_consumer(&b, "b", &data, 5);
        assert_eq!(reg.consumer_channel("g", "a").map(|c| c.id), Some(2));
        assert!(reg.consumer_channel("g", "nobody").is_none());
        assert!(reg.consumer_channel("other", "a").is_none());
        a2.closed.cancel();
        assert_eq!(reg.consumer_channel("g", "a").map(|c| c.id), Some(1));
        let ids: Vec<(String, u64)> = reg
            .consumer_channels_by_client("g")
            .into_iter()
            .map(|(c, ch)| (c, ch.id))
            .collect();
        assert_eq!(ids, vec![("a".to_owned(), 1), ("b".to_owned(), 3)]);
        reg.register_producer(&a1, "a", "pg", 1);
        reg.register_producer(&b, "b", "pg2", 1);
        assert_eq!(reg.producer_channel_by_client("b").map(|c| c.id), Some(3));
        assert!(reg.producer_channel_by_client("zz").is_none());
        // A requester known only from its requests, until its connection closes.
        let (r, _r4) = channel(4);
        reg.note_requester(&r, "req");
        reg.note_requester(&r, "req");
        assert_eq!(reg.requester_channel("req").map(|c| c.id), Some(4));
        assert_eq!(
            reg.requester_channel("b").map(|c| c.id),
            Some(3),
            "producers first"
        );
        reg.channel_closed(4);
        assert!(reg.requester_channel("req").is_none());
    }

    #[test]
    fn broadcasting_groups_are_not_notified() {
        let reg = Registry::default();
        let (a, mut rx_a) = channel(1);
        let (b, _rx_b) = channel(2);
        let mut data = consumer("bg", &[("T", "*")]);
        data.message_model = MessageModel::Broadcasting;
        assert!(reg.register_consumer(&a, "a", &data, 0));
        assert!(reg.register_consumer(&b, "b", &data, 0));
        assert!(rx_a.try_recv().is_err());
        assert_eq!(reg.consumer_ids("bg"), vec!["a".to_owned(), "b".to_owned()]);
    }

    #[test]
    fn subscriptions_use_recomputed_tag_codes_and_drop_unlisted_topics() {
        let reg = Registry::default();
        let (a, _rx) = channel(1);
        reg.register_consumer(
            &a,
            "a",
            &consumer("g", &[("T", "TagA || TagB"), ("U", "*")]),
            0,
        );
        let sub = reg.subscription("g", "T").unwrap().unwrap();
        assert!(sub.filter.matches_code(2_598_919)); // "TagA".hashCode()
        assert!(!sub.filter.matches_code(42));
        // A heartbeat without U drops it; the group itself stays registered.
        assert!(reg.register_consumer(&a, "a", &consumer("g", &[("T", "TagA")]), 1));
        assert!(reg.subscription("g", "U").unwrap().is_none());
        assert!(reg.subscription("nobody", "T").is_err());
        reg.channel_closed(1);
        assert!(reg.subscription("g", "T").is_err());
    }
}
