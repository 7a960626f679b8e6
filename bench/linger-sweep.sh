#!/usr/bin/env bash
# Send latency and throughput of Stratus (embedded default) against the writer's linger:
# for each linger, a fresh node and 1 KiB sync sends from 8 and from 64 connections.
#
#   bench/linger-sweep.sh [LINGER...]        # default: 5ms 2ms 1ms 0ms
#
# Env: STRATUS_BIN (default [$CARGO_TARGET_DIR|target]/release/stratus), BENCH_WORK
# (/tmp/stratus-bench), BENCH_DURATION (6s). Prints one line per run; also counts the segment
# objects each run wrote (one object per seal).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STRATUS=${STRATUS_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/stratus}
WORK=${BENCH_WORK:-/tmp/stratus-bench}/linger
DURATION=${BENCH_DURATION:-6s}
NS=127.0.0.1:29876
BR=127.0.0.1:30911
[ $# -gt 0 ] || set -- 5ms 2ms 1ms 0ms
PID=
trap '[ -z "$PID" ] || { kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }' EXIT
objects() { find "$WORK/data/objects" -type f -name '*.seg' 2>/dev/null | wc -l; }
for linger in "$@"; do
  rm -rf "$WORK"
  mkdir -p "$WORK"
  STRATUS_STORAGE__LINGER=$linger "$STRATUS" serve --data-dir "$WORK/data" \
    --namesrv-addr "$NS" --broker-addr "$BR" >"$WORK/stratus.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/${BR%:*}/${BR#*:}") 2>/dev/null && break; sleep 0.1; done
  for conns in 8 64; do
    before=$(objects)
    "$STRATUS" bench produce --namesrv "$NS" --topic "linger_$conns" --size 1024 \
      --connections "$conns" --duration "$DURATION" --quiet --json >"$WORK/run.json" || true
    after=$(objects)
    python3 - "$WORK/run.json" "$linger" "$conns" "$((after - before))" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["produce"]
l = p.get("send_latency_ms") or {}
print(f"linger {sys.argv[2]:>5} {sys.argv[3]:>2} connections: {p['msgs_per_sec']:8.0f} msgs/s  "
      f"p50 {l.get('p50', 0):6.2f}  p99 {l.get('p99', 0):6.2f}  p99.9 {l.get('p999', 0):6.2f} ms  "
      f"{int(sys.argv[4]) / p['seconds']:6.0f} objects/s  errors {p['error_total']}")
PY
  done
  kill -TERM "$PID"
  wait "$PID" || true
  PID=
done
