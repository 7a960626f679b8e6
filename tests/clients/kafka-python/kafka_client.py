#!/usr/bin/env python3
"""Kafka test client on confluent-kafka (librdkafka) for the Stratus end-to-end tests.

One JSON object per line on stdout (see tests/clients/README.md, "Kafka clients").
Modes: produce, consume, admin (create-topic, delete-topic).
"""

import argparse
import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def out(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def fail(code, message):
    out(event="error", message=message)
    sys.exit(code)


def common(args):
    return {
        "bootstrap.servers": args.bootstrap,
        "client.id": args.client_id or f"stratus-test-py-{os.getpid()}",
        # librdkafka logs go to stderr.
        "log_level": 4,
    }


def parse_headers(spec):
    headers = []
    for kv in filter(None, spec.split(",")):
        if "=" not in kv:
            fail(64, "usage: --headers k=v,...")
        k, v = kv.split("=", 1)
        headers.append((k, v.encode()))
    return headers


def produce(args):
    idempotent = args.idempotent if args.idempotent is not None else ("true" if args.acks == "all" else "false")
    conf = common(args) | {
        "acks": args.acks,
        "compression.type": args.compression,
        "enable.idempotence": idempotent == "true",
        "linger.ms": args.linger_ms,
        "delivery.timeout.ms": 30000,
    }
    producer = Producer(conf)
    extra = parse_headers(args.headers)
    counts = {"sent": 0, "errors": 0}

    def report(seq, key, value):
        def cb(err, msg):
            if err is not None:
                counts["errors"] += 1
                out(event="error", seq=seq, message=str(err))
                return
            counts["sent"] += 1
            offset = msg.offset()
            out(event="sent", seq=seq, topic=msg.topic(), partition=msg.partition(),
                offset=offset if offset is not None and offset >= 0 else -1,
                key=key, value=value, timestamp=msg.timestamp()[1])
        return cb

    for i in range(args.count):
        key, value = f"{args.key_prefix}-{i}", f"{args.value_prefix}-{i}"
        kw = {}
        if args.partition is not None:
            kw["partition"] = args.partition
        while True:
            try:
                producer.produce(args.topic, key=key.encode(), value=value.encode(),
                                 headers=[("seq", str(i).encode())] + extra,
                                 on_delivery=report(i, key, value), **kw)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(60)
    if left:
        counts["errors"] += left
        out(event="error", seq=-1, message=f"{left} records not delivered within 60 s")
    out(event="done", sent=counts["sent"], errors=counts["errors"])
    return 0 if counts["errors"] == 0 and counts["sent"] == args.count else 1


def partitions_of(parts):
    return sorted(p.partition for p in parts)


def consume(args):
    conf = common(args) | {
        "group.id": args.group,
        "auto.offset.reset": args.from_,
        "enable.auto.commit": args.commit == "auto",
        "enable.auto.offset.store": args.commit == "auto",
    }
    consumer = Consumer(conf)
    consumer.subscribe(
        [args.topic],
        on_assign=lambda c, ps: out(event="assigned", added=partitions_of(ps)),
        on_revoke=lambda c, ps: out(event="revoked", partitions=partitions_of(ps)),
    )
    out(event="ready")
    received = 0
    deadline = time.monotonic() + args.timeout_ms / 1000
    try:
        while received < args.count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                out(event="error", message=str(msg.error()))
                continue
            headers = {k: (v.decode() if v is not None else None) for k, v in (msg.headers() or [])}
            out(event="recv", topic=msg.topic(), partition=msg.partition(), offset=msg.offset(),
                key=msg.key().decode() if msg.key() is not None else None,
                value=msg.value().decode() if msg.value() is not None else None,
                headers=headers, timestamp=msg.timestamp()[1])
            received += 1
            if args.commit == "sync":
                consumer.commit(message=msg, asynchronous=False)
    finally:
        consumer.close()  # leaves the group
    out(event="done", received=received)
    return 0 if received >= args.count else 2


def admin(args):
    if len(args.words) < 2:
        fail(64, "usage: admin create-topic T [--partitions P] | delete-topic T")
    cmd, topic = args.words[0], args.words[1]
    client = AdminClient(common(args))
    if cmd == "create-topic":
        futures = client.create_topics([NewTopic(topic, num_partitions=args.partitions, replication_factor=1)])
        futures[topic].result(20)
        out(event="created", topic=topic, partitions=args.partitions)
    elif cmd == "delete-topic":
        client.delete_topics([topic])[topic].result(20)
        out(event="deleted", topic=topic)
    else:
        fail(64, f"usage: unknown admin command {cmd}")
    out(event="done")
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("produce", "consume", "admin"):
        fail(64, "usage: kafka_client.py produce|consume|admin --bootstrap HOST:PORT ...")
    p = argparse.ArgumentParser(prog=f"kafka_client.py {sys.argv[1]}")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic")
    p.add_argument("--group")
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--acks", default="all", choices=["0", "1", "all"])
    p.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    p.add_argument("--idempotent", choices=["true", "false"])
    p.add_argument("--key-prefix", default="k")
    p.add_argument("--value-prefix", default="v")
    p.add_argument("--headers", default="")
    p.add_argument("--partition", type=int)
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--timeout-ms", type=int, default=30000)
    p.add_argument("--from", dest="from_", default="earliest", choices=["earliest", "latest"])
    p.add_argument("--commit", default="sync", choices=["sync", "auto"])
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--client-id")
    p.add_argument("words", nargs="*")
    try:
        args = p.parse_intermixed_args(sys.argv[2:])
    except SystemExit:
        fail(64, "usage error")
    try:
        sys.exit({"produce": produce, "consume": consume, "admin": admin}[sys.argv[1]](args))
    except KafkaException as e:
        fail(1, f"KafkaException: {e}")


if __name__ == "__main__":
    main()
