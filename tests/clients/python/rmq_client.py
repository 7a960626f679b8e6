#!/usr/bin/env python3
"""Stratus test client over the official RocketMQ C++ 1.x client (PyPI rocketmq==0.4.4).

Same command line and JSON-lines output as the other clients; see ../README.md.
Run it with HOME pointing at a scratch directory (the C++ core logs to
$HOME/logs/rocketmq-cpp/); run.sh does that. It always leaves through os._exit,
because the C++ destructors can block.
"""
import argparse
import ctypes
import json
import os
import sys
import threading
import time
import zlib

from rocketmq.client import Message, MessageModel, Producer, PullConsumer, PushConsumer, SendStatus

_out_lock = threading.Lock()


def emit(**fields):
    line = json.dumps(fields, separators=(",", ":")) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def finish(rc):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(rc)


def text(v):
    if v is None:
        return ""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def err_text(e):
    return ("%s: %s" % (type(e).__name__, e))[:500]


# --------------------------------------------------------------------- produce

def make_body(prefix, seq, size):
    unit = ("%s%d:" % (prefix, seq)).encode()
    reps = size // len(unit) + 1
    return (unit * reps)[:size]


def sent_line(seq, msg_id, offset_msg_id, queue_id, queue_offset, status):
    emit(event="sent", seq=seq, msgId=msg_id, offsetMsgId=offset_msg_id, queueId=queue_id,
         queueOffset=queue_offset, status=status)


def err_line(seq, error):
    emit(event="error", seq=seq, error=error)


def produce(a):
    # The C++ default max message size is 128 KiB; raise it to the broker default (4 MiB).
    producer = Producer(a.group, timeout=10000, max_message_size=4 * 1024 * 1024)
    producer.set_namesrv_addr(a.namesrv)
    producer.start()

    def build(i):
        m = Message(a.topic)
        m.set_tags(a.tag)
        m.set_keys("%s-%d" % (a.keys_prefix, i))
        m.set_property("seq", str(i))
        if a.delay_level:
            m.set_delay_time_level(a.delay_level)
        if a.sharding_key_count:
            m.set_property("skey", str(i % a.sharding_key_count))
        m.set_body(make_body(a.id_prefix, i, a.body_size))
        return m

    msgs = [build(i) for i in range(a.count)]
    counts = {"sent": 0, "errors": 0}
    lock = threading.Lock()

    def ok(seq, res):
        # The C wrapper's SendResult has the client msg id and the queue offset only.
        with lock:
            if res.status == SendStatus.OK:
                counts["sent"] += 1
            else:
                counts["errors"] += 1
        if res.status == SendStatus.OK:
            sent_line(seq, res.msg_id, "", -1, res.offset, "SEND_OK")
        else:
            err_line(seq, "status %s" % res.status.name)

    def bad(seq, e):
        with lock:
            counts["errors"] += 1
        err_line(seq, err_text(e))

    if a.mode == "sync":
        for i, m in enumerate(msgs):
            try:
                if a.sharding_key_count:
                    # The wrapper's hashing_queue_selector: arg % queue count, arg = i % K.
                    ok(i, producer.send_orderly(m, i % a.sharding_key_count))
                else:
                    ok(i, producer.send_sync(m))
            except Exception as e:  # noqa: BLE001 - report every failure as a line
                bad(i, e)
    elif a.mode == "async":
        pending = threading.Semaphore(0)

        def on_ok_for(seq):
            def cb(res):
                ok(seq, res)
                pending.release()
            return cb

        def on_err_for(seq):
            def cb(e):
                bad(seq, e)
                pending.release()
            return cb

        for i, m in enumerate(msgs):
            try:
                producer.send_async(m, on_ok_for(i), on_err_for(i))
            except Exception as e:  # noqa: BLE001
                bad(i, e)
                pending.release()
        deadline = time.monotonic() + 60 + a.count / 10
        for _ in range(a.count):
            if not pending.acquire(timeout=max(0.0, deadline - time.monotonic())):
                bad(-1, RuntimeError("timed out waiting for async callbacks"))
                break
    elif a.mode == "oneway":
        for i, m in enumerate(msgs):
            try:
                producer.send_oneway(m)
            except Exception as e:  # noqa: BLE001
                bad(i, e)
                continue
            with lock:
                counts["sent"] += 1
            # The wrapper exposes no id for a one-way send.
            sent_line(i, "", "", -1, -1, "ONEWAY")
    elif a.mode == "batch":
        for start in range(0, a.count, a.batch_size):
            chunk = msgs[start:start + a.batch_size]
            try:
                res = producer.send_batch(chunk)
            except Exception as e:  # noqa: BLE001
                for i in range(start, start + len(chunk)):
                    bad(i, e)
                continue
            ids = res.msg_id.split(",") if res.msg_id else []
            for k in range(len(chunk)):
                i = start + k
                if res.status != SendStatus.OK:
                    bad(i, RuntimeError("status %s" % res.status.name))
                    continue
                with lock:
                    counts["sent"] += 1
                sent_line(i, ids[k] if k < len(ids) else "", "", -1, res.offset + k, "SEND_OK")
    producer.shutdown()
    emit(event="done", sent=counts["sent"], errors=counts["errors"])
    return 0 if counts["errors"] == 0 else 1


# --------------------------------------------------------------------- consume

class Receiver:
    def __init__(self, expect):
        self.expect = expect
        self.seen = set()
        self.lock = threading.Lock()
        self.enough = threading.Event()
        self.last_new = None

    def retry(self, msg):
        """A delivery the listener rejects (--fail-times); not counted toward --expect."""
        emit(event="retry", msgId=text(msg.get_property("UNIQ_KEY")) or text(msg.id), keys=text(msg.keys),
             reconsumeTimes=msg.reconsume_times, topic=text(msg.topic))

    def accept(self, msg):
        mid = text(msg.get_property("UNIQ_KEY")) or text(msg.id)
        body = msg.body or b""
        emit(event="recv", msgId=mid, topic=text(msg.topic), queueId=msg.queue_id,
             queueOffset=msg.queue_offset, tags=text(msg.tags), keys=text(msg.keys),
             seq=text(msg.get_property("seq")), bodyLen=len(body),
             bodyCrc32=zlib.crc32(body) & 0xFFFFFFFF, reconsumeTimes=msg.reconsume_times)
        with self.lock:
            if mid not in self.seen:
                self.seen.add(mid)
                self.last_new = time.monotonic()
                if len(self.seen) >= self.expect:
                    self.enough.set()

    def wait(self, timeout, idle):
        deadline = time.monotonic() + timeout
        while True:
            if self.enough.wait(0.1):
                return 0
            now = time.monotonic()
            with self.lock:
                last = self.last_new
            if idle > 0 and last is not None and now - last >= idle:
                return 0
            if now >= deadline:
                return 2

    def count(self):
        with self.lock:
            return len(self.seen)


# rocketmq::ConsumeFromWhere values of the C++ core (include/ConsumeType.h).
CONSUME_FROM_LAST_OFFSET = 0
CONSUME_FROM_FIRST_OFFSET = 4
_SET_FROM_WHERE = "_ZN8rocketmq21DefaultMQPushConsumer19setConsumeFromWhereENS_16ConsumeFromWhereE"


def set_consume_from_where(consumer, where):
    """The C API has no setter (CreatePushConsumer fixes LAST_OFFSET), but its consumer
    handle is the C++ DefaultMQPushConsumer itself, whose setter the library exports."""
    from rocketmq.ffi import dll
    fn = getattr(dll, _SET_FROM_WHERE, None)
    if fn is None:
        raise RuntimeError("librocketmq.so does not export DefaultMQPushConsumer::setConsumeFromWhere")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int]
    fn.restype = None
    fn(consumer._handle, where)


def subscribe(consumer, topic, expr, listener):
    """PushConsumer.subscribe with a listener that returns the C status itself (True = success):
    the wrapper's own callback re-raises a listener exception out of the ctypes callback, so
    RECONSUME_LATER cannot be returned through it."""
    from rocketmq.client import RecvMessage
    from rocketmq.exceptions import ffi_check
    from rocketmq.ffi import dll

    def _on_message(_consumer, msg):
        try:
            return 0 if listener(RecvMessage(msg)) else 1  # CONSUME_SUCCESS / RECONSUME_LATER
        except Exception as e:  # noqa: BLE001
            print("listener error: %s" % err_text(e), file=sys.stderr)
            return 1

    ffi_check(dll.Subscribe(consumer._handle, topic.encode(), expr.encode()))
    consumer._register_callback(_on_message)


def consume(a):
    if a.max_reconsume is not None:
        # The C API of the 1.x core has no max-reconsume-times setter for a push consumer.
        emit(event="unsupported", what="max-reconsume")
        return 3
    model = MessageModel.BROADCASTING if a.model == "broadcasting" else MessageModel.CLUSTERING
    consumer = PushConsumer(a.group, orderly=a.orderly, message_model=model)
    consumer.set_namesrv_addr(a.namesrv)
    consumer.set_instance_name("stratus-%d" % os.getpid())
    set_consume_from_where(consumer, CONSUME_FROM_FIRST_OFFSET if a.from_where == "first"
                           else CONSUME_FROM_LAST_OFFSET)
    rx = Receiver(a.expect)

    def listener(msg):
        # Orderly: RECONSUME_LATER makes the core suspend the queue and redeliver locally.
        if msg.reconsume_times < a.fail_times:
            rx.retry(msg)
            return False
        rx.accept(msg)
        return True

    subscribe(consumer, a.topic, a.expr, listener)
    consumer.start()
    emit(event="ready")
    rc = rx.wait(a.timeout_secs, a.idle_exit_secs)
    if rc == 0:
        t = threading.Thread(target=consumer.shutdown, daemon=True)
        t.start()
        t.join(10)
    emit(event="done", received=rx.count())
    return rc


def pull(a):
    consumer = PullConsumer(a.group)
    consumer.set_namesrv_addr(a.namesrv)
    consumer.start()
    emit(event="ready")
    rx = Receiver(a.expect)
    deadline = time.monotonic() + a.timeout_secs

    def loop():
        # PullConsumer.pull walks every queue from its remembered offset (0 at first)
        # until NO_NEW_MSG; call it again for later messages.
        while time.monotonic() < deadline and not rx.enough.is_set():
            got = 0
            try:
                for msg in consumer.pull(a.topic, a.expr):
                    rx.accept(msg)
                    got += 1
            except Exception as e:  # noqa: BLE001
                print("pull error: %s" % err_text(e), file=sys.stderr)
            if got == 0:
                time.sleep(0.2)

    threading.Thread(target=loop, daemon=True).start()
    rc = rx.wait(a.timeout_secs, 0)
    emit(event="done", received=rx.count())
    return rc


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "txn":
        # The C API of the C++ 1.x core (rocketmq==0.4.4) exports no transactional producer
        # (its C++ TransactionMQProducer is internal), so there is nothing to drive.
        emit(event="unsupported", what="transactions")
        finish(3)
    p = argparse.ArgumentParser(prog="rmq_client.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("produce", "consume", "pull"):
        s = sub.add_parser(name)
        s.add_argument("--namesrv", required=True)
        s.add_argument("--topic", required=True)
        s.add_argument("--group", required=True)
        if name == "produce":
            s.add_argument("--count", type=int, required=True)
            s.add_argument("--mode", choices=["sync", "async", "oneway", "batch"], required=True)
            s.add_argument("--tag", required=True)
            s.add_argument("--keys-prefix", required=True)
            s.add_argument("--body-size", type=int, required=True)
            s.add_argument("--batch-size", type=int, default=8)
            s.add_argument("--id-prefix", default="m")
            s.add_argument("--delay-level", type=int, default=0)
            s.add_argument("--sharding-key-count", type=int, default=0)
        else:
            s.add_argument("--expr", default="*")
            s.add_argument("--expect", type=int, required=True)
            s.add_argument("--timeout-secs", type=float, required=True)
        if name == "consume":
            s.add_argument("--model", choices=["clustering", "broadcasting"], default="clustering")
            s.add_argument("--from", dest="from_where", choices=["first", "last"], default="first")
            s.add_argument("--idle-exit-secs", type=float, default=0)
            s.add_argument("--fail-times", type=int, default=0)
            s.add_argument("--max-reconsume", type=int, default=None)
            s.add_argument("--orderly", action="store_true")
    a = p.parse_args()
    if a.cmd == "produce" and a.batch_size < 1:
        p.error("bad --batch-size")
    if a.cmd == "produce" and (a.delay_level < 0 or (a.delay_level and a.mode == "batch")):
        p.error("--delay-level needs L >= 1 and not --mode batch")
    if a.cmd == "produce" and (a.sharding_key_count < 0 or (a.sharding_key_count and a.mode != "sync")):
        p.error("--sharding-key-count needs K >= 1 and --mode sync")
    try:
        rc = {"produce": produce, "consume": consume, "pull": pull}[a.cmd](a)
    except Exception as e:  # noqa: BLE001
        emit(event="error", seq=-1, error=err_text(e))
        if a.cmd == "produce":
            emit(event="done", sent=0, errors=1)
        else:
            emit(event="done", received=0)
        rc = 1
    finish(rc)


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:  # argparse errors
        finish(e.code if isinstance(e.code, int) else 64)
