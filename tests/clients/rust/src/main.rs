//! Stratus test client over the `rocketmq-client-rust` 1.0.0 crate.
//! Same command line and JSON-lines output as the other clients; see ../README.md.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rocketmq_client_rust::{
    ClientConfig, ClientRuntime, ClientRuntimeConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext, ConsumeOrderlyStatus, DefaultLitePullConsumer, DefaultMQProducer, DefaultMQPushConsumer,
    LocalTransactionState, MQPushConsumer, MessageListenerConcurrently, MessageListenerOrderly, MessageQueueSelector,
    SelectMessageQueueByHash, TransactionListener, TransactionMQProducer,
};
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_client_id_setter::MessageClientIDSetter;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_single::Message;
use rocketmq_model::common::message::MessageTrait;
use rocketmq_model::result::SendResult;
use rocketmq_observability::TelemetryRuntimeGuard;
use rocketmq_protocol::protocol::heartbeat::message_model::MessageModel;
use rocketmq_runtime::RuntimeOwner;
use serde_json::{json, Value};

static OUT: Mutex<()> = Mutex::new(());

/// Writes one JSON object as a line and flushes it.
fn emit(v: Value) {
    let _g = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn usage(why: &str) -> ! {
    eprintln!("error: {why}");
    eprintln!("usage: produce|consume|pull|txn --namesrv HOST:PORT --topic T --group G ... (see README.md)");
    let _ = std::io::stdout().flush();
    std::process::exit(64);
}

struct Args(HashMap<String, String>);

/// Options without a value (present = "true").
const FLAGS: &[&str] = &["orderly"];

impl Args {
    fn parse(raw: &[String]) -> Args {
        let mut m = HashMap::new();
        let mut it = raw.iter();
        while let Some(a) = it.next() {
            let Some(k) = a.strip_prefix("--") else { usage(&format!("unexpected argument {a}")) };
            if FLAGS.contains(&k) {
                m.insert(k.to_string(), "true".to_string());
                continue;
            }
            let Some(v) = it.next() else { usage(&format!("missing value for {a}")) };
            m.insert(k.to_string(), v.clone());
        }
        Args(m)
    }
    fn req(&self, k: &str) -> String {
        self.0.get(k).cloned().unwrap_or_else(|| usage(&format!("missing --{k}")))
    }
    fn opt(&self, k: &str, d: &str) -> String {
        self.0.get(k).cloned().unwrap_or_else(|| d.to_string())
    }
    fn num<T: std::str::FromStr>(&self, k: &str, d: Option<&str>) -> T {
        let s = match d {
            Some(d) => self.opt(k, d),
            None => self.req(k),
        };
        s.parse().unwrap_or_else(|_| usage(&format!("bad --{k} {s}")))
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.len() < 2 {
        usage("missing command");
    }
    let cmd = argv[1].clone();
    if !matches!(cmd.as_str(), "produce" | "consume" | "pull" | "txn") {
        usage(&format!("unknown command {cmd}"));
    }
    let args = Args::parse(&argv[2..]);

    let owner = RuntimeOwner::new().unwrap_or_else(|e| {
        eprintln!("runtime: {e}");
        std::process::exit(1)
    });
    let telemetry = TelemetryRuntimeGuard::noop();
    let runtime = match ClientRuntime::try_new(
        owner.root_context().component("stratus-test-client"),
        ClientRuntimeConfig::default(),
        telemetry.handle(),
    ) {
        Ok(r) => r,
        Err(e) => {
            emit(json!({"event":"error","seq":-1,"error":format!("client runtime: {e}")}));
            std::process::exit(1);
        }
    };
    let rc = owner.block_on(async move {
        match cmd.as_str() {
            "produce" => produce(runtime, &args).await,
            "consume" => consume(runtime, &args).await,
            "txn" => txn(runtime, &args).await,
            _ => pull(runtime, &args).await,
        }
    });
    let _ = std::io::stdout().flush();
    // Leave without tearing the runtimes down: the harness only needs the output,
    // and a slow teardown must not hold the process.
    std::process::exit(rc);
}

// ------------------------------------------------------------------ produce

fn make_body(prefix: &str, seq: usize, size: usize) -> Vec<u8> {
    let unit = format!("{prefix}{seq}:").into_bytes();
    (0..size).map(|i| unit[i % unit.len()]).collect()
}

fn err_text(e: impl std::fmt::Display) -> String {
    let s = e.to_string();
    if s.len() > 500 {
        s.chars().take(500).collect()
    } else {
        s
    }
}

fn status_name(r: &SendResult) -> String {
    // SendStatus Debug is e.g. "SendOk"; map it to the Java spelling.
    let d = format!("{:?}", r.send_status);
    match d.as_str() {
        "SendOk" => "SEND_OK".to_string(),
        "FlushDiskTimeout" => "FLUSH_DISK_TIMEOUT".to_string(),
        "FlushSlaveTimeout" => "FLUSH_SLAVE_TIMEOUT".to_string(),
        "SlaveNotAvailable" => "SLAVE_NOT_AVAILABLE".to_string(),
        _ => d,
    }
}

fn sent_line(seq: usize, r: &SendResult, msg_id: Option<String>, offset_msg_id: Option<String>, delta: u64) {
    let queue_id = r.message_queue.as_ref().map(|q| q.queue_id()).unwrap_or(-1);
    emit(json!({
        "event": "sent",
        "seq": seq,
        "msgId": msg_id.unwrap_or_else(|| r.msg_id.as_ref().map(|s| s.to_string()).unwrap_or_default()),
        "offsetMsgId": offset_msg_id.unwrap_or_else(|| r.offset_msg_id.clone().unwrap_or_default()),
        "queueId": queue_id,
        "queueOffset": r.queue_offset + delta,
        "status": status_name(r),
    }));
}

fn err_line(seq: i64, e: impl std::fmt::Display) {
    emit(json!({"event":"error","seq":seq,"error":err_text(e)}));
}

fn build_message(topic: &str, tag: &str, key: String, seq: usize, body: Vec<u8>) -> Result<Message, String> {
    build_message_with(topic, tag, key, seq, body, 0, None)
}

/// `delay_level` > 0 sets the delay level; `skey` adds the user property `skey`.
fn build_message_with(
    topic: &str,
    tag: &str,
    key: String,
    seq: usize,
    body: Vec<u8>,
    delay_level: i32,
    skey: Option<usize>,
) -> Result<Message, String> {
    let mut b = Message::builder()
        .topic(topic)
        .tags(tag)
        .key(key)
        .body(body)
        .raw_property("seq", seq.to_string())
        .map_err(|e| e.to_string())?;
    if delay_level > 0 {
        b = b.delay_level(delay_level);
    }
    if let Some(k) = skey {
        b = b.raw_property("skey", k.to_string()).map_err(|e| e.to_string())?;
    }
    let mut msg = b.build().map_err(|e| e.to_string())?;
    // The client would assign this during send; assign it here so it is known for every mode.
    MessageClientIDSetter::set_uniq_id(&mut msg);
    Ok(msg)
}

fn uniq_id(m: &Message) -> String {
    MessageClientIDSetter::get_uniq_id(m).map(|s| s.to_string()).unwrap_or_default()
}

async fn produce(runtime: Arc<ClientRuntime>, a: &Args) -> i32 {
    let namesrv = a.req("namesrv");
    let topic = a.req("topic");
    let group = a.req("group");
    let count: usize = a.num("count", None);
    let mode = a.req("mode");
    let tag = a.req("tag");
    let keys_prefix = a.req("keys-prefix");
    let body_size: usize = a.num("body-size", None);
    let batch_size: usize = a.num("batch-size", Some("8"));
    let id_prefix = a.opt("id-prefix", "m");
    if !matches!(mode.as_str(), "sync" | "async" | "oneway" | "batch") {
        usage(&format!("bad --mode {mode}"));
    }
    if batch_size == 0 {
        usage("bad --batch-size");
    }
    let delay_level: i32 = a.num("delay-level", Some("0"));
    if delay_level < 0 || (delay_level > 0 && mode == "batch") {
        usage("--delay-level needs L >= 1 and not --mode batch");
    }
    let sharding_keys: usize = a.num("sharding-key-count", Some("0"));
    if sharding_keys > 0 && mode != "sync" {
        usage("--sharding-key-count needs --mode sync");
    }

    let mut producer = DefaultMQProducer::builder(runtime)
        .producer_group(group)
        .name_server_addr(namesrv)
        .send_msg_timeout(10_000)
        .build();
    if let Err(e) = producer.start().await {
        err_line(-1, format!("start: {e}"));
        emit(json!({"event":"done","sent":0,"errors":1}));
        return 1;
    }

    let sent = Arc::new(AtomicI64::new(0));
    let errors = Arc::new(AtomicI64::new(0));
    let mut msgs = Vec::with_capacity(count);
    for i in 0..count {
        let skey = (sharding_keys > 0).then(|| i % sharding_keys);
        let body = make_body(&id_prefix, i, body_size);
        match build_message_with(&topic, &tag, format!("{keys_prefix}-{i}"), i, body, delay_level, skey) {
            Ok(m) => msgs.push(Some(m)),
            Err(e) => {
                errors.fetch_add(1, Ordering::SeqCst);
                err_line(i as i64, e);
                msgs.push(None);
            }
        }
    }

    let report = {
        let sent = sent.clone();
        let errors = errors.clone();
        move |seq: usize, r: &SendResult| {
            if status_name(r) == "SEND_OK" {
                sent.fetch_add(1, Ordering::SeqCst);
                sent_line(seq, r, None, None, 0);
            } else {
                errors.fetch_add(1, Ordering::SeqCst);
                err_line(seq as i64, format!("status {}", status_name(r)));
            }
        }
    };

    match mode.as_str() {
        "sync" => {
            for (i, m) in msgs.into_iter().enumerate() {
                let Some(m) = m else { continue };
                let res = if sharding_keys > 0 {
                    // The library's hash selector: Java hashCode of the i32 arg (= its value) % queues.
                    let arg = (i % sharding_keys) as i32;
                    let select = |mqs: &[rocketmq_model::common::message::message_queue::MessageQueue],
                                  msg: &Message,
                                  arg: &i32| SelectMessageQueueByHash.select(mqs, msg, arg);
                    producer.send_with_selector(m, select, arg).await
                } else {
                    producer.send(m).await
                };
                match res {
                    Ok(Some(r)) => report(i, &r),
                    Ok(None) => {
                        errors.fetch_add(1, Ordering::SeqCst);
                        err_line(i as i64, "no send result");
                    }
                    Err(e) => {
                        errors.fetch_add(1, Ordering::SeqCst);
                        err_line(i as i64, e);
                    }
                }
            }
        }
        "async" => {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
            let mut pending = 0usize;
            for (i, m) in msgs.into_iter().enumerate() {
                let Some(m) = m else { continue };
                let tx = tx.clone();
                let report = report.clone();
                let errs = errors.clone();
                let cb = move |r: Option<&SendResult>, e: Option<&rocketmq_client_rust::ClientError>| {
                    match (r, e) {
                        (Some(r), _) => report(i, r),
                        (None, Some(e)) => {
                            errs.fetch_add(1, Ordering::SeqCst);
                            err_line(i as i64, e);
                        }
                        (None, None) => {
                            errs.fetch_add(1, Ordering::SeqCst);
                            err_line(i as i64, "callback without result or error");
                        }
                    }
                    let _ = tx.send(());
                };
                match producer.send_with_callback(m, cb).await {
                    Ok(()) => pending += 1,
                    Err(e) => {
                        errors.fetch_add(1, Ordering::SeqCst);
                        err_line(i as i64, e);
                    }
                }
            }
            drop(tx);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60 + count as u64 / 10);
            while pending > 0 {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(())) => pending -= 1,
                    Ok(None) | Err(_) => {
                        errors.fetch_add(pending as i64, Ordering::SeqCst);
                        err_line(-1, format!("timed out waiting for {pending} async callbacks"));
                        break;
                    }
                }
            }
        }
        "oneway" => {
            for (i, m) in msgs.into_iter().enumerate() {
                let Some(m) = m else { continue };
                let id = uniq_id(&m);
                match producer.send_oneway(m).await {
                    Ok(()) => {
                        sent.fetch_add(1, Ordering::SeqCst);
                        emit(json!({"event":"sent","seq":i,"msgId":id,"offsetMsgId":"","queueId":-1,"queueOffset":-1,"status":"ONEWAY"}));
                    }
                    Err(e) => {
                        errors.fetch_add(1, Ordering::SeqCst);
                        err_line(i as i64, e);
                    }
                }
            }
        }
        _ => {
            let all: Vec<(usize, Message)> =
                msgs.into_iter().enumerate().filter_map(|(i, m)| m.map(|m| (i, m))).collect();
            for chunk in all.chunks(batch_size) {
                let ids: Vec<String> = chunk.iter().map(|(_, m)| uniq_id(m)).collect();
                let batch: Vec<Message> = chunk.iter().map(|(_, m)| m.clone()).collect();
                match producer.send_batch(batch).await {
                    Ok(r) => {
                        let off_ids: Vec<String> = r
                            .offset_msg_id
                            .clone()
                            .unwrap_or_default()
                            .split(',')
                            .map(str::to_string)
                            .collect();
                        for (k, (i, _)) in chunk.iter().enumerate() {
                            if status_name(&r) == "SEND_OK" {
                                sent.fetch_add(1, Ordering::SeqCst);
                                sent_line(*i, &r, Some(ids[k].clone()), Some(off_ids.get(k).cloned().unwrap_or_default()), k as u64);
                            } else {
                                errors.fetch_add(1, Ordering::SeqCst);
                                err_line(*i as i64, format!("status {}", status_name(&r)));
                            }
                        }
                    }
                    Err(e) => {
                        for (i, _) in chunk {
                            errors.fetch_add(1, Ordering::SeqCst);
                            err_line(*i as i64, &e);
                        }
                    }
                }
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), producer.shutdown()).await;
    let (s, e) = (sent.load(Ordering::SeqCst), errors.load(Ordering::SeqCst));
    emit(json!({"event":"done","sent":s,"errors":e}));
    if e == 0 {
        0
    } else {
        1
    }
}

// ------------------------------------------------------------------ consume

struct Receiver {
    expect: usize,
    state: Mutex<(HashSet<String>, Option<Instant>)>,
}

impl Receiver {
    fn new(expect: usize) -> Arc<Receiver> {
        Arc::new(Receiver { expect, state: Mutex::new((HashSet::new(), None)) })
    }

    /// A delivery the listener rejects (--fail-times); not counted toward --expect.
    fn retry(&self, m: &MessageExt) {
        let props = m.properties();
        let get = |k: &str| props.iter().find(|(pk, _)| pk.as_str() == k).map(|(_, v)| v.to_string());
        let id = get("UNIQ_KEY").filter(|s| !s.is_empty()).unwrap_or_else(|| m.msg_id().to_string());
        emit(json!({
            "event": "retry",
            "msgId": id,
            "keys": get("KEYS").unwrap_or_default(),
            "reconsumeTimes": m.reconsume_times(),
            "topic": m.topic().to_string(),
        }));
    }

    fn accept(&self, m: &MessageExt) {
        let props = m.properties();
        let get = |k: &str| props.iter().find(|(pk, _)| pk.as_str() == k).map(|(_, v)| v.to_string());
        let id = get("UNIQ_KEY").filter(|s| !s.is_empty()).unwrap_or_else(|| m.msg_id().to_string());
        let body = m.body().unwrap_or_default();
        emit(json!({
            "event": "recv",
            "msgId": id,
            "topic": m.topic().to_string(),
            "queueId": m.queue_id(),
            "queueOffset": m.queue_offset(),
            "tags": get("TAGS").unwrap_or_default(),
            "keys": get("KEYS").unwrap_or_default(),
            "seq": get("seq").unwrap_or_default(),
            "bodyLen": body.len(),
            "bodyCrc32": crc32fast::hash(&body),
            "reconsumeTimes": m.reconsume_times(),
        }));
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.0.insert(id) {
            st.1 = Some(Instant::now());
        }
    }

    fn count(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0.len()
    }

    /// 0 when enough (or idle), 2 on timeout.
    async fn wait(&self, timeout: Duration, idle: Duration) -> i32 {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if st.0.len() >= self.expect {
                    return 0;
                }
                if !idle.is_zero() {
                    if let Some(last) = st.1 {
                        if last.elapsed() >= idle {
                            return 0;
                        }
                    }
                }
            }
            if Instant::now() >= deadline {
                return 2;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Listener: the receiver and --fail-times (reject while reconsumeTimes < N).
struct Listener(Arc<Receiver>, i32);

impl MessageListenerConcurrently for Listener {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _ctx: &ConsumeConcurrentlyContext,
    ) -> rocketmq_client_rust::ClientResult<ConsumeConcurrentlyStatus> {
        // Batch size is 1 (the default), so a status applies to exactly one message.
        if let Some(m) = msgs.iter().find(|m| m.reconsume_times() < self.1) {
            self.0.retry(m);
            return Ok(ConsumeConcurrentlyStatus::ReconsumeLater);
        }
        for m in msgs {
            self.0.accept(m);
        }
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

struct OrderlyListener(Arc<Receiver>, i32);

impl MessageListenerOrderly for OrderlyListener {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _ctx: &mut ConsumeOrderlyContext,
    ) -> rocketmq_client_rust::ClientResult<ConsumeOrderlyStatus> {
        if let Some(m) = msgs.iter().find(|m| m.reconsume_times() < self.1) {
            self.0.retry(m);
            return Ok(ConsumeOrderlyStatus::SuspendCurrentQueueAMoment);
        }
        for m in msgs {
            self.0.accept(m);
        }
        Ok(ConsumeOrderlyStatus::Success)
    }
}

async fn consume(runtime: Arc<ClientRuntime>, a: &Args) -> i32 {
    let namesrv = a.req("namesrv");
    let topic = a.req("topic");
    let group = a.req("group");
    let model = match a.opt("model", "clustering").as_str() {
        "clustering" => MessageModel::Clustering,
        "broadcasting" => MessageModel::Broadcasting,
        m => usage(&format!("bad --model {m}")),
    };
    let expr = a.opt("expr", "*");
    let expect: usize = a.num("expect", None);
    let timeout: u64 = a.num("timeout-secs", None);
    let from = match a.opt("from", "first").as_str() {
        "first" => ConsumeFromWhere::ConsumeFromFirstOffset,
        "last" => ConsumeFromWhere::ConsumeFromLastOffset,
        f => usage(&format!("bad --from {f}")),
    };
    let idle: u64 = a.num("idle-exit-secs", Some("0"));
    let fail_times: i32 = a.num("fail-times", Some("0"));
    let max_reconsume: i32 = a.num("max-reconsume", Some("-1"));
    let orderly = a.0.contains_key("orderly");

    // A distinct instance name per process: the client only makes it unique itself in
    // clustering mode, and two broadcasting consumers with one client id would share the
    // local offset file ($HOME/.rocketmq_offsets/<clientId>/<group>).
    let mut client_config = ClientConfig::default();
    client_config.set_instance_name(format!("stratus-{}", std::process::id()).into());
    let mut builder = DefaultMQPushConsumer::builder(runtime)
        .client_config(client_config)
        .consumer_group(group)
        .name_server_addr(namesrv)
        .message_model(model)
        .consume_from_where(from);
    if max_reconsume >= 0 {
        builder = builder.max_reconsume_times(max_reconsume);
    }
    let mut consumer = builder.build();
    let rx = Receiver::new(expect);
    if let Err(e) = consumer.subscribe(topic.as_str(), expr.as_str()).await {
        err_line(-1, format!("subscribe: {e}"));
        emit(json!({"event":"done","received":0}));
        return 1;
    }
    if orderly {
        consumer.register_message_listener_orderly(OrderlyListener(rx.clone(), fail_times));
    } else {
        consumer.register_message_listener_concurrently(Listener(rx.clone(), fail_times));
    }
    if let Err(e) = consumer.start().await {
        err_line(-1, format!("start: {e}"));
        emit(json!({"event":"done","received":0}));
        return 1;
    }
    emit(json!({"event":"ready"}));
    let rc = rx.wait(Duration::from_secs(timeout), Duration::from_secs(idle)).await;
    if rc == 0 && tokio::time::timeout(Duration::from_secs(10), consumer.shutdown()).await.is_err() {
        eprintln!("warning: consumer shutdown did not finish in 10 s");
    }
    emit(json!({"event":"done","received":rx.count()}));
    rc
}

// ------------------------------------------------------------------ pull

async fn pull(runtime: Arc<ClientRuntime>, a: &Args) -> i32 {
    let namesrv = a.req("namesrv");
    let topic = a.req("topic");
    let group = a.req("group");
    let expr = a.opt("expr", "*");
    let expect: usize = a.num("expect", None);
    let timeout: u64 = a.num("timeout-secs", None);

    let fail = |what: &str, e: &dyn std::fmt::Display| {
        err_line(-1, format!("{what}: {e}"));
        emit(json!({"event":"done","received":0}));
        1
    };
    let consumer: DefaultLitePullConsumer = match DefaultLitePullConsumer::builder(runtime)
        .instance_name(format!("stratus-{}", std::process::id()))
        .consumer_group(group)
        .name_server_addr(namesrv)
        .auto_commit(false)
        .poll_timeout_millis(1000)
        .build()
    {
        Ok(c) => c,
        Err(e) => return fail("build", &e),
    };
    if let Err(e) = consumer.set_sub_expression_for_assign(&topic, &expr).await {
        return fail("set_sub_expression_for_assign", &e);
    }
    if let Err(e) = consumer.start().await {
        return fail("start", &e);
    }
    let mqs = match consumer.fetch_message_queues(&topic).await {
        Ok(q) => q,
        Err(e) => return fail("fetch_message_queues", &e),
    };
    if let Err(e) = consumer.assign(mqs.clone()).await {
        return fail("assign", &e);
    }
    for mq in &mqs {
        if let Err(e) = consumer.seek(mq, 0).await {
            return fail("seek", &e);
        }
    }
    emit(json!({"event":"ready"}));
    let rx = Receiver::new(expect);
    let deadline = Instant::now() + Duration::from_secs(timeout);
    let mut rc = 2;
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        let got = match tokio::time::timeout(left, consumer.poll_with_timeout(500)).await {
            Ok(v) => v,
            Err(_) => break,
        };
        for m in &got {
            rx.accept(m);
        }
        if rx.count() >= expect {
            rc = 0;
            break;
        }
    }
    if rc == 0 {
        let _ = tokio::time::timeout(Duration::from_secs(10), consumer.shutdown()).await;
    }
    emit(json!({"event":"done","received":rx.count()}));
    rc
}

// ------------------------------------------------------------------ txn

fn txn_state(answer: &str) -> LocalTransactionState {
    match answer {
        "commit" => LocalTransactionState::CommitMessage,
        "rollback" => LocalTransactionState::RollbackMessage,
        "unknown" => LocalTransactionState::Unknown,
        a => usage(&format!("bad transaction answer {a}")),
    }
}

fn txn_name(s: LocalTransactionState) -> &'static str {
    match s {
        LocalTransactionState::CommitMessage => "commit",
        LocalTransactionState::RollbackMessage => "rollback",
        LocalTransactionState::Unknown => "unknown",
    }
}

struct TxnListener {
    local: String, // commit|rollback|unknown|die
    check: String, // commit|rollback|unknown
    checks: Arc<AtomicI64>,
}

impl TransactionListener for TxnListener {
    fn execute_local_transaction(
        &self,
        msg: &dyn MessageTrait,
        arg: Option<&(dyn std::any::Any + Send + Sync)>,
    ) -> LocalTransactionState {
        let seq = arg.and_then(|a| a.downcast_ref::<usize>()).map(|s| *s as i64).unwrap_or(-1);
        emit(json!({
            "event": "half",
            "seq": seq,
            "msgId": msg.property(&"UNIQ_KEY".into()).map(|s| s.to_string()).unwrap_or_default(),
            "transactionId": msg.transaction_id().map(|s| s.to_string()).unwrap_or_default(),
        }));
        if self.local == "die" {
            // The half message is stored; END_TRANSACTION is never sent.
            let _ = std::io::stdout().flush();
            std::process::exit(0);
        }
        txn_state(&self.local)
    }

    fn check_local_transaction(&self, m: &MessageExt) -> LocalTransactionState {
        self.checks.fetch_add(1, Ordering::SeqCst);
        let props = m.properties();
        let get = |k: &str| props.iter().find(|(pk, _)| pk.as_str() == k).map(|(_, v)| v.to_string());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        emit(json!({
            "event": "check",
            "msgId": get("UNIQ_KEY").unwrap_or_default(),
            "keys": get("KEYS").unwrap_or_default(),
            "seq": get("seq").unwrap_or_default(),
            "answer": self.check,
            "transactionId": MessageTrait::transaction_id(m).map(|s| s.to_string()).unwrap_or_default(),
            "checkTimes": get("TRANSACTION_CHECK_TIMES").unwrap_or_default(),
            "ageMs": now - m.born_timestamp(),
        }));
        txn_state(&self.check)
    }
}

async fn txn(runtime: Arc<ClientRuntime>, a: &Args) -> i32 {
    let namesrv = a.req("namesrv");
    let topic = a.req("topic");
    let group = a.req("group");
    let count: usize = a.num("count", None);
    // Message content options only matter when something is sent.
    let (tag, keys_prefix, body_size): (String, String, usize) = if count > 0 {
        (a.req("tag"), a.req("keys-prefix"), a.num("body-size", None))
    } else {
        (a.opt("tag", ""), a.opt("keys-prefix", ""), a.num("body-size", Some("0")))
    };
    let id_prefix = a.opt("id-prefix", "m");
    let local = a.req("local");
    let check = a.req("check");
    let stay: u64 = a.num("stay-secs", None);
    if local != "die" {
        txn_state(&local);
    }
    txn_state(&check);

    let checks = Arc::new(AtomicI64::new(0));
    let mut client_config = ClientConfig::default();
    client_config.set_instance_name(format!("stratus-{}", std::process::id()).into());
    let mut builder = TransactionMQProducer::builder(runtime)
        .client_config(client_config)
        .producer_group(group)
        .name_server_addr(namesrv)
        .send_msg_timeout(10_000)
        .transaction_listener(TxnListener { local, check, checks: checks.clone() });
    if count == 0 {
        // A producer heartbeats only to brokers it knows from topic routes; one that never
        // sends would be unknown to the broker and get no check-backs. `topics` makes the
        // client resolve T's route at start (as Java 5.x `setTopics` does).
        builder = builder.topics(vec![topic.clone()]);
    }
    let mut producer = builder.build();
    if let Err(e) = producer.start().await {
        err_line(-1, format!("start: {e}"));
        emit(json!({"event":"done","sent":0,"checks":0,"errors":1}));
        return 1;
    }

    let mut sent = 0i64;
    let mut errors = 0i64;
    for i in 0..count {
        let m = match build_message(&topic, &tag, format!("{keys_prefix}-{i}"), i, make_body(&id_prefix, i, body_size)) {
            Ok(m) => m,
            Err(e) => {
                errors += 1;
                err_line(i as i64, e);
                continue;
            }
        };
        match producer.send_message_in_transaction(m, Some(i)).await {
            Ok(t) => match t.send_result {
                Some(r) if status_name(&r) == "SEND_OK" => {
                    sent += 1;
                    emit(json!({
                        "event": "sent",
                        "seq": i,
                        "msgId": r.msg_id.as_ref().map(|s| s.to_string()).unwrap_or_default(),
                        "offsetMsgId": r.offset_msg_id.clone().unwrap_or_default(),
                        "queueId": r.message_queue.as_ref().map(|q| q.queue_id()).unwrap_or(-1),
                        "queueOffset": r.queue_offset,
                        "status": "SEND_OK",
                        "local": txn_name(t.local_transaction_state.unwrap_or(LocalTransactionState::Unknown)),
                        "transactionId": r.transaction_id.clone().unwrap_or_default(),
                    }));
                }
                Some(r) => {
                    errors += 1;
                    err_line(i as i64, format!("status {}", status_name(&r)));
                }
                None => {
                    errors += 1;
                    err_line(i as i64, "no send result");
                }
            },
            Err(e) => {
                errors += 1;
                err_line(i as i64, e);
            }
        }
    }

    tokio::time::sleep(Duration::from_secs(stay)).await;
    if tokio::time::timeout(Duration::from_secs(10), producer.shutdown()).await.is_err() {
        eprintln!("warning: producer shutdown did not finish in 10 s");
    }
    emit(json!({"event":"done","sent":sent,"checks":checks.load(Ordering::SeqCst),"errors":errors}));
    if errors == 0 {
        0
    } else {
        1
    }
}
