#!/usr/bin/env bash
# Compares two stratus binaries on the same workloads, alternating A B, B A, … so that drift
# of the machine's load and order effects fall on both: sync 1 KiB sends from 8 and 64 connections, 32 × 1 KiB
# batches, async (pipelined) fill, then a drain of what was written. Each run gets a fresh
# node on the embedded default (local directory + SQLite). Besides msgs/s, the node's CPU
# time per message (utime + stime from /proc/<pid>/stat, over the workload) is printed: it
# does not depend on how loaded the machine is.
#
#   bench/ab.sh OLD_BINARY NEW_BINARY            # 4 rounds, 10 s per workload
#
# Env: AB_ROUNDS [4], AB_DURATION [10s], AB_WORK [/tmp/stratus-ab]. Prints one line per
# workload, system and round (workload, system, round, msgs/s, CPU ms per 1000 msgs,
# messages, errors), then the medians.
set -euo pipefail

A=${1:?old stratus binary}
B=${2:?new stratus binary}
ROUNDS=${AB_ROUNDS:-4}
DURATION=${AB_DURATION:-10s}
WORK=${AB_WORK:-/tmp/stratus-ab}
NS=127.0.0.1:29876
BR=127.0.0.1:30911
TICKS=$(getconf CLK_TCK)
mkdir -p "$WORK"
OUT=$WORK/results.tsv
: >"$OUT"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_node() {
  local bin=$1 dir=$2
  rm -rf "$dir"
  mkdir -p "$dir"
  STRATUS_METRICS__ADDR=off "$bin" serve --data-dir "$dir" --namesrv-addr "$NS" \
    --broker-addr "$BR" >"$dir/log" 2>&1 &
  NODE=$!
  for _ in $(seq 1 100); do
    if (exec 3<>/dev/tcp/127.0.0.1/29876) 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "node did not start: $dir/log" >&2
  exit 1
}

stop_node() {
  kill "$NODE" 2>/dev/null || true
  wait "$NODE" 2>/dev/null || true
}

# run NAME SYSTEM ROUND BENCH-ARGS…: one workload against the running node.
run() {
  local name=$1 sys=$2 round=$3
  shift 3
  local before after json
  before=$(cpu_ticks "$NODE")
  json=$("$B" bench "$@" --namesrv "$NS" --json --quiet)
  after=$(cpu_ticks "$NODE")
  python3 - "$name" "$sys" "$round" "$before" "$after" "$TICKS" "$json" >>"$OUT" <<'EOF'
import json, sys
name, system, rnd, before, after, ticks, text = sys.argv[1:8]
r = json.loads(text)
part = r.get("produce") or r.get("consume") or {}
msgs = part.get("acked", part.get("consumed", 0))
rate = part.get("msgs_per_sec", 0)
cpu_ms = (int(after) - int(before)) * 1000 / int(ticks)
per_k = cpu_ms / msgs * 1000 if msgs else float("nan")
errors = part.get("error_total", 0)
print(f"{name}\t{system}\t{rnd}\t{rate:.0f}\t{per_k:.1f}\t{msgs}\t{errors}")
EOF
  tail -1 "$OUT"
}

for round in $(seq 1 "$ROUNDS"); do
  order="A B"
  [ $((round % 2)) = 0 ] && order="B A"
  for sys in $order; do
    bin=$A
    [ "$sys" = B ] && bin=$B
    start_node "$bin" "$WORK/$sys"
    run sync-1k-8c "$sys" "$round" produce --topic S8 --connections 8 --duration "$DURATION"
    run sync-1k-64c "$sys" "$round" produce --topic S64 --connections 64 --duration "$DURATION"
    run batch-32x1k "$sys" "$round" produce --topic SB --connections 8 --batch 32 --duration "$DURATION"
    run async-fill "$sys" "$round" produce --topic SA --connections 8 --mode async --duration "$DURATION"
    filled=$(awk -F'\t' -v s="$sys" -v r="$round" '$1=="async-fill" && $2==s && $3==r {print $6}' "$OUT")
    run drain "$sys" "$round" consume --topic SA --count "$filled"
    stop_node
  done
done

echo
echo "medians (msgs/s, node CPU ms per 1000 msgs); A = $A, B = $B"
python3 - "$OUT" <<'EOF'
import statistics, sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = collections.defaultdict(lambda: {"A": [], "B": []})
order = []
for name, system, _, rate, cpu, _, _ in rows:
    if name not in order:
        order.append(name)
    by[name][system].append((float(rate), float(cpu)))
print(f"{'workload':<14}{'A msgs/s':>11}{'B msgs/s':>11}{'B/A':>7}{'A cpu':>9}{'B cpu':>9}")
for name in order:
    a, b = by[name]["A"], by[name]["B"]
    ar, br = statistics.median(x[0] for x in a), statistics.median(x[0] for x in b)
    ac, bc = statistics.median(x[1] for x in a), statistics.median(x[1] for x in b)
    print(f"{name:<14}{ar:>11.0f}{br:>11.0f}{br / ar if ar else 0:>7.2f}{ac:>9.1f}{bc:>9.1f}")
EOF
