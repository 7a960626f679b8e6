package org.stratus.testclient;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.admin.ConsumeStats;
import org.apache.rocketmq.remoting.protocol.admin.OffsetWrapper;
import org.apache.rocketmq.remoting.protocol.admin.TopicOffset;
import org.apache.rocketmq.remoting.protocol.admin.TopicStatsTable;
import org.apache.rocketmq.remoting.protocol.body.BrokerStatsData;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.body.Connection;
import org.apache.rocketmq.remoting.protocol.body.ConsumeMessageDirectlyResult;
import org.apache.rocketmq.remoting.protocol.body.ConsumerConnection;
import org.apache.rocketmq.remoting.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.remoting.protocol.body.GroupList;
import org.apache.rocketmq.remoting.protocol.body.KVTable;
import org.apache.rocketmq.remoting.protocol.body.ProducerConnection;
import org.apache.rocketmq.remoting.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicList;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.tools.command.stats.StatsAllSubCommand;

/**
 * `dashboard`: the admin calls the RocketMQ Dashboard's pages make, through the same
 * DefaultMQAdminExt with the VIP channel on (the Dashboard's default), one JSON line per
 * page: {"event":"page","page":NAME,"ok":true|false,"error":...,...figures}.
 *
 * Options: --namesrv --topic --group (a consumer group with a live consumer)
 * --producer-group --key (a message key sent to --topic) [--vip true|false].
 */
final class DashboardReplay {
    private DashboardReplay() {
    }

    interface Page {
        String run() throws Exception;
    }

    static int failed = 0;

    static void page(String name, Page p) {
        try {
            String fields = p.run();
            RmqClient.emit("{\"event\":\"page\",\"page\":" + RmqClient.q(name) + ",\"ok\":true"
                + (fields.isEmpty() ? "" : "," + fields) + "}");
        } catch (Throwable t) {
            failed++;
            Throwable root = t;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            RmqClient.emit("{\"event\":\"page\",\"page\":" + RmqClient.q(name) + ",\"ok\":false,\"error\":"
                + RmqClient.q(t + (root != t ? " <- " + root : "")) + "}");
        }
    }

    static String list(Iterable<String> xs) {
        StringBuilder b = new StringBuilder("[");
        for (String x : xs) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append(RmqClient.q(x));
        }
        return b.append(']').toString();
    }

    public static int run(Map<String, String> m) throws Exception {
        String namesrv = RmqClient.req(m, "namesrv");
        String topic = RmqClient.req(m, "topic");
        String group = RmqClient.req(m, "group");
        String producerGroup = RmqClient.req(m, "producer-group");
        String key = RmqClient.req(m, "key");
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(namesrv);
        admin.setVipChannelEnabled(Boolean.parseBoolean(RmqClient.opt(m, "vip", "true")));
        admin.setInstanceName("dashboard-" + ProcessHandle.current().pid());
        admin.start();
        final List<String> addrs = new ArrayList<>();
        final String[] clientId = {null};
        final MessageExt[] found = {null};
        try {
            // Cluster page: 106, then 28 per broker (the collector reads getTotalTps).
            page("cluster", () -> {
                ClusterInfo info = admin.examineBrokerClusterInfo();
                long putToday = 0;
                Set<String> missing = new TreeSet<>();
                for (BrokerData bd : info.getBrokerAddrTable().values()) {
                    String addr = bd.getBrokerAddrs().get(MixAll.MASTER_ID);
                    addrs.add(addr);
                    KVTable kv = admin.fetchBrokerRuntimeStats(addr);
                    for (String k : new String[] {"getTotalTps", "putTps", "getTransferredTps", "msgPutTotalTodayNow",
                        "msgGetTotalTodayNow", "brokerVersionDesc", "bootTimestamp", "commitLogDiskRatio"}) {
                        if (!kv.getTable().containsKey(k)) {
                            missing.add(k);
                        }
                    }
                    String[] tps = kv.getTable().getOrDefault("getTotalTps", "x").split(" ");
                    Double.parseDouble(tps[0]);
                    putToday += Long.parseLong(kv.getTable().getOrDefault("msgPutTotalTodayNow", "0"));
                }
                return "\"brokers\":" + addrs.size() + ",\"putToday\":" + putToday + ",\"missing\":" + list(missing);
            });
            page("brokerConfig", () -> {
                Properties p = admin.getBrokerConfig(addrs.get(0));
                return "\"keys\":" + p.size() + ",\"brokerClusterName\":" + RmqClient.q(p.getProperty("brokerClusterName"));
            });
            // Topic page: 206 + 304 (system topics), 21 per broker.
            page("topicList", () -> {
                TopicList all = admin.fetchAllTopicList();
                TopicList sys = admin.getDefaultMQAdminExtImpl().getMqClientInstance().getMQClientAPIImpl()
                    .getSystemTopicList(20000L);
                int configs = 0;
                for (String addr : addrs) {
                    TopicConfigSerializeWrapper w = admin.getAllTopicConfig(addr, 10000L);
                    configs += w.getTopicConfigTable().size();
                }
                return "\"topics\":" + list(all.getTopicList()) + ",\"system\":" + list(sys.getTopicList())
                    + ",\"configs\":" + configs;
            });
            page("topicStatus", () -> {
                TopicStatsTable t = admin.examineTopicStats(topic);
                long max = 0;
                for (TopicOffset o : t.getOffsetTable().values()) {
                    max += o.getMaxOffset();
                }
                return "\"queues\":" + t.getOffsetTable().size() + ",\"maxOffsetSum\":" + max;
            });
            page("topicRoute", () -> {
                TopicRouteData r = admin.examineTopicRouteInfo(topic);
                return "\"brokers\":" + r.getBrokerDatas().size();
            });
            page("topicConfig", () -> {
                int n = 0;
                for (String addr : addrs) {
                    if (admin.examineTopicConfig(addr, topic) != null) {
                        n++;
                    }
                }
                return "\"brokers\":" + n;
            });
            page("topicConsumers", () -> {
                GroupList g = admin.queryTopicConsumeByWho(topic);
                long diff = 0;
                for (String gr : g.getGroupList()) {
                    ConsumeStats cs = admin.examineConsumeStats(gr, topic);
                    diff += cs.computeTotalDiff();
                    admin.examineConsumerConnectionInfo(gr);
                }
                return "\"groups\":" + list(g.getGroupList()) + ",\"diff\":" + diff;
            });
            // Consumer page: 201 per broker, then per group 208 and 203.
            page("consumerList", () -> {
                Set<String> groups = new TreeSet<>();
                for (String addr : addrs) {
                    SubscriptionGroupWrapper w = admin.getAllSubscriptionGroup(addr, 30000L);
                    groups.addAll(w.getSubscriptionGroupTable().keySet());
                }
                ConsumeStats cs = admin.examineConsumeStats(group);
                long consumed = 0;
                long broker = 0;
                for (Map.Entry<MessageQueue, OffsetWrapper> e : cs.getOffsetTable().entrySet()) {
                    if (e.getKey().getTopic().equals(topic)) {
                        consumed += e.getValue().getConsumerOffset();
                        broker += e.getValue().getBrokerOffset();
                    }
                }
                ConsumerConnection cc = admin.examineConsumerConnectionInfo(group);
                for (Connection c : cc.getConnectionSet()) {
                    clientId[0] = c.getClientId();
                }
                return "\"groups\":" + list(groups) + ",\"consumerOffsetSum\":" + consumed + ",\"brokerOffsetSum\":"
                    + broker + ",\"diff\":" + cs.computeTotalDiff() + ",\"connections\":" + cc.getConnectionSet().size()
                    + ",\"consumeType\":" + RmqClient.q(String.valueOf(cc.getConsumeType()));
            });
            page("consumerRunningInfo", () -> {
                ConsumerRunningInfo info = admin.getConsumerRunningInfo(group, clientId[0], false);
                return "\"subscriptions\":" + info.getSubscriptionSet().size() + ",\"queues\":" + info.getMqTable().size();
            });
            page("consumerCreateUpdateDelete", () -> {
                String g = "DashboardMadeGroup";
                SubscriptionGroupConfig cfg = new SubscriptionGroupConfig();
                cfg.setGroupName(g);
                cfg.setRetryMaxTimes(7);
                for (String addr : addrs) {
                    admin.createAndUpdateSubscriptionGroupConfig(addr, cfg);
                }
                int seen = 0;
                for (String addr : addrs) {
                    SubscriptionGroupConfig got = admin.getAllSubscriptionGroup(addr, 30000L)
                        .getSubscriptionGroupTable().get(g);
                    if (got != null && got.getRetryMaxTimes() == 7) {
                        seen++;
                    }
                }
                for (String addr : addrs) {
                    admin.deleteSubscriptionGroup(addr, g, true);
                }
                int left = 0;
                for (String addr : addrs) {
                    if (admin.getAllSubscriptionGroup(addr, 30000L).getSubscriptionGroupTable().containsKey(g)) {
                        left++;
                    }
                }
                return "\"seen\":" + seen + ",\"left\":" + left;
            });
            page("producer", () -> {
                ProducerConnection pc = admin.examineProducerConnectionInfo(producerGroup, topic);
                return "\"connections\":" + pc.getConnectionSet().size();
            });
            page("messageByKey", () -> {
                QueryResult r = admin.queryMessage(topic, key, 64, 0, System.currentTimeMillis());
                List<String> ids = new ArrayList<>();
                for (MessageExt e : r.getMessageList()) {
                    ids.add(e.getMsgId());
                    found[0] = e;
                }
                return "\"found\":" + r.getMessageList().size() + ",\"ids\":" + list(ids);
            });
            page("messageById", () -> {
                MessageExt e = admin.viewMessage(topic, found[0].getMsgId());
                admin.messageTrackDetail(e);
                return "\"keys\":" + RmqClient.q(e.getKeys()) + ",\"bodyBytes\":" + e.getBody().length;
            });
            page("consumeDirectly", () -> {
                ConsumeMessageDirectlyResult r = admin.consumeMessageDirectly(group, clientId[0], topic,
                    found[0].getMsgId());
                return "\"result\":" + RmqClient.q(String.valueOf(r.getConsumeResult()));
            });
            // The collector job: 315 per topic and topic@group.
            page("statsCollector", () -> {
                double inTps = 0;
                long putSum = 0;
                for (String addr : addrs) {
                    BrokerStatsData d = admin.viewBrokerStatsData(addr, "TOPIC_PUT_NUMS", topic);
                    inTps += d.getStatsMinute().getTps();
                    putSum += StatsAllSubCommand.compute24HourSum(d);
                }
                return "\"inTps\":" + inTps + ",\"put24h\":" + putSum;
            });
            page("resetOffset", () -> {
                Map<MessageQueue, Long> table = admin.resetOffsetByTimestamp(topic, group, 0L, true);
                long sum = 0;
                for (Long v : table.values()) {
                    sum += v;
                }
                return "\"queues\":" + table.size() + ",\"offsetSum\":" + sum;
            });
        } finally {
            admin.shutdown();
        }
        RmqClient.emit("{\"event\":\"done\",\"failed\":" + failed + "}");
        return 0;
    }
}
