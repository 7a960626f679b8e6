// Stratus test client over github.com/apache/rocketmq-client-go/v2.
// Same command line and JSON-lines output as the other clients; see ../README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var outMu sync.Mutex

// emit writes one JSON object as a line and flushes it (stdout is unbuffered in Go).
func emit(fields ...interface{}) {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(fields); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(fields[i])
		v, _ := json.Marshal(fields[i+1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteString("}\n")
	outMu.Lock()
	os.Stdout.WriteString(b.String())
	outMu.Unlock()
}

func die(code int, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "error: "+format+"\n", args...)
	os.Exit(code)
}

func main() {
	if len(os.Args) < 2 {
		die(64, "usage: produce|consume|pull|txn|request|admin --namesrv HOST:PORT --topic T --group G ... (see README.md)")
	}
	level := os.Getenv("ROCKETMQ_GO_LOG_LEVEL")
	if level == "" {
		level = "error"
	}
	rlog.SetLogLevel(level) // the library logs to stderr
	var rc int
	switch os.Args[1] {
	case "produce":
		rc = produce(os.Args[2:])
	case "consume":
		rc = consume(os.Args[2:])
	case "pull":
		rc = pull(os.Args[2:])
	case "txn":
		rc = txn(os.Args[2:])
	case "request":
		rc = request(os.Args[2:])
	case "admin":
		rc = adminRun(os.Args[2:])
	default:
		die(64, "unknown command %s", os.Args[1])
	}
	os.Exit(rc)
}

func requireFlags(fs *flag.FlagSet, names ...string) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, n := range names {
		if !set[n] {
			die(64, "missing --%s", n)
		}
	}
}

func nameServer(addr string) primitive.NamesrvAddr {
	ns, err := primitive.NewNamesrvAddr(strings.Split(addr, ";")...)
	if err != nil {
		die(64, "bad --namesrv %q: %v", addr, err)
	}
	return ns
}

// ------------------------------------------------------------------ produce

func makeBody(prefix string, seq, size int) []byte {
	unit := []byte(prefix + strconv.Itoa(seq) + ":")
	out := make([]byte, size)
	for i := range out {
		out[i] = unit[i%len(unit)]
	}
	return out
}

func sentLine(seq int, msgID, offsetMsgID string, queueID int, queueOffset int64, status string) {
	emit("event", "sent", "seq", seq, "msgId", msgID, "offsetMsgId", offsetMsgID,
		"queueId", queueID, "queueOffset", queueOffset, "status", status)
}

func errLine(seq int, err interface{}) {
	emit("event", "error", "seq", seq, "error", fmt.Sprint(err))
}

func statusName(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	default:
		return fmt.Sprintf("STATUS_%d", int(s))
	}
}

func produce(args []string) int {
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "")
	topic := fs.String("topic", "", "")
	group := fs.String("group", "", "")
	count := fs.Int("count", 0, "")
	mode := fs.String("mode", "", "sync|async|oneway|batch")
	tag := fs.String("tag", "", "")
	keysPrefix := fs.String("keys-prefix", "", "")
	bodySize := fs.Int("body-size", 0, "")
	batchSize := fs.Int("batch-size", 8, "")
	idPrefix := fs.String("id-prefix", "m", "")
	delayLevel := fs.Int("delay-level", 0, "message delay level (not with --mode batch)")
	shardingKeys := fs.Int("sharding-key-count", 0, "hash queue selector over sharding key i%K (--mode sync)")
	accessKey := fs.String("access-key", "", "ACL access key (signs every request)")
	secretKey := fs.String("secret-key", "", "ACL secret key")
	_ = fs.Parse(args)
	requireFlags(fs, "namesrv", "topic", "group", "count", "mode", "tag", "keys-prefix", "body-size")
	if *delayLevel < 0 || (*delayLevel > 0 && *mode == "batch") {
		die(64, "--delay-level needs L >= 1 and not --mode batch")
	}
	if *shardingKeys < 0 || (*shardingKeys > 0 && *mode != "sync") {
		die(64, "--sharding-key-count needs K >= 1 and --mode sync")
	}
	switch *mode {
	case "sync", "async", "oneway", "batch":
	default:
		die(64, "bad --mode %s", *mode)
	}
	if *batchSize < 1 {
		die(64, "bad --batch-size")
	}

	opts := []producer.Option{
		producer.WithNameServer(nameServer(*namesrv)),
		producer.WithGroupName(*group),
		producer.WithInstanceName(fmt.Sprintf("stratus-%d", os.Getpid())),
		producer.WithSendMsgTimeout(10*time.Second),
		producer.WithRetry(2),
	}
	if *accessKey != "" {
		opts = append(opts, producer.WithCredentials(primitive.Credentials{AccessKey: *accessKey, SecretKey: *secretKey}))
	}
	if *shardingKeys > 0 {
		// FNV-1a of the message's sharding key modulo the queue count.
		opts = append(opts, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	}
	p, err := rocketmq.NewProducer(opts...)
	if err != nil {
		errLine(-1, err)
		emit("event", "done", "sent", 0, "errors", 1)
		return 1
	}
	if err := p.Start(); err != nil {
		errLine(-1, err)
		emit("event", "done", "sent", 0, "errors", 1)
		return 1
	}

	msgs := make([]*primitive.Message, *count)
	for i := range msgs {
		m := primitive.NewMessage(*topic, makeBody(*idPrefix, i, *bodySize))
		m.WithTag(*tag)
		m.WithKeys([]string{fmt.Sprintf("%s-%d", *keysPrefix, i)})
		m.WithProperty("seq", strconv.Itoa(i))
		if *delayLevel > 0 {
			m.WithDelayTimeLevel(*delayLevel)
		}
		if *shardingKeys > 0 {
			key := strconv.Itoa(i % *shardingKeys)
			m.WithShardingKey(key)
			m.WithProperty("skey", key)
		}
		msgs[i] = m
	}

	var sent, errs int64
	ctx := context.Background()
	report := func(seq int, r *primitive.SendResult) {
		if r.Status == primitive.SendOK {
			atomic.AddInt64(&sent, 1)
			sentLine(seq, r.MsgID, r.OffsetMsgID, r.MessageQueue.QueueId, r.QueueOffset, "SEND_OK")
		} else {
			atomic.AddInt64(&errs, 1)
			errLine(seq, "status "+statusName(r.Status))
		}
	}
	switch *mode {
	case "sync":
		for i, m := range msgs {
			r, err := p.SendSync(ctx, m)
			if err != nil {
				atomic.AddInt64(&errs, 1)
				errLine(i, err)
				continue
			}
			report(i, r)
		}
	case "async":
		var wg sync.WaitGroup
		for i, m := range msgs {
			seq := i
			wg.Add(1)
			err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
				defer wg.Done()
				if err != nil {
					atomic.AddInt64(&errs, 1)
					errLine(seq, err)
					return
				}
				report(seq, r)
			}, m)
			if err != nil {
				wg.Done()
				atomic.AddInt64(&errs, 1)
				errLine(seq, err)
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Duration(60+*count/10) * time.Second):
			atomic.AddInt64(&errs, 1)
			errLine(-1, "timed out waiting for async callbacks")
		}
	case "oneway":
		for i, m := range msgs {
			if err := p.SendOneWay(ctx, m); err != nil {
				atomic.AddInt64(&errs, 1)
				errLine(i, err)
				continue
			}
			atomic.AddInt64(&sent, 1)
			sentLine(i, m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex), "", -1, -1, "ONEWAY")
		}
	case "batch":
		for start := 0; start < len(msgs); start += *batchSize {
			end := start + *batchSize
			if end > len(msgs) {
				end = len(msgs)
			}
			batch := msgs[start:end]
			// The Go client does not give the messages inside a batch a UNIQ_KEY
			// (the Java client does); set one so every message has a client id.
			ids := make([]string, len(batch))
			for k, m := range batch {
				ids[k] = primitive.CreateUniqID()
				m.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, ids[k])
			}
			r, err := p.SendSync(ctx, batch...)
			if err != nil {
				for i := start; i < end; i++ {
					atomic.AddInt64(&errs, 1)
					errLine(i, err)
				}
				continue
			}
			offIDs := strings.Split(r.OffsetMsgID, ",")
			for i := start; i < end; i++ {
				k := i - start
				if r.Status != primitive.SendOK {
					atomic.AddInt64(&errs, 1)
					errLine(i, "status "+statusName(r.Status))
					continue
				}
				off := ""
				if k < len(offIDs) {
					off = offIDs[k]
				}
				atomic.AddInt64(&sent, 1)
				sentLine(i, ids[k], off, r.MessageQueue.QueueId, r.QueueOffset+int64(k), "SEND_OK")
			}
		}
	}
	_ = p.Shutdown()
	emit("event", "done", "sent", atomic.LoadInt64(&sent), "errors", atomic.LoadInt64(&errs))
	if errs != 0 {
		return 1
	}
	return 0
}

// ------------------------------------------------------------------ consume

type receiver struct {
	expect  int
	mu      sync.Mutex
	seen    map[string]bool
	lastNew time.Time
	enough  chan struct{}
}

func newReceiver(expect int) *receiver {
	return &receiver{expect: expect, seen: map[string]bool{}, enough: make(chan struct{})}
}

func msgID(m *primitive.MessageExt) string {
	id := m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
	if id == "" {
		id = m.MsgId
	}
	return id
}

// retry prints a delivery the listener rejects (--fail-times); not counted toward --expect.
func (r *receiver) retry(m *primitive.MessageExt) {
	emit("event", "retry", "msgId", msgID(m), "keys", m.GetKeys(), "reconsumeTimes", m.ReconsumeTimes, "topic", m.Topic)
}

func (r *receiver) accept(m *primitive.MessageExt) {
	id := msgID(m)
	emit("event", "recv", "msgId", id, "topic", m.Topic, "queueId", m.Queue.QueueId,
		"queueOffset", m.QueueOffset, "tags", m.GetTags(), "keys", m.GetKeys(),
		"seq", m.GetProperty("seq"), "bodyLen", len(m.Body), "bodyCrc32", crc32.ChecksumIEEE(m.Body),
		"reconsumeTimes", m.ReconsumeTimes, "bornTs", m.BornTimestamp)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen[id] {
		r.seen[id] = true
		r.lastNew = time.Now()
		if len(r.seen) == r.expect {
			close(r.enough)
		}
	}
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// wait returns 0 when enough (or idle) and 2 on timeout.
func (r *receiver) wait(timeout, idle time.Duration) int {
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.enough:
			return 0
		case <-deadline:
			return 2
		case <-tick.C:
			if idle > 0 {
				r.mu.Lock()
				last := r.lastNew
				r.mu.Unlock()
				if !last.IsZero() && time.Since(last) >= idle {
					return 0
				}
			}
		}
	}
}

func consume(args []string) int {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "")
	topic := fs.String("topic", "", "")
	group := fs.String("group", "", "")
	model := fs.String("model", "clustering", "clustering|broadcasting")
	expr := fs.String("expr", "*", "")
	expect := fs.Int("expect", 0, "")
	timeoutSecs := fs.Int("timeout-secs", 0, "")
	from := fs.String("from", "first", "first|last")
	idleSecs := fs.Int("idle-exit-secs", 0, "")
	failTimes := fs.Int("fail-times", 0, "reject a message while its reconsumeTimes < N")
	maxReconsume := fs.Int("max-reconsume", -1, "max reconsume times before the DLQ")
	orderly := fs.Bool("orderly", false, "orderly listener")
	accessKey := fs.String("access-key", "", "ACL access key (signs every request)")
	secretKey := fs.String("secret-key", "", "ACL secret key")
	_ = fs.Parse(args)
	requireFlags(fs, "namesrv", "topic", "group", "expect", "timeout-secs")

	var mm consumer.MessageModel
	switch *model {
	case "clustering":
		mm = consumer.Clustering
	case "broadcasting":
		mm = consumer.BroadCasting
	default:
		die(64, "bad --model %s", *model)
	}
	var where consumer.ConsumeFromWhere
	switch *from {
	case "first":
		where = consumer.ConsumeFromFirstOffset
	case "last":
		where = consumer.ConsumeFromLastOffset
	default:
		die(64, "bad --from %s", *from)
	}
	opts := []consumer.Option{
		consumer.WithNameServer(nameServer(*namesrv)),
		consumer.WithGroupName(*group),
		consumer.WithInstance(fmt.Sprintf("stratus-%d", os.Getpid())),
		consumer.WithConsumerModel(mm),
		consumer.WithConsumeFromWhere(where),
	}
	if *accessKey != "" {
		opts = append(opts, consumer.WithCredentials(primitive.Credentials{AccessKey: *accessKey, SecretKey: *secretKey}))
	}
	if *maxReconsume >= 0 {
		opts = append(opts, consumer.WithMaxReconsumeTimes(int32(*maxReconsume)))
	}
	if *orderly {
		opts = append(opts, consumer.WithConsumerOrder(true))
	}
	failed := consumer.ConsumeRetryLater
	if *orderly {
		failed = consumer.SuspendCurrentQueueAMoment
	}
	c, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		errLine(-1, err)
		emit("event", "done", "received", 0)
		return 1
	}
	rx := newReceiver(*expect)
	err = c.Subscribe(*topic, consumer.MessageSelector{Type: consumer.TAG, Expression: *expr},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			// Batch size is 1 (the default), so a result applies to exactly one message.
			for _, m := range msgs {
				if int(m.ReconsumeTimes) < *failTimes {
					rx.retry(m)
					return failed, nil
				}
			}
			for _, m := range msgs {
				rx.accept(m)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		errLine(-1, err)
		emit("event", "done", "received", 0)
		return 1
	}
	if err := c.Start(); err != nil {
		errLine(-1, err)
		emit("event", "done", "received", 0)
		return 1
	}
	emit("event", "ready")
	rc := rx.wait(time.Duration(*timeoutSecs)*time.Second, time.Duration(*idleSecs)*time.Second)
	if rc == 0 {
		shutdownBounded(c.Shutdown)
	}
	emit("event", "done", "received", rx.count())
	return rc
}

// shutdownBounded calls f but gives up after 10 s so a stuck shutdown cannot hang the harness.
func shutdownBounded(f func() error) {
	done := make(chan struct{})
	go func() { _ = f(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "warning: client shutdown did not finish in 10 s")
	}
}

// ------------------------------------------------------------------ pull

func pull(args []string) int {
	fs := flag.NewFlagSet("pull", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "")
	topic := fs.String("topic", "", "")
	group := fs.String("group", "", "")
	expr := fs.String("expr", "*", "")
	expect := fs.Int("expect", 0, "")
	timeoutSecs := fs.Int("timeout-secs", 0, "")
	_ = fs.Parse(args)
	requireFlags(fs, "namesrv", "topic", "group", "expect", "timeout-secs")

	fail := func(err error) int {
		errLine(-1, err)
		emit("event", "done", "received", 0)
		return 1
	}
	ns := nameServer(*namesrv)
	c, err := rocketmq.NewPullConsumer(
		consumer.WithNameServer(ns),
		consumer.WithGroupName(*group),
		consumer.WithInstance(fmt.Sprintf("stratus-%d", os.Getpid())),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		return fail(err)
	}
	if err := c.Subscribe(*topic, consumer.MessageSelector{Type: consumer.TAG, Expression: *expr}); err != nil {
		return fail(err)
	}
	if err := c.Start(); err != nil {
		return fail(err)
	}
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(ns)))
	if err != nil {
		return fail(err)
	}
	queues, err := adm.FetchPublishMessageQueues(context.Background(), *topic)
	if err != nil {
		return fail(err)
	}
	emit("event", "ready")
	rx := newReceiver(*expect)
	deadline := time.Now().Add(time.Duration(*timeoutSecs) * time.Second)
	// One puller per queue, each from offset 0: an exhausted queue long-polls in the
	// broker, so queues are read in parallel rather than round-robin.
	for _, q := range queues {
		go func(q *primitive.MessageQueue) {
			offset := int64(0)
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithDeadline(context.Background(), deadline)
				res, err := c.PullFrom(ctx, q, offset, 32)
				cancel()
				if err != nil {
					time.Sleep(200 * time.Millisecond)
					continue
				}
				for _, m := range res.GetMessageExts() {
					rx.accept(m)
				}
				if res.NextBeginOffset > offset {
					offset = res.NextBeginOffset
				} else if res.Status != primitive.PullFound {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}(q)
	}
	rc := rx.wait(time.Until(deadline), 0)
	emit("event", "done", "received", rx.count())
	return rc
}

// ------------------------------------------------------------------ txn

func txnState(answer string) primitive.LocalTransactionState {
	switch answer {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	case "unknown":
		return primitive.UnknowState
	}
	die(64, "bad transaction answer %s", answer)
	return primitive.UnknowState
}

func txnName(s primitive.LocalTransactionState) string {
	switch s {
	case primitive.CommitMessageState:
		return "commit"
	case primitive.RollbackMessageState:
		return "rollback"
	default:
		return "unknown"
	}
}

type txnListener struct {
	local  string // commit|rollback|unknown|die
	check  string // commit|rollback|unknown
	checks int64
}

func (l *txnListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	seq, _ := strconv.Atoi(m.GetProperty("seq"))
	emit("event", "half", "seq", seq, "msgId", m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex),
		"transactionId", m.TransactionId)
	if l.local == "die" {
		// The half message is stored; END_TRANSACTION is never sent (stdout is unbuffered).
		os.Exit(0)
	}
	return txnState(l.local)
}

func (l *txnListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	atomic.AddInt64(&l.checks, 1)
	emit("event", "check", "msgId", m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex),
		"keys", m.GetKeys(), "seq", m.GetProperty("seq"), "answer", l.check,
		"transactionId", m.TransactionId, "checkTimes", m.GetProperty("TRANSACTION_CHECK_TIMES"),
		"ageMs", time.Now().UnixMilli()-m.BornTimestamp)
	return txnState(l.check)
}

// learnRoute makes the producer's client resolve topic's route (so it knows the broker addresses)
// and heartbeat at once. The Go client heartbeats only to brokers it learned from routes of topics
// it sent to, so without this a producer that never sends (--count 0) is unknown to the broker and
// receives no check-backs. The library exposes no API for it: reach the unexported client field.
func learnRoute(tp interface{}, topic string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("route lookup via reflection failed: %v", r)
		}
	}()
	open := func(v reflect.Value) reflect.Value {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	p := open(reflect.ValueOf(tp).Elem().FieldByName("producer")) // *defaultProducer
	client := open(p.Elem().FieldByName("client"))                // internal.RMQClient
	ns := client.MethodByName("GetNameSrv").Call(nil)[0]
	out := ns.MethodByName("UpdateTopicRouteInfo").Call([]reflect.Value{reflect.ValueOf(topic)})
	if e, ok := out[2].Interface().(error); ok && e != nil {
		return e
	}
	if out[0].IsNil() {
		return fmt.Errorf("no route for topic %s", topic)
	}
	client.MethodByName("SendHeartbeatToAllBrokerWithLock").Call(nil)
	return nil
}

func txn(args []string) int {
	fs := flag.NewFlagSet("txn", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "")
	topic := fs.String("topic", "", "")
	group := fs.String("group", "", "")
	count := fs.Int("count", 0, "")
	tag := fs.String("tag", "", "")
	keysPrefix := fs.String("keys-prefix", "", "")
	bodySize := fs.Int("body-size", 0, "")
	idPrefix := fs.String("id-prefix", "m", "")
	local := fs.String("local", "", "commit|rollback|unknown|die")
	check := fs.String("check", "", "commit|rollback|unknown")
	staySecs := fs.Int("stay-secs", 0, "")
	_ = fs.Parse(args)
	requireFlags(fs, "namesrv", "topic", "group", "count", "local", "check", "stay-secs")
	if *count > 0 {
		requireFlags(fs, "tag", "keys-prefix", "body-size")
	}
	if *local != "die" {
		txnState(*local)
	}
	txnState(*check)

	fail := func(err error) int {
		errLine(-1, err)
		emit("event", "done", "sent", 0, "checks", 0, "errors", 1)
		return 1
	}
	listener := &txnListener{local: *local, check: *check}
	tp, err := producer.NewTransactionProducer(listener,
		producer.WithNameServer(nameServer(*namesrv)),
		producer.WithGroupName(*group),
		producer.WithInstanceName(fmt.Sprintf("stratus-%d", os.Getpid())),
		producer.WithSendMsgTimeout(10*time.Second),
		producer.WithRetry(2),
	)
	if err != nil {
		return fail(err)
	}
	if err := tp.Start(); err != nil {
		return fail(err)
	}
	routed := *count > 0
	if !routed {
		if err := learnRoute(tp, *topic); err != nil {
			fmt.Fprintln(os.Stderr, "warning:", err)
		} else {
			routed = true
		}
	}

	var sent, errs int64
	ctx := context.Background()
	for i := 0; i < *count; i++ {
		m := primitive.NewMessage(*topic, makeBody(*idPrefix, i, *bodySize))
		m.WithTag(*tag)
		m.WithKeys([]string{fmt.Sprintf("%s-%d", *keysPrefix, i)})
		m.WithProperty("seq", strconv.Itoa(i))
		r, err := tp.SendMessageInTransaction(ctx, m)
		if err != nil {
			errs++
			errLine(i, err)
			continue
		}
		if r.Status != primitive.SendOK {
			errs++
			errLine(i, "status "+statusName(r.Status))
			continue
		}
		sent++
		emit("event", "sent", "seq", i, "msgId", r.MsgID, "offsetMsgId", r.OffsetMsgID,
			"queueId", r.MessageQueue.QueueId, "queueOffset", r.QueueOffset, "status", "SEND_OK",
			"local", txnName(r.State), "transactionId", r.TransactionID)
	}

	deadline := time.Now().Add(time.Duration(*staySecs) * time.Second)
	for time.Now().Before(deadline) {
		d := time.Until(deadline)
		if d > time.Second {
			d = time.Second
		}
		time.Sleep(d)
		if !routed && learnRoute(tp, *topic) == nil {
			routed = true
		}
	}
	shutdownBounded(tp.Shutdown)
	emit("event", "done", "sent", sent, "checks", atomic.LoadInt64(&listener.checks), "errors", errs)
	if errs != 0 {
		return 1
	}
	return 0
}

// ------------------------------------------------------------------ request

// request sends --count requests with Producer.Request and waits for each reply.
func request(args []string) int {
	fs := flag.NewFlagSet("request", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "")
	topic := fs.String("topic", "", "")
	group := fs.String("group", "", "")
	count := fs.Int("count", 0, "")
	timeoutMs := fs.Int("timeout-ms", 10000, "")
	_ = fs.Parse(args)
	requireFlags(fs, "namesrv", "topic", "group", "count")
	p, err := rocketmq.NewProducer(
		producer.WithNameServer(nameServer(*namesrv)),
		producer.WithGroupName(*group),
		producer.WithInstanceName(fmt.Sprintf("stratus-%d", os.Getpid())),
		producer.WithSendMsgTimeout(10*time.Second),
		producer.WithRetry(2),
	)
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		errLine(-1, err)
		emit("event", "done", "replies", 0, "errors", 1)
		return 1
	}
	emit("event", "ready")
	replies, errs := 0, 0
	for i := 0; i < *count; i++ {
		m := primitive.NewMessage(*topic, []byte(fmt.Sprintf("q%d", i)))
		m.WithTag("req")
		m.WithProperty("seq", strconv.Itoa(i))
		r, err := p.Request(context.Background(), time.Duration(*timeoutMs)*time.Millisecond, m)
		if err != nil {
			errs++
			errLine(i, err)
			continue
		}
		replies++
		emit("event", "reply", "seq", i, "body", string(r.Body), "topic", r.Topic,
			"correlationId", r.GetProperty(primitive.PropertyCorrelationID))
	}
	_ = p.Shutdown()
	emit("event", "done", "replies", replies, "errors", errs)
	if errs == 0 && replies == *count {
		return 0
	}
	return 1
}

// ------------------------------------------------------------------ admin

// adminRun drives the library's admin API against one broker: creates topic T (4 queues),
// lists the cluster's topics, lists the broker's subscription groups (and group G's config
// when listed), deletes T and lists the topics again. One line per step.
func adminRun(args []string) int {
	fs := flag.NewFlagSet("admin", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "")
	broker := fs.String("broker", "", "broker address HOST:PORT")
	topic := fs.String("topic", "", "")
	group := fs.String("group", "", "")
	_ = fs.Parse(args)
	requireFlags(fs, "namesrv", "broker", "topic", "group")
	ns := nameServer(*namesrv)
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(ns)))
	if err != nil {
		emit("event", "error", "step", "admin", "error", err.Error())
		return 1
	}
	defer adm.Close()
	ctx := context.Background()
	topics := func(step string) bool {
		list, err := adm.FetchAllTopicList(ctx)
		if err != nil {
			emit("event", "error", "step", step, "error", err.Error())
			return false
		}
		emit("event", step, "topics", list.TopicList)
		return true
	}
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(*topic), admin.WithBrokerAddrCreate(*broker),
		admin.WithReadQueueNums(4), admin.WithWriteQueueNums(4)); err != nil {
		emit("event", "error", "step", "create-topic", "error", err.Error())
		return 1
	}
	emit("event", "topic-created", "topic", *topic)
	if !topics("topics") {
		return 1
	}
	wrapper, err := adm.GetAllSubscriptionGroup(ctx, *broker, 3*time.Second)
	if err != nil {
		emit("event", "error", "step", "groups", "error", err.Error())
		return 1
	}
	names := make([]string, 0, len(wrapper.SubscriptionGroupTable))
	for name := range wrapper.SubscriptionGroupTable {
		names = append(names, name)
	}
	line := []interface{}{"event", "groups", "groups", names}
	if g, ok := wrapper.SubscriptionGroupTable[*group]; ok {
		line = append(line, "group", g.GroupName, "retryMaxTimes", g.RetryMaxTimes,
			"retryQueueNums", g.RetryQueueNums, "consumeBroadcastEnable", g.ConsumeBroadcastEnable)
	}
	emit(line...)
	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(*topic), admin.WithBrokerAddrDelete(*broker),
		admin.WithNameSrvAddr(strings.Split(*namesrv, ";"))); err != nil {
		emit("event", "error", "step", "delete-topic", "error", err.Error())
		return 1
	}
	emit("event", "topic-deleted", "topic", *topic)
	if !topics("topics-after") {
		return 1
	}
	return 0
}
