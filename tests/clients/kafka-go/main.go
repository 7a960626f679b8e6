// Kafka test client on franz-go for the Stratus end-to-end tests: one JSON object per line
// on stdout (see tests/clients/README.md, "Kafka clients"). Modes: produce, consume, admin.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var outMu sync.Mutex

func out(v map[string]any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func fail(code int, format string, a ...any) {
	out(map[string]any{"event": "error", "message": fmt.Sprintf(format, a...)})
	os.Exit(code)
}

func main() {
	if len(os.Args) < 2 {
		fail(64, "usage: kafka-client-go produce|consume|admin --bootstrap HOST:PORT ...")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "bootstrap HOST:PORT")
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "consumer group")
	count := fs.Int("count", 10, "records to produce / to consume")
	acks := fs.String("acks", "all", "0|1|all")
	compression := fs.String("compression", "none", "none|gzip|snappy|lz4|zstd")
	idempotent := fs.String("idempotent", "", "true|false (default: true with acks=all)")
	keyPrefix := fs.String("key-prefix", "k", "key prefix")
	valuePrefix := fs.String("value-prefix", "v", "value prefix")
	headers := fs.String("headers", "", "k=v,... added to every record")
	lingerMs := fs.Int("linger-ms", 0, "producer linger")
	timeoutMs := fs.Int("timeout-ms", 30000, "consume timeout")
	from := fs.String("from", "earliest", "earliest|latest")
	partitions := fs.Int("partitions", 1, "admin create-topic partitions")
	clientID := fs.String("client-id", fmt.Sprintf("stratus-test-go-%d", os.Getpid()), "client id")
	// Every option takes a value; other words (admin's command and topic) may come anywhere.
	var flags, words []string
	for i := 2; i < len(os.Args); i++ {
		if strings.HasPrefix(os.Args[i], "--") && i+1 < len(os.Args) {
			flags = append(flags, os.Args[i], os.Args[i+1])
			i++
		} else {
			words = append(words, os.Args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		fail(64, "usage: %v", err)
	}
	if *bootstrap == "" {
		fail(64, "usage: missing --bootstrap")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(*bootstrap), kgo.ClientID(*clientID)}
	ctx := context.Background()
	switch os.Args[1] {
	case "produce":
		os.Exit(produce(ctx, opts, *topic, *count, *acks, *compression, *idempotent, *keyPrefix, *valuePrefix, *headers, *lingerMs))
	case "consume":
		os.Exit(consume(ctx, opts, *topic, *group, *count, *timeoutMs, *from))
	case "admin":
		os.Exit(admin(ctx, opts, words, int32(*partitions)))
	default:
		fail(64, "usage: unknown mode %s", os.Args[1])
	}
}

func produce(ctx context.Context, opts []kgo.Opt, topic string, count int, acks, compression, idempotent, keyPrefix, valuePrefix, headers string, lingerMs int) int {
	codec := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}[compression]
	ack := map[string]kgo.Acks{"0": kgo.NoAck(), "1": kgo.LeaderAck(), "all": kgo.AllISRAcks()}[acks]
	if topic == "" || (compression != "none" && codec == (kgo.CompressionCodec{})) || (acks != "0" && acks != "1" && acks != "all") {
		fail(64, "usage: produce --topic T [--acks 0|1|all] [--compression none|gzip|snappy|lz4|zstd]")
	}
	opts = append(opts, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(ack),
		kgo.ProducerLinger(time.Duration(lingerMs)*time.Millisecond), kgo.RecordDeliveryTimeout(30*time.Second))
	if idempotent == "false" || (idempotent == "" && acks != "all") {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	var extra []kgo.RecordHeader
	for _, kv := range strings.Split(headers, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fail(64, "usage: --headers k=v,...")
		}
		extra = append(extra, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail(1, "client: %v", err)
	}
	defer cl.Close()
	var mu sync.Mutex
	sent, errors := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		seq := i
		rec := &kgo.Record{
			Key:     []byte(fmt.Sprintf("%s-%d", keyPrefix, i)),
			Value:   []byte(fmt.Sprintf("%s-%d", valuePrefix, i)),
			Headers: append([]kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}}, extra...),
		}
		wg.Add(1)
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errors++
				out(map[string]any{"event": "error", "seq": seq, "message": err.Error()})
				return
			}
			sent++
			offset := r.Offset
			if acks == "0" {
				offset = -1
			}
			out(map[string]any{"event": "sent", "seq": seq, "topic": r.Topic, "partition": r.Partition, "offset": offset,
				"key": string(r.Key), "value": string(r.Value), "timestamp": r.Timestamp.UnixMilli()})
		})
	}
	wg.Wait()
	out(map[string]any{"event": "done", "sent": sent, "errors": errors})
	if errors > 0 || sent != count {
		return 1
	}
	return 0
}

func partitionList(m map[string][]int32) []int32 {
	ps := []int32{}
	for _, p := range m {
		ps = append(ps, p...)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

func consume(ctx context.Context, opts []kgo.Opt, topic, group string, count, timeoutMs int, from string) int {
	if topic == "" || group == "" {
		fail(64, "usage: consume --topic T --group G --count N")
	}
	reset := kgo.NewOffset().AtStart()
	if from == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			out(map[string]any{"event": "assigned", "added": partitionList(m)})
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			out(map[string]any{"event": "revoked", "partitions": partitionList(m)})
		}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail(1, "client: %v", err)
	}
	out(map[string]any{"event": "ready"})
	deadline, cancel := context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
	defer cancel()
	received := 0
	for received < count && deadline.Err() == nil {
		fetches := cl.PollRecords(deadline, count-received)
		for _, fe := range fetches.Errors() {
			if fe.Err != context.DeadlineExceeded && fe.Err != context.Canceled {
				out(map[string]any{"event": "error", "message": fmt.Sprintf("fetch %s/%d: %v", fe.Topic, fe.Partition, fe.Err)})
			}
		}
		recs := fetches.Records()
		for _, r := range recs {
			hs := map[string]string{}
			for _, h := range r.Headers {
				hs[h.Key] = string(h.Value)
			}
			out(map[string]any{"event": "recv", "topic": r.Topic, "partition": r.Partition, "offset": r.Offset,
				"key": string(r.Key), "value": string(r.Value), "headers": hs, "timestamp": r.Timestamp.UnixMilli()})
		}
		received += len(recs)
		if len(recs) > 0 {
			if err := cl.CommitRecords(ctx, recs...); err != nil {
				out(map[string]any{"event": "error", "message": "commit: " + err.Error()})
			}
		}
	}
	cl.Close() // leaves the group
	out(map[string]any{"event": "done", "received": received})
	if received < count {
		return 2
	}
	return 0
}

func admin(ctx context.Context, opts []kgo.Opt, args []string, partitions int32) int {
	if len(args) < 2 {
		fail(64, "usage: admin create-topic T [--partitions P] | delete-topic T")
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail(1, "client: %v", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	switch args[0] {
	case "create-topic":
		resp, err := adm.CreateTopic(ctx, partitions, 1, nil, args[1])
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			fail(1, "create-topic %s: %v", args[1], err)
		}
		out(map[string]any{"event": "created", "topic": args[1], "partitions": partitions})
	case "delete-topic":
		resp, err := adm.DeleteTopic(ctx, args[1])
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			fail(1, "delete-topic %s: %v", args[1], err)
		}
		out(map[string]any{"event": "deleted", "topic": args[1]})
	default:
		fail(64, "usage: unknown admin command %s", args[0])
	}
	out(map[string]any{"event": "done"})
	return 0
}
