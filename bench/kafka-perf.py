#!/usr/bin/env python3
"""Reads what bench/kafka-perf.sh recorded: the Kafka perf tools' summary lines and the
server-side figures (CPU ticks, objects, load averages) beside them.

  kafka-perf.py line PREFIX     one workload (PREFIX.out/.err/.env) as one line
  kafka-perf.py rate PREFIX     the records/s of a producer run
  kafka-perf.py summary RESDIR  the table and the ratios; writes RESDIR/summary.{json,md}
  kafka-perf.py runs RESDIR...  the main figures of several runs side by side (markdown)
"""
import json
import os
import re
import sys

PRODUCER = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th"
)


def env(prefix):
    out = {}
    with open(prefix + ".env") as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            out[k] = v
    return out


def parse(prefix):
    """The tool's figures and the server's, as a dict."""
    e = env(prefix)
    text = open(prefix + ".out").read()
    err = open(prefix + ".err").read() if os.path.exists(prefix + ".err") else ""
    r = {
        "rc": int(e["rc"]),
        "wall_s": int(e["wall_ms"]) / 1000,
        "cpu_s": int(e["cpu_ticks"]) / int(e["clk_tck"]),
        "objects": int(e["objects"]),
        "load_before": e["load_before"],
        "load_after": e["load_after"],
        "errors": len(re.findall(r"Exception|ERROR", text + err)),
    }
    m = None
    for m in PRODUCER.finditer(text):
        pass
    if m:
        r.update(
            kind="produce",
            msgs=int(m.group(1)),
            msgs_per_s=float(m.group(2)),
            mb_per_s=float(m.group(3)),
            lat_avg=float(m.group(4)),
            lat_max=float(m.group(5)),
            lat_p50=int(m.group(6)),
            lat_p95=int(m.group(7)),
            lat_p99=int(m.group(8)),
            lat_p999=int(m.group(9)),
        )
    else:
        rows = [
            line.split(", ")
            for line in text.splitlines()
            if line.count(", ") == 9 and not line.startswith("start.time")
        ]
        if rows:
            f = rows[-1]
            r.update(
                kind="consume",
                msgs=int(f[4]),
                mb=float(f[2]),
                msgs_per_s=float(f[5]),
                mb_per_s=float(f[3]),
                rebalance_ms=int(f[6]),
                fetch_ms=int(f[7]),
                fetch_mb_per_s=float(f[8]),
                fetch_msgs_per_s=float(f[9]),
            )
        else:
            r["kind"] = "failed"
            r["msgs"] = 0
    for key, name in (
        ("request_latency_avg", "request-latency-avg"),
        ("record_queue_time_avg", "record-queue-time-avg"),
        ("records_per_request", "records-per-request-avg"),
        ("request_rate", "request-rate"),
    ):
        mm = re.search(r"^producer-metrics:" + name + r":\{[^}]*\}\s*:\s*([\d.]+)", text, re.M)
        if mm:
            r[key] = float(mm.group(1))
    if r["msgs"]:
        r["cpu_ms_per_1k"] = r["cpu_s"] * 1000 / r["msgs"] * 1000
    if r["objects"] and r["wall_s"]:
        r["objects_per_s"] = r["objects"] / r["wall_s"]
    return r


def line(prefix):
    r = parse(prefix)
    name = os.path.basename(prefix)
    cpu = f"server cpu {r['cpu_s']:.1f} s ({r.get('cpu_ms_per_1k', 0):.1f} ms/1k msgs)"
    obj = f", {r['objects']} objects ({r.get('objects_per_s', 0):.0f}/s)" if r["objects"] else ""
    bad = f" [exit {r['rc']}, {r['errors']} error lines]" if r["rc"] or r["errors"] else ""
    if r["kind"] == "produce":
        print(
            f"  {name}: {r['msgs']} msgs, {r['msgs_per_s']:.0f} msgs/s, {r['mb_per_s']:.1f} MB/s, "
            f"latency avg {r['lat_avg']:.1f} p50 {r['lat_p50']} p99 {r['lat_p99']} max "
            f"{r['lat_max']:.0f} ms; request latency {r.get('request_latency_avg', 0):.1f} ms, "
            f"{r.get('records_per_request', 0):.0f} records/request, buffer wait "
            f"{r.get('record_queue_time_avg', 0):.0f} ms; {cpu}{obj}; load {r['load_before']} -> {r['load_after']}{bad}"
        )
    elif r["kind"] == "consume":
        print(
            f"  {name}: {r['msgs']} msgs, {r['msgs_per_s']:.0f} msgs/s, {r['mb_per_s']:.1f} MB/s "
            f"(fetch only: {r['fetch_msgs_per_s']:.0f} msgs/s, {r['fetch_mb_per_s']:.1f} MB/s, "
            f"rebalance {r['rebalance_ms']} ms); {cpu}; load {r['load_before']} -> "
            f"{r['load_after']}{bad}"
        )
    else:
        print(f"  {name}: no summary line (exit {r['rc']}); see {prefix}.out/.err")


def rate(prefix):
    r = parse(prefix)
    print(r.get("msgs_per_s", 0) if r["kind"] == "produce" else 0)


def summary(res):
    systems = [
        s for s in ("kafka", "kafka-fsync", "stratus") if os.path.isdir(os.path.join(res, s))
    ]
    data = {}
    for s in systems:
        d = os.path.join(res, s)
        names = sorted(
            n[: -len(".env")] for n in os.listdir(d) if n.endswith(".env") and n != "warmup.env"
        )
        data[s] = {n: parse(os.path.join(d, n)) for n in names}
    json.dump(data, open(os.path.join(res, "summary.json"), "w"), indent=1)
    workloads = []
    for s in systems:
        for n in data[s]:
            if n not in workloads:
                workloads.append(n)
    workloads.sort(key=lambda n: (n == "consume", int(n.rsplit("-", 1)[1]) if n[-1].isdigit() else 0))
    metrics = [
        ("msgs/s", "msgs_per_s", "{:.0f}"),
        ("MB/s", "mb_per_s", "{:.1f}"),
        ("latency avg ms", "lat_avg", "{:.1f}"),
        ("latency p50 ms", "lat_p50", "{:.0f}"),
        ("latency p99 ms", "lat_p99", "{:.0f}"),
        ("producer request latency avg ms", "request_latency_avg", "{:.1f}"),
        ("records / request", "records_per_request", "{:.0f}"),
        ("record wait in producer buffer ms", "record_queue_time_avg", "{:.0f}"),
        ("fetch-only msgs/s", "fetch_msgs_per_s", "{:.0f}"),
        ("server CPU ms / 1k msgs", "cpu_ms_per_1k", "{:.1f}"),
        ("objects / s", "objects_per_s", "{:.0f}"),
        ("records", "msgs", "{:.0f}"),
    ]
    refs = [s for s in ("kafka", "kafka-fsync") if s in systems]
    head = ["workload", "figure"] + systems
    if "stratus" in systems:
        head += [f"stratus / {s}" for s in refs]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in workloads:
        for label, key, fmt in metrics:
            vals = [data[s].get(w, {}).get(key) for s in systems]
            if all(v is None for v in vals):
                continue
            row = [w, label] + [fmt.format(v) if v is not None else "–" for v in vals]
            if "stratus" in systems:
                st = data["stratus"].get(w, {}).get(key)
                for s in refs:
                    k = data[s].get(w, {}).get(key)
                    row.append(f"{st / k:.2f}" if st is not None and k else "–")
            out.append("| " + " | ".join(row) + " |")
    load = ["", "Load average (1, 5, 15 min) before and after each workload:", ""]
    for s in systems:
        for w in workloads:
            r = data[s].get(w)
            if r:
                load.append(f"- {s} {w}: {r['load_before']} → {r['load_after']}")
    md = "\n".join(out + load) + "\n"
    open(os.path.join(res, "summary.md"), "w").write(md)
    print(md)


def runs(dirs):
    data = [json.load(open(os.path.join(d, "summary.json"))) for d in dirs]
    systems = [s for s in ("kafka", "kafka-fsync", "stratus") if any(s in d for d in data)]
    rows = [
        ("produce-inflight-8", "msgs/s", "msgs_per_s", "{:,.0f}"),
        ("produce-inflight-8", "MB/s", "mb_per_s", "{:.1f}"),
        ("produce-inflight-8", "latency avg / p50 / p99 ms", None, None),
        ("produce-inflight-8", "request latency ms", "request_latency_avg", "{:.1f}"),
        ("produce-inflight-8", "server CPU ms / 1k msgs", "cpu_ms_per_1k", "{:.1f}"),
        ("produce-inflight-8", "objects / s", "objects_per_s", "{:.0f}"),
        ("produce-inflight-64", "msgs/s", "msgs_per_s", "{:,.0f}"),
        ("produce-inflight-64", "MB/s", "mb_per_s", "{:.1f}"),
        ("produce-inflight-64", "latency avg / p50 / p99 ms", None, None),
        ("produce-inflight-64", "request latency ms", "request_latency_avg", "{:.1f}"),
        ("produce-inflight-64", "server CPU ms / 1k msgs", "cpu_ms_per_1k", "{:.1f}"),
        ("produce-inflight-64", "objects / s", "objects_per_s", "{:.0f}"),
        ("consume", "msgs/s", "msgs_per_s", "{:,.0f}"),
        ("consume", "MB/s", "mb_per_s", "{:.1f}"),
        ("consume", "fetch-only msgs/s", "fetch_msgs_per_s", "{:,.0f}"),
        ("consume", "server CPU ms / 1k msgs", "cpu_ms_per_1k", "{:.1f}"),
    ]
    refs = [s for s in ("kafka", "kafka-fsync") if s in systems]
    head = ["workload", "figure"] + systems + [f"stratus / {r}" for r in refs if "stratus" in systems]
    out = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]

    def cell(r, key, fmt):
        if r is None:
            return None
        if key is None:
            if "lat_avg" not in r:
                return None
            return f"{r['lat_avg']:.0f} / {r['lat_p50']} / {r['lat_p99']}"
        v = r.get(key)
        return None if v is None else fmt.format(v)

    for w, label, key, fmt in rows:
        cells = []
        for s in systems:
            vals = [cell(d.get(s, {}).get(w), key, fmt) for d in data]
            cells.append(" · ".join(v or "–" for v in vals))
        if all(c.strip("–· ") == "" for c in cells):
            continue
        if "stratus" in systems:
            for ref in refs:
                ratios = []
                for d in data:
                    a = d.get("stratus", {}).get(w, {})
                    b = d.get(ref, {}).get(w, {})
                    k = key or "lat_p50"
                    ratios.append(f"{a[k] / b[k]:.2f}" if a.get(k) is not None and b.get(k) else "–")
                cells.append(" · ".join(ratios))
        out.append("| " + " | ".join([w, label] + cells) + " |")
    print("\n".join(out))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "runs":
        runs(args)
    else:
        {"line": line, "rate": rate, "summary": summary}[cmd](args[0])
