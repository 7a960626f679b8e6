#!/usr/bin/env bash
# Kafka clients against Apache Kafka 4.4.0 and against Stratus, one after the other on this
# machine, driven by Kafka's own perf tools (kafka-producer-perf-test =
# org.apache.kafka.tools.ProducerPerformance, kafka-consumer-perf-test =
# org.apache.kafka.tools.ConsumerPerformance, from org.apache.kafka:kafka-tools, resolved by
# `tests/servers/kafka.sh tools`).
#
#   bench/kafka-perf.sh                   # three columns, ~4 min on 2 cores
#
# Per system: a fresh broker, a topic of $KBENCH_PARTITIONS partitions (TopicCommand
# --create), a warm-up produce of $KBENCH_WARMUP_RECORDS records (not reported; its rate
# sizes the measured runs so each lasts about $KBENCH_SECONDS), then one ProducerPerformance
# run per in-flight setting (1 KiB records, acks=all, --throughput -1,
# enable.idempotence=false and max.in.flight.requests.per.connection=N: one producer, one
# connection per broker, N requests outstanding on it), then ConsumerPerformance drains
# what the measured runs wrote. For every workload the server process's CPU time
# (utime+stime from /proc/PID/stat), the load average before and after and, for Stratus,
# the objects written (files under DATA/objects; one per flush) are recorded, and from the
# producer's own metrics (--print-metrics) its request latency, records per request and the
# time records wait in its buffer.
#
# Columns (KBENCH_SYSTEMS):
#   kafka        Apache Kafka, its stock settings: acks=all is answered once the batch is
#                in the page cache of the (only) replica; log.flush.interval.messages is
#                Long.MAX, so nothing is fsynced on the produce path
#   kafka-fsync  the same with log.flush.interval.messages=1: every appended batch is
#                fsynced before the answer (durable against durable)
#   stratus      a fresh `stratus serve` on its embedded default (local directory + SQLite):
#                acks=1/all are answered once the segment is written, fsynced and committed
#
# Env:
#   KBENCH_WORK            scratch dir (broker dirs, data dirs, results)  [/tmp/stratus-kafka-bench]
#   KBENCH_SYSTEMS         which columns, in order            [kafka kafka-fsync stratus]
#   KBENCH_INFLIGHT        max.in.flight.requests.per.connection settings  [8 64]
#   KBENCH_SECONDS         target length of each measured produce run      [15]
#   KBENCH_WARMUP_RECORDS  warm-up records (also the rate probe)           [60000]
#   KBENCH_MAX_RECORDS     cap on a measured run's records                 [2000000]
#   KBENCH_RECORDS         fixed record count of each measured run (no sizing)
#   KBENCH_PARTITIONS      partitions of the topic                         [8]
#   KBENCH_RECORD_SIZE     bytes per record                                [1024]
#   KAFKA_HEAP_OPTS        broker heap                 [-Xmx1g -Xms1g, kafka-server-start.sh's]
#   KAFKA_JVM_PERFORMANCE_OPTS  broker GC/JIT flags   [kafka-run-class.sh's: G1, 20 ms pauses]
#   KBENCH_CLIENT_HEAP     the perf tools' heap                            [-Xmx512m]
#   STRATUS_BIN            the stratus binary [$CARGO_TARGET_DIR|target]/release/stratus
#   KBENCH_PORT_BASE       Kafka listens on BASE, Stratus on BASE+100.. [45092]
#
# Output: a table on stdout and $KBENCH_WORK/results/summary.{json,md}; the tools' own output
# per workload in $KBENCH_WORK/results/<system>/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${KBENCH_WORK:-/tmp/stratus-kafka-bench}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
STRATUS=${STRATUS_BIN:-$TARGET/release/stratus}
SYSTEMS=${KBENCH_SYSTEMS:-kafka kafka-fsync stratus}
INFLIGHT=${KBENCH_INFLIGHT:-8 64}
SECONDS_PER_RUN=${KBENCH_SECONDS:-15}
WARMUP=${KBENCH_WARMUP_RECORDS:-60000}
MAX_RECORDS=${KBENCH_MAX_RECORDS:-2000000}
PARTITIONS=${KBENCH_PARTITIONS:-8}
SIZE=${KBENCH_RECORD_SIZE:-1024}
CLIENT_HEAP=${KBENCH_CLIENT_HEAP:--Xmx512m}
BASE=${KBENCH_PORT_BASE:-45092}
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx1g -Xms1g}
export KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent}
RES=$WORK/results
KAFKA_ADDR=127.0.0.1:$BASE
ST_NS=127.0.0.1:$((BASE + 100))
ST_BR=127.0.0.1:$((BASE + 110))
ST_KAFKA=127.0.0.1:$((BASE + 120))
ST_METRICS=127.0.0.1:$((BASE + 130))

if [ ! -x "$STRATUS" ] && [[ " $SYSTEMS " == *" stratus "* ]]; then
  echo "no $STRATUS: cargo build --release -p stratus-gateway --bin stratus" >&2
  exit 1
fi
TOOLS=$(bash "$ROOT/tests/servers/kafka.sh" tools)
bash "$ROOT/tests/servers/kafka.sh" install >/dev/null
mkdir -p "$WORK"
rm -rf "$RES"
mkdir -p "$RES"
RUN_ID=$(date +%s)

STRATUS_PID=
KAFKA_DIR=
CHILD_PID=
cleanup() {
  if [ -n "$CHILD_PID" ]; then
    kill -TERM "$CHILD_PID" 2>/dev/null || true
    wait "$CHILD_PID" 2>/dev/null || true
    CHILD_PID=
  fi
  if [ -n "$STRATUS_PID" ]; then
    kill -TERM "$STRATUS_PID" 2>/dev/null || true
    wait "$STRATUS_PID" 2>/dev/null || true
    STRATUS_PID=
  fi
  if [ -n "$KAFKA_DIR" ]; then
    bash "$ROOT/tests/servers/kafka.sh" stop "$KAFKA_DIR" || true
    KAFKA_DIR=
  fi
}
on_signal() { # signal-number
  trap - INT TERM
  cleanup
  exit $((128 + $1))
}
trap cleanup EXIT
trap 'on_signal 2' INT
trap 'on_signal 15' TERM

# run CMD ARGS...: a long step as a job the script waits for, so a signal stops it at once.
run() {
  local rc=0
  "$@" &
  CHILD_PID=$!
  wait "$CHILD_PID" || rc=$?
  CHILD_PID=
  return "$rc"
}

port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null; }

wait_port() { # host:port seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if port_open "$1"; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on $1 after $2 s" >&2
  return 1
}

tool() { # CLASS ARGS...: one of the Kafka tools, the same JVM flags for every system
  local class=$1
  shift
  # shellcheck disable=SC2086 # the heap option is a word list
  java $CLIENT_HEAP -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$RES/tools-log4j2.properties" -cp "$TOOLS/*" \
    "org.apache.kafka.tools.$class" "$@"
}
cat >"$RES/tools-log4j2.properties" <<'EOF'
status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = err
EOF

cpu_ticks() { # pid: utime+stime of the process (all its threads), in clock ticks
  python3 -c 'import sys; f=open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")",1)[1].split(); print(int(f[11])+int(f[12]))' "$1"
}
objects() { # data dir: files in its object store (0 for Kafka)
  if [ -n "$1" ] && [ -d "$1/objects" ]; then find "$1/objects" -type f | wc -l; else echo 0; fi
}

# workload SYSTEM NAME PID DATA CMD...: one tool run with its server-side figures.
workload() {
  local system=$1 name=$2 pid=$3 data=$4
  shift 4
  local dir=$RES/$system
  mkdir -p "$dir"
  printf '%s\t%s\t%s\n' "$system" "$name" "$*" >>"$RES/commands.tsv"
  local load0 cpu0 obj0 t0 rc=0
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  cpu0=$(cpu_ticks "$pid")
  obj0=$(objects "$data")
  t0=$(date +%s%N)
  run "$@" >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
  local t1 cpu1 obj1
  t1=$(date +%s%N)
  cpu1=$(cpu_ticks "$pid")
  obj1=$(objects "$data")
  {
    echo "rc=$rc"
    echo "wall_ms=$(((t1 - t0) / 1000000))"
    echo "cpu_ticks=$((cpu1 - cpu0))"
    echo "clk_tck=$(getconf CLK_TCK)"
    echo "objects=$((obj1 - obj0))"
    echo "load_before=$load0"
    echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$dir/$name.env"
  python3 "$ROOT/bench/kafka-perf.py" line "$dir/$name"
}

produce() { # system name pid data topic records inflight
  workload "$1" "$2" "$3" "$4" tool ProducerPerformance --bootstrap-server "$BOOT" \
    --topic "$5" --num-records "$6" --record-size "$SIZE" --throughput -1 --print-metrics \
    --command-property acks=all enable.idempotence=false \
    "max.in.flight.requests.per.connection=$7" client.id="perf-$2"
}

# workloads SYSTEM PID DATA: the whole set against the running system at $BOOT.
workloads() {
  local s=$1 pid=$2 data=$3 t="perf${RUN_ID}"
  mkdir -p "$RES/$s"
  run tool TopicCommand --bootstrap-server "$BOOT" --create --topic "${t}_warm" \
    --partitions "$PARTITIONS" --replication-factor 1 >"$RES/$s/topic.log" 2>&1
  run tool TopicCommand --bootstrap-server "$BOOT" --create --topic "$t" \
    --partitions "$PARTITIONS" --replication-factor 1 >>"$RES/$s/topic.log" 2>&1
  run tool TopicCommand --bootstrap-server "$BOOT" --describe --topic "$t" >>"$RES/$s/topic.log" 2>&1 || true
  # Warm-up (the JVMs compile their hot paths), also the rate probe that sizes the runs.
  produce "$s" warmup "$pid" "$data" "${t}_warm" "$WARMUP" 8
  local n rate
  if [ -n "${KBENCH_RECORDS:-}" ]; then
    n=$KBENCH_RECORDS
  else
    rate=$(python3 "$ROOT/bench/kafka-perf.py" rate "$RES/$s/warmup")
    n=$(python3 -c "print(min($MAX_RECORDS, max(20000, int($rate * $SECONDS_PER_RUN) // 1000 * 1000)))")
  fi
  local total=0 k
  for k in $INFLIGHT; do
    produce "$s" "produce-inflight-$k" "$pid" "$data" "$t" "$n" "$k"
    total=$((total + n))
  done
  sleep 1
  workload "$s" consume "$pid" "$data" tool ConsumerPerformance --bootstrap-server "$BOOT" \
    --topic "$t" --num-records "$total" --timeout 30000 --group "perf-${RUN_ID}-$s"
}

run_kafka() { # system extra-server-props
  local s=$1
  KAFKA_DIR=$WORK/$s
  bash "$ROOT/tests/servers/kafka.sh" stop "$KAFKA_DIR" >/dev/null 2>&1 || true
  rm -rf "$KAFKA_DIR"
  port_open "$KAFKA_ADDR" && { echo "$KAFKA_ADDR already in use" >&2; exit 1; }
  KAFKA_SERVER_PROPS=$2 run bash "$ROOT/tests/servers/kafka.sh" start "$KAFKA_DIR" "$BASE" >/dev/null
  mkdir -p "$RES/$s"
  cp "$KAFKA_DIR/server.properties" "$RES/$s/server.properties"
  BOOT=$KAFKA_ADDR
  workloads "$s" "$(cat "$KAFKA_DIR/pid")" ""
  du -sm "$KAFKA_DIR/data" | cut -f1 >"$RES/$s/data_mb"
  bash "$ROOT/tests/servers/kafka.sh" stop "$KAFKA_DIR"
  KAFKA_DIR=
}

run_stratus() {
  local s=stratus data=$WORK/data-stratus
  rm -rf "$data"
  mkdir -p "$data" "$RES/$s"
  local a
  for a in "$ST_NS" "$ST_BR" "$ST_KAFKA" "$ST_METRICS"; do
    port_open "$a" && { echo "$a already in use" >&2; exit 1; }
  done
  # The consumer group's first join is not held back, as on the Kafka column (kafka.sh sets
  # group.initial.rebalance.delay.ms=0; both default to 3 s).
  echo "STRATUS_KAFKA__LISTEN_ADDR=$ST_KAFKA STRATUS_METRICS__ADDR=$ST_METRICS STRATUS_KAFKA__GROUP_INITIAL_REBALANCE_DELAY=0s stratus serve --data-dir $data --namesrv-addr $ST_NS --broker-addr $ST_BR" >"$RES/$s/server.txt"
  STRATUS_KAFKA__LISTEN_ADDR=$ST_KAFKA STRATUS_METRICS__ADDR=$ST_METRICS \
    STRATUS_KAFKA__GROUP_INITIAL_REBALANCE_DELAY=0s \
    RUST_LOG=${KBENCH_STRATUS_LOG:-info} "$STRATUS" serve --data-dir "$data" \
    --namesrv-addr "$ST_NS" --broker-addr "$ST_BR" >"$data/stratus.log" 2>&1 &
  STRATUS_PID=$!
  wait_port "$ST_KAFKA" 30
  BOOT=$ST_KAFKA
  workloads "$s" "$STRATUS_PID" "$data"
  curl -sf "http://$ST_METRICS/metrics" >"$RES/$s/metrics.txt" 2>/dev/null || true
  du -sm "$data" | cut -f1 >"$RES/$s/data_mb"
  kill -TERM "$STRATUS_PID"
  wait "$STRATUS_PID" || true
  STRATUS_PID=
  cp "$data/stratus.log" "$RES/$s/stratus.log"
}

for system in $SYSTEMS; do
  case $system in
    kafka)
      echo "== Apache Kafka 4.4.0, stock flush policy (page cache)"
      run_kafka kafka ""
      ;;
    kafka-fsync)
      echo "== Apache Kafka 4.4.0, log.flush.interval.messages=1 (fsync per batch)"
      run_kafka kafka-fsync "log.flush.interval.messages=1"
      ;;
    stratus)
      echo "== Stratus, embedded default (local directory + SQLite)"
      run_stratus
      ;;
    *) echo "unknown system $system" >&2; exit 64 ;;
  esac
  rm -rf "$WORK/$system/data" "$WORK/data-$system"
done

{
  echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "nproc=$(nproc)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "memory=$(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "kernel=$(uname -r)"
  echo "java=$(java -version 2>&1 | head -1)"
  echo "kafka=4.4.0"
  echo "kafka_heap=$KAFKA_HEAP_OPTS"
  echo "kafka_jvm=$KAFKA_JVM_PERFORMANCE_OPTS"
  echo "stratus=$("$STRATUS" --version 2>/dev/null | sed 's/^stratus //') ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown))"
  echo "stratus_linger=${STRATUS_STORAGE__LINGER:-2ms (the default on a local directory)}"
  echo "stratus_upload_concurrency=${STRATUS_STORAGE__UPLOAD_CONCURRENCY:-4 (the default)}"
} >"$RES/machine.txt"
python3 "$ROOT/bench/kafka-perf.py" summary "$RES"
