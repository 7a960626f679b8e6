#!/usr/bin/env bash
# Side-by-side benchmark on this machine: Apache RocketMQ 5.3.3, then Stratus on the embedded
# default (local object-store directory + SQLite), then — when STRATUS_BENCH_S3_URL is set —
# Stratus on an S3 store. Each system runs alone, one after another, driven by the same
# `stratus bench` client over the remoting protocol. Results (the `--json` reports) go to
# $BENCH_WORK/results and are rendered into docs/BENCHMARKS.md by bench/render.py (only the
# block between its markers is replaced; other sections of that file are kept).
#
#   bench/compare.sh                      # everything, ~10 min on 2 cores
#
# Env:
#   BENCH_WORK          scratch dir (broker install, data dirs, results)  [/tmp/stratus-bench]
#   BENCH_DURATION      length of each produce workload                   [10s]
#   BENCH_BACKLOG_MB    size of the backlog the consume workload drains   [1024]
#                       (1 GiB of 1 KiB messages: about a minute per system to fill here)
#   BENCH_E2E_DURATION  length of each end-to-end workload                [15s]
#   BENCH_E2E_COMMON_RATE  rate of the second end-to-end run, the same for
#                       every system (the first runs at half each one's max) [400]
#   BENCH_SYSTEMS       which columns to run                              [rocketmq stratus s3]
#   STRATUS_BIN         the stratus binary [$CARGO_TARGET_DIR|target]/release/stratus
#   JAVA_HEAP           reference broker heap                             [1g]
#   STRATUS_BENCH_S3_URL  s3://bucket[/prefix]: adds the "Stratus (S3)" column; a fresh
#                       sub-prefix bench-<time> is appended. Endpoint and credentials come
#                       from the environment, passed through unchanged: the storage settings
#                       (STRATUS_STORAGE__S3_ENDPOINT, __S3_ACCESS_KEY_ID,
#                       __S3_SECRET_ACCESS_KEY, __S3_ALLOW_HTTP, __S3_REGION, …) or the AWS
#                       environment. With MinIO from tests/servers/minio.sh:
#                         STRATUS_BENCH_S3_URL=s3://stratus STRATUS_STORAGE__S3_ENDPOINT=http://127.0.0.1:19000 \
#                         STRATUS_STORAGE__S3_ACCESS_KEY_ID=stratus-test \
#                         STRATUS_STORAGE__S3_SECRET_ACCESS_KEY=stratus-test-secret \
#                         STRATUS_STORAGE__S3_ALLOW_HTTP=true bench/compare.sh
#   BENCH_NO_RENDER=1   keep results, do not touch docs/BENCHMARKS.md
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${BENCH_WORK:-/tmp/stratus-bench}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
STRATUS=${STRATUS_BIN:-$TARGET/release/stratus}
DURATION=${BENCH_DURATION:-10s}
BACKLOG_MB=${BENCH_BACKLOG_MB:-1024}
E2E_DURATION=${BENCH_E2E_DURATION:-15s}
E2E_COMMON_RATE=${BENCH_E2E_COMMON_RATE:-400}
SYSTEMS=${BENCH_SYSTEMS:-rocketmq stratus s3}
export JAVA_HEAP=${JAVA_HEAP:-1g}
RES=$WORK/results
REF=$WORK/rocketmq
# Apache RocketMQ uses the reference script's ports (9876, 10911 and 10909/10912 beside it);
# Stratus listens elsewhere so a leftover of one never answers for the other.
REF_NS=127.0.0.1:${NAMESRV_PORT:-9876}
ST_NS=127.0.0.1:29876
ST_BR=127.0.0.1:30911

if [ ! -x "$STRATUS" ]; then
  echo "no $STRATUS: cargo build --release -p stratus-gateway --bin stratus" >&2
  exit 1
fi
mkdir -p "$WORK"
rm -rf "$RES"
mkdir -p "$RES"
RUN_ID=$(date +%s)

STRATUS_PID=
REF_STARTED=
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
  if [ -n "$REF_STARTED" ]; then
    bash "$ROOT/tests/clients/reference-broker.sh" stop "$REF" || true
    REF_STARTED=
  fi
}
# On INT/TERM: clean up, then exit 128+signal (a trap that only cleaned up let the script go
# on to the next workload). The EXIT trap cleans up on every other way out; cleanup clears
# what it stopped, so running it twice is harmless.
on_signal() { # signal-number
  trap - INT TERM
  cleanup
  exit $((128 + $1))
}
trap cleanup EXIT
trap 'on_signal 2' INT
trap 'on_signal 15' TERM

# run CMD ARGS...: a long step (a bench run, a reference broker start) as a job the script
# waits for. bash runs a trap only once the foreground command has ended, so a signal during
# a one-minute backlog fill would wait for it; `wait` returns at once and cleanup stops CHILD_PID.
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

json() { # file python-expression-on-r
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# bench SYSTEM NAMESRV WORKLOAD ARGS... : one `stratus bench` run, its report kept as JSON.
bench() {
  local system=$1 ns=$2 workload=$3
  shift 3
  local out=$RES/$system/$workload.json err=$RES/$system/$workload.log
  mkdir -p "$RES/$system"
  printf '%s\t%s\tstratus bench %s --namesrv %s --json\n' "$system" "$workload" "$*" "$ns" >>"$RES/commands.tsv"
  local rc=0
  if [ "$system" = rocketmq ] && [ "$(bash "$ROOT/tests/clients/reference-broker.sh" status "$REF" | grep -c running)" != 2 ]; then
    # Something outside this script stopped the reference broker (it happens on a shared
    # machine); restart it rather than report a column of failures.
    echo "  (reference broker not running before $workload: restarting it)" >&2
    run bash "$ROOT/tests/clients/reference-broker.sh" start "$REF" >/dev/null
  fi
  run "$STRATUS" bench "$@" --namesrv "$ns" --json >"$out" 2>"$err" || rc=$?
  if [ ! -s "$out" ]; then
    echo "  $workload: no report (exit $rc); last lines of $err:" >&2
    tail -5 "$err" >&2
    rm -f "$out"
    return 0
  fi
  python3 - "$out" "$workload" "$rc" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p, c, e = r.get("produce"), r.get("consume"), r.get("e2e_latency_ms")
parts = []
if p:
    lat = p.get("send_latency_ms") or {}
    parts.append(f"produce {p['msgs_per_sec']:.0f} msgs/s {p['mb_per_sec']:.1f} MB/s p99 {lat.get('p99', 0):.2f} ms errors {p['error_total']}")
if c:
    parts.append(f"consume {c['consumed']} msgs {c['msgs_per_sec']:.0f} msgs/s {c['mb_per_sec']:.1f} MB/s")
if e:
    parts.append(f"e2e p50 {e['p50']:.2f} p99 {e['p99']:.2f} ms")
print(f"  {sys.argv[2]}: " + "; ".join(parts) + (f" (exit {sys.argv[3]})" if sys.argv[3] != "0" else ""))
PY
}

# workloads SYSTEM NAMESRV: the whole set against one running system.
workloads() {
  local s=$1 ns=$2 t="bench${RUN_ID}"
  local common=(--timeout 30s)
  mkdir -p "$RES/$s"
  # Other work on the machine skews figures; keep the load average next to them.
  echo "before=$(cut -d' ' -f1-3 /proc/loadavg)" >"$RES/$s/load.txt"
  local t0=$SECONDS
  # Warm-up, not reported: the JVM compiles its hot paths during the first seconds of load,
  # and both systems get the same treatment.
  bench "$s" "$ns" warmup produce --topic "${t}_warmup" --size 1024 --connections 16 --duration 5s "${common[@]}"
  bench "$s" "$ns" warmup-consume consume --topic "${t}_warmup" "${common[@]}"
  bench "$s" "$ns" produce-1k-8 produce --topic "${t}_1k8" --size 1024 --connections 8 --duration "$DURATION" "${common[@]}"
  bench "$s" "$ns" produce-1k-64 produce --topic "${t}_1k64" --size 1024 --connections 64 --duration "$DURATION" "${common[@]}"
  bench "$s" "$ns" produce-16k-8 produce --topic "${t}_16k8" --size 16384 --connections 8 --duration "$DURATION" "${common[@]}"
  bench "$s" "$ns" batch-32x1k-8 produce --topic "${t}_b32" --size 1024 --batch 32 --connections 8 --duration "$DURATION" "${common[@]}"
  local count=$((BACKLOG_MB * 1024))
  bench "$s" "$ns" backlog-fill produce --topic "${t}_backlog" --size 1024 --connections 8 --mode async --inflight 32 --count "$count" "${common[@]}"
  sleep 2
  bench "$s" "$ns" backlog-drain consume --topic "${t}_backlog" --connections 8 "${common[@]}"
  local max rate
  max=$(json "$RES/$s/produce-1k-8.json" 'r["produce"]["msgs_per_sec"]' 2>/dev/null || echo 2000)
  rate=$(python3 -c "print(max(100, int(float('$max') / 2)))")
  bench "$s" "$ns" e2e-half e2e --topic "${t}_e2e" --size 1024 --connections 8 --rate "$rate" --duration "$E2E_DURATION" "${common[@]}"
  bench "$s" "$ns" e2e-common e2e --topic "${t}_e2e2" --size 1024 --connections 8 --rate "$E2E_COMMON_RATE" --duration "$E2E_DURATION" "${common[@]}"
  echo "after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/$s/load.txt"
  echo "seconds=$((SECONDS - t0))" >>"$RES/$s/load.txt"
}

start_stratus() { # name extra serve args...
  local name=$1
  shift
  local data=$WORK/data-$name
  rm -rf "$data"
  mkdir -p "$data" "$RES/$name"
  if port_open "$ST_NS" || port_open "$ST_BR"; then
    echo "$ST_NS or $ST_BR already in use" >&2
    exit 1
  fi
  echo "$STRATUS serve --data-dir $data --namesrv-addr $ST_NS --broker-addr $ST_BR $*" >"$RES/$name/server.txt"
  RUST_LOG=${STRATUS_BENCH_LOG:-info} "$STRATUS" serve --data-dir "$data" \
    --namesrv-addr "$ST_NS" --broker-addr "$ST_BR" "$@" >"$data/stratus.log" 2>&1 &
  STRATUS_PID=$!
  wait_port "$ST_NS" 30
  wait_port "$ST_BR" 30
}

stop_stratus() {
  kill -TERM "$STRATUS_PID"
  wait "$STRATUS_PID" || true
  STRATUS_PID=
}

for system in $SYSTEMS; do
  case $system in
    rocketmq)
      echo "== Apache RocketMQ (reference-broker.sh, heap $JAVA_HEAP)"
      bash "$ROOT/tests/clients/reference-broker.sh" stop "$REF" >/dev/null 2>&1 || true
      rm -rf "$REF/store" "$REF/logs" "$REF/home/store" "$REF/home/logs"
      if port_open "$REF_NS"; then
        echo "$REF_NS already in use" >&2
        exit 1
      fi
      REF_STARTED=1
      run bash "$ROOT/tests/clients/reference-broker.sh" start "$REF"
      mkdir -p "$RES/rocketmq"
      cp "$REF/broker.conf" "$RES/rocketmq/broker.conf"
      workloads rocketmq "$REF_NS"
      bash "$ROOT/tests/clients/reference-broker.sh" stop "$REF"
      REF_STARTED=
      ;;
    stratus)
      echo "== Stratus, embedded default (local directory + SQLite)"
      start_stratus stratus
      workloads stratus "$ST_NS"
      stop_stratus
      ;;
    s3)
      if [ -z "${STRATUS_BENCH_S3_URL:-}" ]; then
        echo "== Stratus on S3: skipped (STRATUS_BENCH_S3_URL not set)"
        continue
      fi
      echo "== Stratus on S3 (${STRATUS_BENCH_S3_URL%/}/bench-$RUN_ID)"
      start_stratus s3 --object-store-url "${STRATUS_BENCH_S3_URL%/}/bench-$RUN_ID"
      workloads s3 "$ST_NS"
      stop_stratus
      ;;
    *) echo "unknown system $system" >&2; exit 64 ;;
  esac
done

# What the figures were measured on.
{
  echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "nproc=$(nproc)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "memory=$(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "kernel=$(uname -r)"
  echo "java=$(java -version 2>&1 | head -1)"
  echo "rocketmq=${ROCKETMQ_VERSION:-5.3.3}"
  echo "java_heap=$JAVA_HEAP"
  echo "stratus=$("$STRATUS" --version 2>/dev/null | sed 's/^stratus //') ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown))"
  echo "rustc=$(rustc --version 2>/dev/null || echo unknown)"
  echo "duration=$DURATION"
  echo "e2e_duration=$E2E_DURATION"
  echo "e2e_common_rate=$E2E_COMMON_RATE"
  echo "backlog_mb=$BACKLOG_MB"
  echo "s3_endpoint=${STRATUS_STORAGE__S3_ENDPOINT:-${AWS_ENDPOINT:-}}"
} >"$RES/machine.txt"

if [ -z "${BENCH_NO_RENDER:-}" ]; then
  python3 "$ROOT/bench/render.py" "$RES" "$ROOT/docs/BENCHMARKS.md"
  echo "wrote docs/BENCHMARKS.md"
fi
