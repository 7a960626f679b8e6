package org.stratus.kafkaclient;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka test client for the Stratus end-to-end tests: one JSON object per line on stdout
 * (see tests/clients/README.md, "Kafka clients"). Modes: produce, consume, seek, admin,
 * group-member.
 */
public final class KafkaClient {
  private KafkaClient() {}

  public static void main(String[] argv) {
    if (argv.length == 0) {
      usage("missing mode");
    }
    Args a = new Args(argv, 1);
    int code;
    try {
      switch (argv[0]) {
        case "produce": code = produce(a); break;
        case "consume": code = consume(a); break;
        case "seek": code = seek(a); break;
        case "admin": code = admin(a); break;
        case "group-member": code = groupMember(a); break;
        default: usage("unknown mode " + argv[0]); return;
      }
    } catch (Exception e) {
      Throwable c = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
      out(new J().s("event", "error").s("message", c.getClass().getSimpleName() + ": " + c.getMessage()));
      code = 1;
    }
    System.out.flush();
    // Library threads are not waited for.
    Runtime.getRuntime().halt(code);
  }

  // ---- produce ----

  static int produce(Args a) throws Exception {
    String topic = a.req("topic");
    int count = a.integer("count", 10);
    String acks = a.get("acks", "all");
    String keyPrefix = a.get("key-prefix", "k");
    String valuePrefix = a.get("value-prefix", "v");
    int valueSize = a.integer("value-size", 0);
    Integer partition = a.has("partition") ? Integer.valueOf(a.integer("partition", 0)) : null;
    Map<String, String> headers = parseHeaders(a.get("headers", ""));
    int intervalMs = a.integer("interval-ms", 0);
    Properties p = common(a);
    p.put(ProducerConfig.ACKS_CONFIG, acks);
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, a.get("compression", "none"));
    p.put(ProducerConfig.LINGER_MS_CONFIG, a.get("linger-ms", "5"));
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, a.get("idempotent", acks.equals("all") ? "true" : "false"));
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    AtomicInteger errors = new AtomicInteger();
    AtomicInteger sent = new AtomicInteger();
    CountDownLatch done = new CountDownLatch(count);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int i = 0; i < count; i++) {
        final int seq = i;
        String key = keyPrefix + "-" + i;
        String value = value(valuePrefix, i, valueSize);
        ProducerRecord<String, String> rec = new ProducerRecord<>(topic, partition, key, value);
        rec.headers().add(new RecordHeader("seq", Integer.toString(i).getBytes(StandardCharsets.UTF_8)));
        for (Map.Entry<String, String> h : headers.entrySet()) {
          rec.headers().add(new RecordHeader(h.getKey(), h.getValue().getBytes(StandardCharsets.UTF_8)));
        }
        producer.send(rec, (md, ex) -> {
          if (ex != null) {
            errors.incrementAndGet();
            out(new J().s("event", "error").n("seq", seq).s("message", ex.getClass().getSimpleName() + ": " + ex.getMessage()));
          } else {
            sent.incrementAndGet();
            out(new J().s("event", "sent").n("seq", seq).s("topic", md.topic()).n("partition", md.partition())
                .n("offset", md.hasOffset() ? md.offset() : -1).s("key", key).s("value", value)
                .n("timestamp", md.hasTimestamp() ? md.timestamp() : -1));
          }
          done.countDown();
        });
        if (intervalMs > 0) {
          // One record per batch, each with a timestamp of its own.
          producer.flush();
          Thread.sleep(intervalMs);
        }
      }
      producer.flush();
      done.await(60, TimeUnit.SECONDS);
    }
    out(new J().s("event", "done").n("sent", sent.get()).n("errors", errors.get()));
    return errors.get() == 0 && sent.get() == count ? 0 : 1;
  }

  static String value(String prefix, int i, int size) {
    String unit = prefix + "-" + i;
    if (size <= 0) {
      return unit;
    }
    StringBuilder b = new StringBuilder(size + unit.length());
    while (b.length() < size) {
      b.append(unit).append(':');
    }
    return b.substring(0, size);
  }

  // ---- consume ----

  static int consume(Args a) throws Exception {
    String topic = a.req("topic");
    int count = a.integer("count", 1);
    long timeoutMs = a.integer("timeout-ms", 30000);
    String commit = a.get("commit", "sync");
    Properties p = consumerProps(a);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, commit.equals("auto") ? "true" : "false");
    int received = 0;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(Collections.singletonList(topic), new Listener(consumer));
      out(new J().s("event", "ready"));
      long deadline = System.currentTimeMillis() + timeoutMs;
      while (received < count && System.currentTimeMillis() < deadline) {
        ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(200));
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        for (ConsumerRecord<String, String> r : recs) {
          if (received >= count) {
            break;
          }
          printRecord(r);
          received++;
          next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        if (commit.equals("sync") && !next.isEmpty()) {
          // Exactly what was printed: records past --count stay for the next consumer.
          consumer.commitSync(next);
        }
      }
    }
    out(new J().s("event", "done").n("received", received));
    return received >= count ? 0 : 2;
  }

  static Properties consumerProps(Args a) {
    Properties p = common(a);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, a.req("group"));
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, a.get("from", "earliest"));
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put("group.protocol", a.get("group-protocol", "classic"));
    if (a.has("instance-id")) {
      p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, a.req("instance-id"));
    }
    if (a.has("assignor")) {
      p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, a.req("assignor"));
    }
    if (a.has("session-timeout-ms")) {
      p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, a.req("session-timeout-ms"));
    }
    if (!a.get("group-protocol", "classic").equals("consumer")) {
      // The consumer protocol (KIP-848) takes these from the broker and rejects them here.
      p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, a.get("heartbeat-ms", "1000"));
    }
    return p;
  }

  static class Listener implements ConsumerRebalanceListener {
    final KafkaConsumer<String, String> consumer;

    Listener(KafkaConsumer<String, String> consumer) {
      this.consumer = consumer;
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
      out(new J().s("event", "revoked").raw("partitions", partitions(parts)));
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
      out(new J().s("event", "assigned").raw("partitions", partitions(consumer.assignment()))
          .raw("added", partitions(parts)));
    }
  }

  static String partitions(Collection<TopicPartition> parts) {
    TreeSet<Integer> ids = new TreeSet<>();
    for (TopicPartition tp : parts) {
      ids.add(tp.partition());
    }
    StringBuilder b = new StringBuilder("[");
    for (Integer id : ids) {
      b.append(b.length() > 1 ? "," : "").append(id);
    }
    return b.append(']').toString();
  }

  static void printRecord(ConsumerRecord<String, String> r) {
    J h = new J();
    for (Header x : r.headers()) {
      h.s(x.key(), x.value() == null ? null : new String(x.value(), StandardCharsets.UTF_8));
    }
    out(new J().s("event", "recv").s("topic", r.topic()).n("partition", r.partition()).n("offset", r.offset())
        .s("key", r.key()).s("value", r.value()).raw("headers", h.toString()).n("timestamp", r.timestamp())
        .s("timestampType", r.timestampType().name));
  }

  // ---- group-member ----

  static int groupMember(Args a) throws Exception {
    String topic = a.req("topic");
    long runMs = a.integer("run-ms", 60000);
    String stopFile = a.get("stop-file", null);
    Properties p = consumerProps(a);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    int received = 0;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
      consumer.subscribe(Collections.singletonList(topic), new Listener(consumer) {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
          // Commit what was printed before the partitions go to another member.
          if (!pending.isEmpty()) {
            consumer.commitSync(pending);
            pending.clear();
          }
          super.onPartitionsRevoked(parts);
        }
      });
      out(new J().s("event", "ready"));
      long deadline = System.currentTimeMillis() + runMs;
      while (System.currentTimeMillis() < deadline && (stopFile == null || !Files.exists(Paths.get(stopFile)))) {
        ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(100));
        for (ConsumerRecord<String, String> r : recs) {
          printRecord(r);
          received++;
          pending.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        if (!pending.isEmpty()) {
          consumer.commitSync(pending);
          pending.clear();
        }
      }
    }
    out(new J().s("event", "done").n("received", received));
    return 0;
  }

  // ---- seek ----

  static int seek(Args a) throws Exception {
    String topic = a.req("topic");
    int partition = a.integer("partition", 0);
    String to = a.req("to");
    Properties p = common(a);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    TopicPartition tp = new TopicPartition(topic, partition);
    int received = 0;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      List<TopicPartition> one = Collections.singletonList(tp);
      consumer.assign(one);
      long begin = consumer.beginningOffsets(one).get(tp);
      long end = consumer.endOffsets(one).get(tp);
      J offsets = new J().s("event", "offsets").n("partition", partition).n("beginning", begin).n("end", end);
      if (to.equals("beginning")) {
        consumer.seekToBeginning(one);
      } else if (to.equals("end")) {
        consumer.seekToEnd(one);
      } else if (to.startsWith("timestamp:")) {
        long ts = Long.parseLong(to.substring("timestamp:".length()));
        OffsetAndTimestamp ot = consumer.offsetsForTimes(Collections.singletonMap(tp, ts)).get(tp);
        offsets.n("forTimestamp", ot == null ? -1 : ot.offset());
        if (ot == null) {
          consumer.seekToEnd(one);
        } else {
          consumer.seek(tp, ot.offset());
        }
      } else {
        usage("--to beginning|end|timestamp:MS");
      }
      out(offsets);
      out(new J().s("event", "position").n("partition", partition).n("offset", consumer.position(tp)));
      long deadline = System.currentTimeMillis() + a.integer("timeout-ms", 3000);
      while (received == 0 && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          printRecord(r);
          received++;
          break;
        }
      }
    }
    out(new J().s("event", "done").n("received", received));
    return 0;
  }

  // ---- admin ----

  static int admin(Args a) throws Exception {
    List<String> pos = a.positional;
    if (pos.isEmpty()) {
      usage("admin needs a command");
    }
    Properties p = common(a);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    try (Admin admin = Admin.create(p)) {
      String cmd = pos.get(0);
      String arg = pos.size() > 1 ? pos.get(1) : null;
      switch (cmd) {
        case "create-topic": {
          NewTopic t = new NewTopic(need(arg), a.integer("partitions", 1), (short) a.integer("replication", 1));
          admin.createTopics(Collections.singletonList(t)).all().get();
          out(new J().s("event", "created").s("topic", arg).n("partitions", a.integer("partitions", 1)));
          break;
        }
        case "delete-topic":
          admin.deleteTopics(Collections.singletonList(need(arg))).all().get();
          out(new J().s("event", "deleted").s("topic", arg));
          break;
        case "add-partitions": {
          int total = Integer.parseInt(need(pos.size() > 2 ? pos.get(2) : null));
          admin.createPartitions(Collections.singletonMap(need(arg), NewPartitions.increaseTo(total))).all().get();
          out(new J().s("event", "partitions-added").s("topic", arg).n("partitions", total));
          break;
        }
        case "describe-topic": {
          TopicDescription d = admin.describeTopics(Collections.singletonList(need(arg))).allTopicNames().get().get(arg);
          StringBuilder parts = new StringBuilder("[");
          for (TopicPartitionInfo pi : d.partitions()) {
            parts.append(parts.length() > 1 ? "," : "").append(new J().n("partition", pi.partition())
                .n("leader", pi.leader() == null ? -1 : pi.leader().id()).raw("replicas", nodeIds(pi.replicas()))
                .raw("isr", nodeIds(pi.isr())));
          }
          out(new J().s("event", "topic").s("topic", d.name()).s("topicId", d.topicId().toString())
              .b("internal", d.isInternal()).raw("partitions", parts.append(']').toString()));
          break;
        }
        case "list-topics":
          out(new J().s("event", "topics").raw("topics", strings(new TreeSet<>(admin.listTopics().names().get()))));
          break;
        case "describe-cluster": {
          DescribeClusterResult c = admin.describeCluster();
          StringBuilder nodes = new StringBuilder("[");
          for (Node n : c.nodes().get()) {
            nodes.append(nodes.length() > 1 ? "," : "").append(new J().n("id", n.id()).s("host", n.host()).n("port", n.port()));
          }
          Node ctl = c.controller().get();
          out(new J().s("event", "cluster").s("clusterId", c.clusterId().get()).n("controller", ctl == null ? -1 : ctl.id())
              .raw("nodes", nodes.append(']').toString()));
          break;
        }
        case "list-groups": {
          StringBuilder groups = new StringBuilder("[");
          @SuppressWarnings("deprecation")
          Collection<ConsumerGroupListing> all = admin.listConsumerGroups().all().get();
          for (ConsumerGroupListing g : all) {
            groups.append(groups.length() > 1 ? "," : "").append(new J().s("groupId", g.groupId()));
          }
          out(new J().s("event", "groups").raw("groups", groups.append(']').toString()));
          break;
        }
        case "describe-group": {
          ConsumerGroupDescription g = admin.describeConsumerGroups(Collections.singletonList(need(arg))).all().get().get(arg);
          StringBuilder members = new StringBuilder("[");
          for (MemberDescription m : g.members()) {
            members.append(members.length() > 1 ? "," : "").append(new J().s("memberId", m.consumerId())
                .s("clientId", m.clientId()).s("host", m.host()).s("instanceId", m.groupInstanceId().orElse(null))
                .raw("partitions", partitions(m.assignment().topicPartitions())));
          }
          StringBuilder offsets = new StringBuilder("[");
          Map<TopicPartition, OffsetAndMetadata> committed =
              admin.listConsumerGroupOffsets(arg).partitionsToOffsetAndMetadata().get();
          for (Map.Entry<TopicPartition, OffsetAndMetadata> e : new TreeMap<>(byName(committed)).values()) {
            offsets.append(offsets.length() > 1 ? "," : "").append(new J().s("topic", e.getKey().topic())
                .n("partition", e.getKey().partition()).n("offset", e.getValue() == null ? -1 : e.getValue().offset()));
          }
          out(new J().s("event", "group").s("groupId", g.groupId()).s("state", groupState(g))
              .s("protocol", g.partitionAssignor()).raw("members", members.append(']').toString())
              .raw("offsets", offsets.append(']').toString()));
          break;
        }
        case "describe-configs": {
          ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, need(arg));
          Config c = admin.describeConfigs(Collections.singletonList(r)).all().get().get(r);
          J configs = new J();
          TreeMap<String, String> sorted = new TreeMap<>();
          for (ConfigEntry e : c.entries()) {
            sorted.put(e.name(), e.value());
          }
          sorted.forEach(configs::s);
          out(new J().s("event", "configs").s("topic", arg).raw("configs", configs.toString()));
          break;
        }
        case "alter-config":
        case "delete-config": {
          // alter-config T name=value | delete-config T name (incrementalAlterConfigs)
          String spec = need(pos.size() > 2 ? pos.get(2) : null);
          ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, need(arg));
          AlterConfigOp op = cmd.equals("alter-config")
              ? new AlterConfigOp(new ConfigEntry(spec.split("=", 2)[0], spec.split("=", 2)[1]), AlterConfigOp.OpType.SET)
              : new AlterConfigOp(new ConfigEntry(spec, null), AlterConfigOp.OpType.DELETE);
          Map<ConfigResource, Collection<AlterConfigOp>> ops = new HashMap<>();
          ops.put(r, Collections.singletonList(op));
          admin.incrementalAlterConfigs(ops).all().get();
          out(new J().s("event", "altered").s("topic", arg).s("config", spec));
          break;
        }
        default:
          usage("unknown admin command " + cmd);
      }
    }
    out(new J().s("event", "done"));
    return 0;
  }

  @SuppressWarnings("deprecation")
  static String groupState(ConsumerGroupDescription g) {
    // state() is deprecated in 4.x (groupState()), the only one in 3.x: both have it.
    return g.state().toString();
  }

  static Map<String, Map.Entry<TopicPartition, OffsetAndMetadata>> byName(Map<TopicPartition, OffsetAndMetadata> m) {
    Map<String, Map.Entry<TopicPartition, OffsetAndMetadata>> out = new HashMap<>();
    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : m.entrySet()) {
      out.put(String.format("%s-%08d", e.getKey().topic(), e.getKey().partition()), e);
    }
    return out;
  }

  static String need(String s) {
    if (s == null) {
      usage("missing argument");
    }
    return s;
  }

  static String nodeIds(List<Node> nodes) {
    StringBuilder b = new StringBuilder("[");
    for (Node n : nodes) {
      b.append(b.length() > 1 ? "," : "").append(n.id());
    }
    return b.append(']').toString();
  }

  static String strings(Set<String> s) {
    StringBuilder b = new StringBuilder("[");
    for (String x : s) {
      b.append(b.length() > 1 ? "," : "").append(J.quote(x));
    }
    return b.append(']').toString();
  }

  // ---- common ----

  static Properties common(Args a) {
    Properties p = new Properties();
    p.put("bootstrap.servers", a.req("bootstrap"));
    p.put("client.id", a.get("client-id", "stratus-test-" + ProcessHandle.current().pid()));
    return p;
  }

  static Map<String, String> parseHeaders(String s) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String kv : s.split(",")) {
      if (kv.isEmpty()) {
        continue;
      }
      int eq = kv.indexOf('=');
      if (eq < 0) {
        usage("--headers k=v,...");
      }
      m.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    return m;
  }

  static synchronized void out(J j) {
    System.out.println(j);
    System.out.flush();
  }

  static void usage(String why) {
    System.err.println("usage: KafkaClient produce|consume|seek|admin|group-member --bootstrap HOST:PORT ... (" + why + ")");
    System.out.println(new J().s("event", "error").s("message", "usage: " + why));
    System.out.flush();
    Runtime.getRuntime().halt(64);
  }

  /** --name value options, and the other words in order. */
  static final class Args {
    final Map<String, String> opts = new HashMap<>();
    final List<String> positional = new ArrayList<>();

    Args(String[] argv, int from) {
      for (int i = from; i < argv.length; i++) {
        if (argv[i].startsWith("--")) {
          if (i + 1 >= argv.length) {
            usage("option " + argv[i] + " needs a value");
          }
          opts.put(argv[i].substring(2), argv[++i]);
        } else {
          positional.add(argv[i]);
        }
      }
    }

    boolean has(String k) {
      return opts.containsKey(k);
    }

    String get(String k, String dflt) {
      return opts.getOrDefault(k, dflt);
    }

    String req(String k) {
      String v = opts.get(k);
      if (v == null) {
        usage("missing --" + k);
      }
      return v;
    }

    int integer(String k, int dflt) {
      return has(k) ? Integer.parseInt(opts.get(k)) : dflt;
    }
  }

  /** A tiny JSON object writer. */
  static final class J {
    private final StringBuilder b = new StringBuilder("{");

    private J key(String k) {
      b.append(b.length() > 1 ? "," : "").append(quote(k)).append(':');
      return this;
    }

    J s(String k, String v) {
      key(k).b.append(v == null ? "null" : quote(v));
      return this;
    }

    J n(String k, long v) {
      key(k).b.append(v);
      return this;
    }

    J b(String k, boolean v) {
      key(k).b.append(v);
      return this;
    }

    J raw(String k, String json) {
      key(k).b.append(json);
      return this;
    }

    static String quote(String s) {
      StringBuilder q = new StringBuilder("\"");
      for (char c : s.toCharArray()) {
        switch (c) {
          case '"': q.append("\\\""); break;
          case '\\': q.append("\\\\"); break;
          case '\n': q.append("\\n"); break;
          case '\r': q.append("\\r"); break;
          case '\t': q.append("\\t"); break;
          default:
            if (c < 0x20) {
              q.append(String.format("\\u%04x", (int) c));
            } else {
              q.append(c);
            }
        }
      }
      return q.append('"').toString();
    }

    @Override
    public String toString() {
      return b.toString() + "}";
    }
  }
}
