package org.stratus.testclient;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.producer.selector.SelectMessageQueueByHash;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * Stratus test client over the Apache RocketMQ Java remoting client.
 * One source for the 4.9.x and the 5.x client; see ../README.md for the CLI.
 */
public final class RmqClient {
    private static final Object OUT = new Object();

    private RmqClient() {
    }

    // ---------------------------------------------------------------- output

    static void emit(String line) {
        synchronized (OUT) {
            System.out.println(line);
            System.out.flush();
        }
    }

    static String q(String s) {
        if (s == null) {
            return "\"\"";
        }
        StringBuilder b = new StringBuilder(s.length() + 2);
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    static String errText(Throwable t) {
        String m = t.getClass().getSimpleName() + ": " + t.getMessage();
        Throwable cause = t.getCause();
        if (cause != null && cause != t) {
            // A retried send's own failure (e.g. the broker's NO_PERMISSION remark) is the cause.
            m += " | cause " + cause.getClass().getSimpleName() + ": " + cause.getMessage();
        }
        return m.length() > 500 ? m.substring(0, 500) : m;
    }

    // ---------------------------------------------------------------- args

    /** Options without a value (present = "true"). */
    static final Set<String> FLAGS = Set.of("orderly");

    static Map<String, String> parse(String[] args, int from) {
        Map<String, String> m = new HashMap<>();
        for (int i = from; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + a);
            }
            if (FLAGS.contains(a.substring(2))) {
                m.put(a.substring(2), "true");
                continue;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value for " + a);
            }
            m.put(a.substring(2), args[++i]);
        }
        return m;
    }

    static String req(Map<String, String> m, String k) {
        String v = m.get(k);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + k);
        }
        return v;
    }

    static String opt(Map<String, String> m, String k, String d) {
        String v = m.get(k);
        return v == null ? d : v;
    }

    /** ACL signing (--access-key/--secret-key), or null without credentials. */
    static RPCHook aclHook(Map<String, String> m) {
        String ak = m.get("access-key");
        if (ak == null) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(ak, req(m, "secret-key")));
    }

    static void usage(String why) {
        System.err.println("error: " + why);
        System.err.println("usage: produce|consume|pull|txn --namesrv HOST:PORT --topic T --group G ... (see README.md)");
        System.exit(64);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("missing command");
        }
        Map<String, String> m = null;
        try {
            m = parse(args, 1);
        } catch (IllegalArgumentException e) {
            usage(e.getMessage());
        }
        int rc;
        try {
            switch (args[0]) {
                case "produce": rc = produce(m); break;
                case "consume": rc = consume(m); break;
                case "pull": rc = pull(m); break;
                case "txn": rc = txn(m); break;
                // Needs rocketmq-tools (the 5.x build only): looked up by name.
                case "dashboard": rc = (Integer) Class.forName("org.stratus.testclient.DashboardReplay")
                    .getDeclaredMethod("run", Map.class).invoke(null, m); break;
                case "request": rc = request(m); break;
                case "reply": rc = reply(m); break;
                case "running-info": rc = runningInfo(m); break;
                case "consumer-status": rc = consumerStatus(m); break;
                default: usage("unknown command " + args[0]); rc = 64;
            }
        } catch (IllegalArgumentException e) {
            usage(e.getMessage());
            rc = 64;
        } catch (Throwable t) {
            emit("{\"event\":\"error\",\"seq\":-1,\"error\":" + q(errText(t)) + "}");
            emit(args[0].equals("produce") ? "{\"event\":\"done\",\"sent\":0,\"errors\":1}"
                : args[0].equals("txn") ? "{\"event\":\"done\",\"sent\":0,\"checks\":0,\"errors\":1}"
                : "{\"event\":\"done\",\"received\":0}");
            t.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        // Client libraries keep non-daemon threads around; leave promptly.
        Runtime.getRuntime().halt(rc);
    }

    // ---------------------------------------------------------------- produce

    static byte[] body(String prefix, int seq, int size) {
        byte[] unit = (prefix + seq + ":").getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[size];
        for (int i = 0; i < size; i++) {
            out[i] = unit[i % unit.length];
        }
        return out;
    }

    static String sentLine(int seq, String msgId, String offsetMsgId, int queueId, long queueOffset, String status) {
        return "{\"event\":\"sent\",\"seq\":" + seq + ",\"msgId\":" + q(msgId) + ",\"offsetMsgId\":" + q(offsetMsgId)
            + ",\"queueId\":" + queueId + ",\"queueOffset\":" + queueOffset + ",\"status\":" + q(status) + "}";
    }

    static String errLine(int seq, String error) {
        return "{\"event\":\"error\",\"seq\":" + seq + ",\"error\":" + q(error) + "}";
    }

    static int produce(Map<String, String> m) throws Exception {
        String namesrv = req(m, "namesrv");
        String topic = req(m, "topic");
        String group = req(m, "group");
        int count = Integer.parseInt(req(m, "count"));
        String mode = req(m, "mode");
        String tag = req(m, "tag");
        String keysPrefix = req(m, "keys-prefix");
        int bodySize = Integer.parseInt(req(m, "body-size"));
        int batchSize = Integer.parseInt(opt(m, "batch-size", "8"));
        String idPrefix = opt(m, "id-prefix", "m");
        if (!mode.equals("sync") && !mode.equals("async") && !mode.equals("oneway") && !mode.equals("batch")) {
            throw new IllegalArgumentException("bad --mode " + mode);
        }
        int delayLevel = Integer.parseInt(opt(m, "delay-level", "0"));
        long deliverAfterMs = Long.parseLong(opt(m, "deliver-after-ms", "0"));
        if (delayLevel < 0 || (delayLevel > 0 && mode.equals("batch"))) {
            throw new IllegalArgumentException("--delay-level needs L >= 1 and not --mode batch");
        }
        int shardingKeys = Integer.parseInt(opt(m, "sharding-key-count", "0"));
        long intervalMs = Long.parseLong(opt(m, "interval-ms", "0"));
        if (shardingKeys < 0 || (shardingKeys > 0 && !mode.equals("sync"))) {
            throw new IllegalArgumentException("--sharding-key-count needs K >= 1 and --mode sync");
        }

        DefaultMQProducer producer = new DefaultMQProducer(group, aclHook(m));
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setVipChannelEnabled(Boolean.parseBoolean(opt(m, "vip", "false")));
        producer.setInstanceName("stratus-" + ProcessHandle.current().pid());
        producer.setPollNameServerInterval(Integer.parseInt(opt(m, "poll-namesrv-ms", "30000")));
        producer.start();

        Message[] msgs = new Message[count];
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, tag, keysPrefix + "-" + i, body(idPrefix, i, bodySize));
            msg.putUserProperty("seq", Integer.toString(i));
            if (deliverAfterMs > 0) {
                // 5.x timer message (Message#setDeliverTimeMs); 4.9 has no timer messages.
                try {
                    msg.getClass().getMethod("setDeliverTimeMs", long.class)
                        .invoke(msg, System.currentTimeMillis() + deliverAfterMs);
                } catch (NoSuchMethodException e) {
                    System.out.println("{\"event\":\"unsupported\",\"what\":\"deliver-after-ms\"}");
                    System.out.flush();
                    Runtime.getRuntime().halt(3);
                }
            }
            if (delayLevel > 0) {
                msg.setDelayTimeLevel(delayLevel);
            }
            if (shardingKeys > 0) {
                msg.putUserProperty("skey", Integer.toString(i % shardingKeys));
            }
            msgs[i] = msg;
        }

        AtomicInteger sent = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        switch (mode) {
            case "sync":
                for (int i = 0; i < count; i++) {
                    try {
                        // --sharding-key-count: the library's hash selector, arg = i % K (Integer.hashCode).
                        SendResult r = shardingKeys > 0
                            ? producer.send(msgs[i], new SelectMessageQueueByHash(), i % shardingKeys)
                            : producer.send(msgs[i]);
                        reportResult(i, r, sent, errors);
                    } catch (Exception e) {
                        errors.incrementAndGet();
                        emit(errLine(i, errText(e)));
                    }
                    if (intervalMs > 0) {
                        Thread.sleep(intervalMs);
                    }
                }
                break;
            case "async": {
                CountDownLatch latch = new CountDownLatch(count);
                for (int i = 0; i < count; i++) {
                    final int seq = i;
                    try {
                        producer.send(msgs[i], new SendCallback() {
                            @Override
                            public void onSuccess(SendResult r) {
                                reportResult(seq, r, sent, errors);
                                latch.countDown();
                            }

                            @Override
                            public void onException(Throwable e) {
                                errors.incrementAndGet();
                                emit(errLine(seq, errText(e)));
                                latch.countDown();
                            }
                        });
                    } catch (Exception e) {
                        errors.incrementAndGet();
                        emit(errLine(seq, errText(e)));
                        latch.countDown();
                    }
                }
                if (!latch.await(60 + count / 10, TimeUnit.SECONDS)) {
                    long missing = latch.getCount();
                    errors.addAndGet((int) missing);
                    emit(errLine(-1, "timed out waiting for " + missing + " async callbacks"));
                }
                break;
            }
            case "oneway":
                for (int i = 0; i < count; i++) {
                    try {
                        producer.sendOneway(msgs[i]);
                        sent.incrementAndGet();
                        // The UNIQ_KEY is assigned by the client during send.
                        emit(sentLine(i, msgs[i].getProperty("UNIQ_KEY"), "", -1, -1, "ONEWAY"));
                    } catch (Exception e) {
                        errors.incrementAndGet();
                        emit(errLine(i, errText(e)));
                    }
                }
                break;
            case "batch":
                for (int start = 0; start < count; start += batchSize) {
                    int end = Math.min(count, start + batchSize);
                    List<Message> batch = new ArrayList<>();
                    for (int i = start; i < end; i++) {
                        batch.add(msgs[i]);
                    }
                    try {
                        SendResult r = producer.send(batch);
                        String[] ids = r.getMsgId() == null ? new String[0] : r.getMsgId().split(",");
                        String[] offIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
                        for (int i = start; i < end; i++) {
                            int k = i - start;
                            if (r.getSendStatus().name().equals("SEND_OK")) {
                                sent.incrementAndGet();
                                emit(sentLine(i, k < ids.length ? ids[k] : "", k < offIds.length ? offIds[k] : "",
                                    r.getMessageQueue().getQueueId(), r.getQueueOffset() + k, "SEND_OK"));
                            } else {
                                errors.incrementAndGet();
                                emit(errLine(i, "status " + r.getSendStatus()));
                            }
                        }
                    } catch (Exception e) {
                        for (int i = start; i < end; i++) {
                            errors.incrementAndGet();
                            emit(errLine(i, errText(e)));
                        }
                    }
                }
                break;
            default:
                break;
        }
        producer.shutdown();
        emit("{\"event\":\"done\",\"sent\":" + sent.get() + ",\"errors\":" + errors.get() + "}");
        return errors.get() == 0 ? 0 : 1;
    }

    static void reportResult(int seq, SendResult r, AtomicInteger sent, AtomicInteger errors) {
        String status = r.getSendStatus().name();
        if (status.equals("SEND_OK")) {
            sent.incrementAndGet();
            String line = sentLine(seq, r.getMsgId(), r.getOffsetMsgId(), r.getMessageQueue().getQueueId(),
                r.getQueueOffset(), status);
            emit(line.substring(0, line.length() - 1) + ",\"brokerName\":" + q(r.getMessageQueue().getBrokerName()) + "}");
        } else {
            errors.incrementAndGet();
            emit(errLine(seq, "status " + status));
        }
    }

    // ---------------------------------------------------------------- txn

    static LocalTransactionState txnState(String answer) {
        switch (answer) {
            case "commit": return LocalTransactionState.COMMIT_MESSAGE;
            case "rollback": return LocalTransactionState.ROLLBACK_MESSAGE;
            case "unknown": return LocalTransactionState.UNKNOW;
            default: throw new IllegalArgumentException("bad transaction answer " + answer);
        }
    }

    static String txnName(LocalTransactionState s) {
        if (s == null) {
            return "unknown";
        }
        switch (s) {
            case COMMIT_MESSAGE: return "commit";
            case ROLLBACK_MESSAGE: return "rollback";
            default: return "unknown";
        }
    }

    /**
     * Resolves the topic's route and heartbeats now, so the producer (group) is registered with the
     * broker(s) of T even if it never sends (--count 0): the broker sends check-backs only to
     * producers it knows from heartbeats, and a producer heartbeats only to brokers it knows routes of.
     */
    static boolean learnRoute(TransactionMQProducer producer, String topic) {
        try {
            MQClientInstance factory = producer.getDefaultMQProducerImpl().getMqClientFactory();
            boolean ok = factory.updateTopicRouteInfoFromNameServer(topic);
            factory.sendHeartbeatToAllBrokerWithLock();
            return ok;
        } catch (Exception e) {
            System.err.println("route lookup for " + topic + " failed: " + e);
            return false;
        }
    }

    static int txn(Map<String, String> m) throws Exception {
        String namesrv = req(m, "namesrv");
        String topic = req(m, "topic");
        String group = req(m, "group");
        int count = Integer.parseInt(req(m, "count"));
        // Message content options only matter when something is sent.
        String tag = count > 0 ? req(m, "tag") : opt(m, "tag", "");
        String keysPrefix = count > 0 ? req(m, "keys-prefix") : opt(m, "keys-prefix", "");
        int bodySize = Integer.parseInt(count > 0 ? req(m, "body-size") : opt(m, "body-size", "0"));
        String idPrefix = opt(m, "id-prefix", "m");
        String local = req(m, "local");
        String check = req(m, "check");
        long staySecs = Long.parseLong(req(m, "stay-secs"));
        if (!local.equals("die")) {
            txnState(local);
        }
        final LocalTransactionState checkAnswer = txnState(check);
        final LocalTransactionState localAnswer = local.equals("die") ? null : txnState(local);

        AtomicInteger checks = new AtomicInteger();
        TransactionMQProducer producer = new TransactionMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setVipChannelEnabled(Boolean.parseBoolean(opt(m, "vip", "false")));
        producer.setInstanceName("stratus-" + ProcessHandle.current().pid());
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                emit("{\"event\":\"half\",\"seq\":" + arg + ",\"msgId\":" + q(msg.getProperty("UNIQ_KEY"))
                    + ",\"transactionId\":" + q(msg.getTransactionId()) + "}");
                if (localAnswer == null) {
                    // --local die: the half message is stored, END_TRANSACTION is never sent.
                    System.out.flush();
                    Runtime.getRuntime().halt(0);
                }
                return localAnswer;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.incrementAndGet();
                String seq = msg.getUserProperty("seq");
                String times = msg.getProperty("TRANSACTION_CHECK_TIMES");
                emit("{\"event\":\"check\",\"msgId\":" + q(msg.getProperty("UNIQ_KEY")) + ",\"keys\":" + q(msg.getKeys())
                    + ",\"seq\":" + q(seq == null ? "" : seq) + ",\"answer\":" + q(check)
                    + ",\"transactionId\":" + q(msg.getTransactionId())
                    + ",\"checkTimes\":" + q(times == null ? "" : times)
                    + ",\"ageMs\":" + (System.currentTimeMillis() - msg.getBornTimestamp()) + "}");
                return checkAnswer;
            }
        });
        producer.start();
        boolean routed = count > 0 || learnRoute(producer, topic);

        int sent = 0;
        int errors = 0;
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, tag, keysPrefix + "-" + i, body(idPrefix, i, bodySize));
            msg.putUserProperty("seq", Integer.toString(i));
            try {
                TransactionSendResult r = producer.sendMessageInTransaction(msg, i);
                String status = r.getSendStatus().name();
                if (status.equals("SEND_OK")) {
                    sent++;
                    emit("{\"event\":\"sent\",\"seq\":" + i + ",\"msgId\":" + q(r.getMsgId())
                        + ",\"offsetMsgId\":" + q(r.getOffsetMsgId()) + ",\"queueId\":" + r.getMessageQueue().getQueueId()
                        + ",\"queueOffset\":" + r.getQueueOffset() + ",\"status\":" + q(status)
                        + ",\"local\":" + q(txnName(r.getLocalTransactionState()))
                        + ",\"transactionId\":" + q(r.getTransactionId()) + "}");
                } else {
                    errors++;
                    emit(errLine(i, "status " + status));
                }
            } catch (Exception e) {
                errors++;
                // sendMessageInTransaction wraps send failures in "send message Exception".
                emit(errLine(i, errText(e) + (e.getCause() != null ? " <- " + errText(e.getCause()) : "")));
            }
        }

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(staySecs);
        while (System.nanoTime() < deadline) {
            Thread.sleep(Math.min(1000, Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()))));
            if (!routed) {
                routed = learnRoute(producer, topic);
            }
        }
        producer.shutdown();
        emit("{\"event\":\"done\",\"sent\":" + sent + ",\"checks\":" + checks.get() + ",\"errors\":" + errors + "}");
        return errors == 0 ? 0 : 1;
    }

    // ---------------------------------------------------------------- consume

    static final class Receiver {
        final int expect;
        final Set<String> seen = ConcurrentHashMap.newKeySet();
        final CountDownLatch enough = new CountDownLatch(1);
        final AtomicLong lastNew = new AtomicLong(0);

        Receiver(int expect) {
            this.expect = expect;
        }

        static String idOf(MessageExt msg) {
            String id = msg.getProperty("UNIQ_KEY");
            return id == null || id.isEmpty() ? msg.getMsgId() : id;
        }

        /** --fail-times: a delivery the listener rejects (not counted toward --expect). */
        void retry(MessageExt msg) {
            emit("{\"event\":\"retry\",\"msgId\":" + q(idOf(msg)) + ",\"keys\":" + q(msg.getKeys())
                + ",\"reconsumeTimes\":" + msg.getReconsumeTimes() + ",\"topic\":" + q(msg.getTopic()) + "}");
        }

        void accept(MessageExt msg) {
            String id = idOf(msg);
            byte[] b = msg.getBody() == null ? new byte[0] : msg.getBody();
            CRC32 crc = new CRC32();
            crc.update(b, 0, b.length);
            String seq = msg.getUserProperty("seq");
            emit("{\"event\":\"recv\",\"msgId\":" + q(id) + ",\"topic\":" + q(msg.getTopic())
                + ",\"queueId\":" + msg.getQueueId() + ",\"queueOffset\":" + msg.getQueueOffset()
                + ",\"brokerName\":" + q(msg.getBrokerName())
                + ",\"tags\":" + q(msg.getTags()) + ",\"keys\":" + q(msg.getKeys())
                + ",\"seq\":" + q(seq == null ? "" : seq) + ",\"bodyLen\":" + b.length
                + ",\"bodyCrc32\":" + crc.getValue() + ",\"reconsumeTimes\":" + msg.getReconsumeTimes()
                + ",\"bornTs\":" + msg.getBornTimestamp() + "}");
            if (seen.add(id)) {
                lastNew.set(System.nanoTime());
                if (seen.size() >= expect) {
                    enough.countDown();
                }
            }
        }

        /** Waits for the end condition; returns the exit code (0 done, 2 timeout). */
        int await(long timeoutSecs, long idleSecs) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSecs);
            while (true) {
                if (enough.await(100, TimeUnit.MILLISECONDS)) {
                    return 0;
                }
                long now = System.nanoTime();
                long last = lastNew.get();
                if (idleSecs > 0 && last != 0 && now - last >= TimeUnit.SECONDS.toNanos(idleSecs)) {
                    return 0;
                }
                if (now >= deadline) {
                    return 2;
                }
            }
        }
    }

    /** MessageModel moved packages between 4.9 and 5.x: set it by reflection so one source serves both. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setMessageModel(DefaultMQPushConsumer consumer, String name) throws Exception {
        for (java.lang.reflect.Method meth : DefaultMQPushConsumer.class.getMethods()) {
            if (meth.getName().equals("setMessageModel") && meth.getParameterCount() == 1) {
                Class<? extends Enum> type = (Class<? extends Enum>) meth.getParameterTypes()[0];
                meth.invoke(consumer, Enum.valueOf(type, name));
                return;
            }
        }
        throw new IllegalStateException("no setMessageModel");
    }

    static int consume(Map<String, String> m) throws Exception {
        String namesrv = req(m, "namesrv");
        String topic = req(m, "topic");
        String group = req(m, "group");
        String model = opt(m, "model", "clustering");
        String expr = opt(m, "expr", "*");
        int expect = Integer.parseInt(req(m, "expect"));
        long timeout = Long.parseLong(req(m, "timeout-secs"));
        String from = opt(m, "from", "first");
        long idle = Long.parseLong(opt(m, "idle-exit-secs", "0"));
        int failTimes = Integer.parseInt(opt(m, "fail-times", "0"));
        int maxReconsume = Integer.parseInt(opt(m, "max-reconsume", "-1"));
        boolean orderly = m.containsKey("orderly");

        DefaultMQPushConsumer consumer =
            new DefaultMQPushConsumer(group, aclHook(m), new AllocateMessageQueueAveragely());
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(Boolean.parseBoolean(opt(m, "vip", "false")));
        consumer.setPollNameServerInterval(Integer.parseInt(opt(m, "poll-namesrv-ms", "30000")));
        consumer.setInstanceName("stratus-" + ProcessHandle.current().pid());
        if (!model.equals("broadcasting") && !model.equals("clustering")) {
            throw new IllegalArgumentException("bad --model " + model);
        }
        setMessageModel(consumer, model.toUpperCase());
        if (from.equals("first")) {
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        } else if (from.equals("last")) {
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        } else {
            throw new IllegalArgumentException("bad --from " + from);
        }
        String sql = opt(m, "sql", "");
        if (sql.isEmpty()) {
            consumer.subscribe(topic, expr);
        } else {
            // SQL92 over message properties (--sql replaces --expr).
            consumer.subscribe(topic, org.apache.rocketmq.client.consumer.MessageSelector.bySql(sql));
        }
        if (maxReconsume >= 0) {
            consumer.setMaxReconsumeTimes(maxReconsume);
        }
        Receiver rx = new Receiver(expect);
        // Batch size is 1 (the default), so a status applies to exactly one message.
        if (orderly) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                for (MessageExt msg : msgs) {
                    if (msg.getReconsumeTimes() < failTimes) {
                        rx.retry(msg);
                        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                    }
                }
                for (MessageExt msg : msgs) {
                    rx.accept(msg);
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt msg : msgs) {
                    if (msg.getReconsumeTimes() < failTimes) {
                        rx.retry(msg);
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                }
                for (MessageExt msg : msgs) {
                    rx.accept(msg);
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
        consumer.start();
        emit("{\"event\":\"ready\",\"clientId\":" + q(consumer.buildMQClientId()) + "}");
        int rc = rx.await(timeout, idle);
        if (rc == 0) {
            consumer.shutdown();
        }
        emit("{\"event\":\"done\",\"received\":" + rx.seen.size() + "}");
        return rc;
    }

    // ---------------------------------------------------------------- pull

    static int pull(Map<String, String> m) throws Exception {
        String namesrv = req(m, "namesrv");
        String topic = req(m, "topic");
        String group = req(m, "group");
        String expr = opt(m, "expr", "*");
        int expect = Integer.parseInt(req(m, "expect"));
        long timeout = Long.parseLong(req(m, "timeout-secs"));

        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group, aclHook(m));
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(Boolean.parseBoolean(opt(m, "vip", "false")));
        consumer.setInstanceName("stratus-" + ProcessHandle.current().pid());
        consumer.setAutoCommit(false);
        consumer.setPollTimeoutMillis(1000);
        consumer.setSubExpressionForAssign(topic, expr);
        consumer.start();
        // Route and offset lookups are plain requests with a 3 s client timeout; on a loaded
        // machine one can time out, and a real application would retry: so do we (3 tries).
        Collection<MessageQueue> mqs = null;
        for (int attempt = 1; ; attempt++) {
            try {
                mqs = consumer.fetchMessageQueues(topic);
                consumer.assign(mqs);
                for (MessageQueue mq : mqs) {
                    consumer.seek(mq, 0);
                }
                break;
            } catch (Exception e) {
                if (attempt >= 3) {
                    throw e;
                }
                System.err.println("pull setup failed (attempt " + attempt + "), retrying: " + e);
                Thread.sleep(1000);
            }
        }
        emit("{\"event\":\"ready\"}");
        Receiver rx = new Receiver(expect);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeout);
        int rc = 2;
        while (System.nanoTime() < deadline) {
            List<MessageExt> got = consumer.poll(500);
            for (MessageExt msg : got) {
                rx.accept(msg);
            }
            if (rx.seen.size() >= expect) {
                rc = 0;
                break;
            }
        }
        if (rc == 0) {
            consumer.shutdown();
        }
        emit("{\"event\":\"done\",\"received\":" + rx.seen.size() + "}");
        return rc;
    }

    // ---------------------------------------------------------------- request-reply

    /** request: --count requests with DefaultMQProducer#request, --mode sync or callback. */
    static int request(Map<String, String> m) throws Exception {
        String namesrv = req(m, "namesrv");
        String topic = req(m, "topic");
        String group = req(m, "group");
        int count = Integer.parseInt(req(m, "count"));
        String mode = opt(m, "mode", "sync");
        long timeoutMs = Long.parseLong(opt(m, "timeout-ms", "10000"));
        if (!mode.equals("sync") && !mode.equals("callback")) {
            throw new IllegalArgumentException("bad --mode " + mode);
        }
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("stratus-" + ProcessHandle.current().pid());
        producer.start();
        emit("{\"event\":\"ready\",\"clientId\":" + q(producer.buildMQClientId()) + "}");
        AtomicInteger replies = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        CountDownLatch latch = new CountDownLatch(count);
        for (int i = 0; i < count; i++) {
            final int seq = i;
            Message msg = new Message(topic, "req", "req-" + i, ("q" + i).getBytes(StandardCharsets.UTF_8));
            msg.putUserProperty("seq", Integer.toString(i));
            try {
                if (mode.equals("sync")) {
                    Message r = producer.request(msg, timeoutMs);
                    replies.incrementAndGet();
                    emit(replyLine(seq, r));
                    latch.countDown();
                } else {
                    producer.request(msg, new RequestCallback() {
                        @Override
                        public void onSuccess(Message r) {
                            if (r == null) {
                                // The client also calls back when the request is sent (no reply yet).
                                return;
                            }
                            replies.incrementAndGet();
                            emit(replyLine(seq, r));
                            latch.countDown();
                        }

                        @Override
                        public void onException(Throwable e) {
                            errors.incrementAndGet();
                            emit(errLine(seq, errText(e)));
                            latch.countDown();
                        }
                    }, timeoutMs);
                }
            } catch (Exception e) {
                errors.incrementAndGet();
                emit(errLine(seq, errText(e)));
                latch.countDown();
            }
        }
        latch.await(timeoutMs / 1000 + 30, TimeUnit.SECONDS);
        producer.shutdown();
        emit("{\"event\":\"done\",\"replies\":" + replies.get() + ",\"errors\":" + errors.get() + "}");
        return errors.get() == 0 && replies.get() == count ? 0 : 1;
    }

    static String replyLine(int seq, Message r) {
        String body = r.getBody() == null ? "" : new String(r.getBody(), StandardCharsets.UTF_8);
        return "{\"event\":\"reply\",\"seq\":" + seq + ",\"body\":" + q(body) + ",\"topic\":" + q(r.getTopic())
            + ",\"correlationId\":" + q(r.getProperty("CORRELATION_ID")) + "}";
    }

    /** reply: a push consumer of --topic that answers each request with MessageUtil.createReplyMessage. */
    static int reply(Map<String, String> m) throws Exception {
        String namesrv = req(m, "namesrv");
        String topic = req(m, "topic");
        String group = req(m, "group");
        int expect = Integer.parseInt(req(m, "expect"));
        long timeout = Long.parseLong(req(m, "timeout-secs"));
        DefaultMQProducer producer = new DefaultMQProducer(group + "-replier");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("stratus-reply-" + ProcessHandle.current().pid());
        producer.start();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("stratus-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        AtomicInteger replied = new AtomicInteger();
        CountDownLatch enough = new CountDownLatch(expect);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt msg : msgs) {
                String seq = msg.getUserProperty("seq");
                String body = new String(msg.getBody(), StandardCharsets.UTF_8);
                try {
                    Message r = MessageUtil.createReplyMessage(msg, ("re:" + body).getBytes(StandardCharsets.UTF_8));
                    SendResult res = producer.send(r, 10000);
                    replied.incrementAndGet();
                    emit("{\"event\":\"replied\",\"seq\":" + q(seq == null ? "" : seq) + ",\"topic\":" + q(r.getTopic())
                        + ",\"status\":" + q(res.getSendStatus().name()) + "}");
                } catch (Exception e) {
                    emit(errLine(seq == null ? -1 : Integer.parseInt(seq), errText(e)));
                }
                enough.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        emit("{\"event\":\"ready\",\"clientId\":" + q(consumer.buildMQClientId()) + "}");
        boolean done = enough.await(timeout, TimeUnit.SECONDS);
        emit("{\"event\":\"done\",\"replied\":" + replied.get() + "}");
        return done ? 0 : 2;
    }

    // ---------------------------------------------------------------- admin

    /**
     * running-info: GET_CONSUMER_RUNNING_INFO of --client-id in --group asked of --broker, as
     * DefaultMQAdminExt#getConsumerRunningInfo asks it (the answer's JSON is printed).
     */
    static int runningInfo(Map<String, String> m) throws Exception {
        String namesrv = req(m, "namesrv");
        String broker = req(m, "broker");
        String group = req(m, "group");
        String clientId = req(m, "client-id");
        DefaultMQProducer producer = new DefaultMQProducer("stratus-admin-" + ProcessHandle.current().pid());
        producer.setNamesrvAddr(namesrv);
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("stratus-admin-" + ProcessHandle.current().pid());
        producer.start();
        int rc = 0;
        try {
            Object info = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl()
                .getConsumerRunningInfo(broker, group, clientId, false, 10000);
            Object json = info.getClass().getMethod("toJson").invoke(info);
            emit("{\"event\":\"runningInfo\",\"json\":" + q(String.valueOf(json)) + "}");
        } catch (Exception e) {
            emit(errLine(0, errText(e)));
            rc = 1;
        }
        producer.shutdown();
        emit("{\"event\":\"done\"}");
        return rc;
    }

    /**
     * consumer-status: INVOKE_BROKER_TO_GET_CONSUMER_STATUS of --group on --topic asked of
     * --broker (each consumer's own offsets, by client id), as DefaultMQAdminExt#getConsumeStatus.
     */
    static int consumerStatus(Map<String, String> m) throws Exception {
        String namesrv = req(m, "namesrv");
        String broker = req(m, "broker");
        String group = req(m, "group");
        String topic = req(m, "topic");
        DefaultMQProducer producer = new DefaultMQProducer("stratus-admin-" + ProcessHandle.current().pid());
        producer.setNamesrvAddr(namesrv);
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("stratus-admin-" + ProcessHandle.current().pid());
        producer.start();
        int rc = 0;
        try {
            Map<String, Map<MessageQueue, Long>> table = producer.getDefaultMQProducerImpl().getMqClientFactory()
                .getMQClientAPIImpl().invokeBrokerToGetConsumerStatus(broker, topic, group, "", 10000);
            StringBuilder b = new StringBuilder("{\"event\":\"consumerStatus\",\"clients\":{");
            boolean first = true;
            for (Map.Entry<String, Map<MessageQueue, Long>> e : table.entrySet()) {
                long sum = 0;
                for (Long off : e.getValue().values()) {
                    sum += off;
                }
                b.append(first ? "" : ",").append(q(e.getKey())).append(":{\"queues\":").append(e.getValue().size())
                    .append(",\"offsetSum\":").append(sum).append('}');
                first = false;
            }
            emit(b.append("}}").toString());
        } catch (Exception e) {
            emit(errLine(0, errText(e)));
            rc = 1;
        }
        producer.shutdown();
        emit("{\"event\":\"done\"}");
        return rc;
    }
}
