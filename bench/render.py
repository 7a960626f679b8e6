#!/usr/bin/env python3
"""Render bench/compare.sh results as markdown tables into docs/BENCHMARKS.md.

usage: render.py [--block NAME] RESULTS_DIR BENCHMARKS_MD

RESULTS_DIR holds machine.txt, commands.tsv and one directory per system (rocketmq,
stratus, s3) of `stratus bench --json` reports named after their workload. Only the block
between the BEGIN/END markers of BENCHMARKS_MD is replaced; every other section is kept.
`--block NAME` uses markers of that name, so a second run (another set of systems) can keep
its own block. Standard library only.
"""

import json
import os
import re
import sys

def markers(block):
    tag = "bench/compare.sh" if block is None else f"bench/compare.sh {block}"
    return (f"<!-- {tag}: generated block begins; edit bench/render.py instead -->",
            f"<!-- {tag}: generated block ends -->")

SYSTEMS = [
    ("rocketmq", "Apache RocketMQ 5.3.3"),
    ("stratus", "Stratus (local dir)"),
    ("s3", "Stratus (S3)"),
]

WORKLOADS = [
    ("produce-1k-8", "1 KiB sync sends, 8 connections", "produce"),
    ("produce-1k-64", "1 KiB sync sends, 64 connections", "produce"),
    ("produce-16k-8", "16 KiB sync sends, 8 connections", "produce"),
    ("batch-32x1k-8", "Batches of 32 x 1 KiB (SEND_BATCH_MESSAGE), sync, 8 connections", "produce"),
    ("backlog-fill", "Filling the backlog: 1 KiB async sends, 8 connections x 32 in flight", "produce"),
    ("backlog-drain", "Draining the backlog: long-polling pulls from every queue, 8 connections", "consume"),
    ("e2e-half", "End-to-end latency at half of each system's own 8-connection 1 KiB max rate", "e2e"),
    ("e2e-common", "End-to-end latency at the same rate for every system", "e2e"),
]


def get(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d or d[p] is None:
            return None
        d = d[p]
    return d


def fmt(v, digits):
    if v is None:
        return "–"
    if isinstance(v, (int,)) or digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    return f"{a / b:.2f}"


def rows_for(kind):
    produce = [
        ("msgs/s (acknowledged)", ("produce", "msgs_per_sec"), 0),
        ("MB/s (bodies, 10^6 B)", ("produce", "mb_per_sec"), 1),
        ("send latency p50 (ms)", ("produce", "send_latency_ms", "p50"), 2),
        ("send latency p99 (ms)", ("produce", "send_latency_ms", "p99"), 2),
        ("send latency p99.9 (ms)", ("produce", "send_latency_ms", "p999"), 2),
        ("messages acknowledged", ("produce", "acked"), 0),
        ("failed requests", ("produce", "error_total"), 0),
    ]
    consume = [
        ("msgs/s", ("consume", "msgs_per_sec"), 0),
        ("MB/s (bodies, 10^6 B)", ("consume", "mb_per_sec"), 1),
        ("messages consumed", ("consume", "consumed"), 0),
        ("messages in the backlog", ("consume", "expected"), 0),
        ("seconds", ("consume", "seconds"), 1),
        ("failed pulls", ("consume", "error_total"), 0),
    ]
    e2e = [
        ("target rate (msgs/s)", ("produce", "target_rate"), 0),
        ("achieved msgs/s", ("produce", "msgs_per_sec"), 0),
        ("end-to-end p50 (ms)", ("e2e_latency_ms", "p50"), 2),
        ("end-to-end p99 (ms)", ("e2e_latency_ms", "p99"), 2),
        ("end-to-end p99.9 (ms)", ("e2e_latency_ms", "p999"), 2),
        ("send latency p50 (ms)", ("produce", "send_latency_ms", "p50"), 2),
        ("send latency p99 (ms)", ("produce", "send_latency_ms", "p99"), 2),
        ("messages consumed / acknowledged", None, 0),
    ]
    return {"produce": produce, "consume": consume, "e2e": e2e}[kind]


def render(res, begin, end):
    machine = {}
    mpath = os.path.join(res, "machine.txt")
    if os.path.exists(mpath):
        for line in open(mpath):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                machine[k] = v
    present = [(k, name) for k, name in SYSTEMS if os.path.isdir(os.path.join(res, k))]
    stratus_cols = [(k, n) for k, n in present if k != "rocketmq"]
    has_ref = any(k == "rocketmq" for k, _ in present)
    keys = [k for k, _ in present]
    # Ratio columns: each Stratus column over RocketMQ; S3 over the local directory.
    ratio_cols = [(k, "rocketmq", f"{n} / RocketMQ") for k, n in stratus_cols] if has_ref else []
    if "s3" in keys and "stratus" in keys:
        ratio_cols.append(("s3", "stratus", "S3 / local dir"))

    title = ("## Stratus and Apache RocketMQ side by side" if has_ref
             else "## Stratus on S3 and on the local directory")
    out = [begin, "", title, ""]
    out.append(
        f"Measured {machine.get('date', '?')} by `bench/compare.sh` on one machine: "
        f"{machine.get('nproc', '?')} cores ({machine.get('cpu', '?')}), "
        f"{machine.get('memory', '?')} of memory, Linux {machine.get('kernel', '?')}. "
        "Client, server and storage share those cores; every system ran alone, one after "
        "another, driven by the same `stratus bench` client."
    )
    out.append("")
    if has_ref:
        out.append(f"* Apache RocketMQ {machine.get('rocketmq', '?')} (name server + one broker, "
                   f"`tests/clients/reference-broker.sh`, {machine.get('java', '?')}, heap "
                   f"{machine.get('java_heap', '?')}, `flushDiskType=ASYNC_FLUSH`: a send is "
                   "acknowledged once in the page cache).")
    out.append(f"* Stratus {machine.get('stratus', '?')}, {machine.get('rustc', '?')}, release "
               "build, default settings (`linger = 5ms`, `segment_max_bytes = 4MiB`, "
               "`file_fsync = true`): a send is acknowledged once its segment object is written "
               "and fsynced and its commit in SQLite is fsynced.")
    if "s3" in keys:
        out.append(f"* Stratus (S3): the same binary and settings with `--object-store-url` "
                   f"on the S3 server at {machine.get('s3_endpoint') or 'the AWS default endpoint'}"
                   "; the segment is acknowledged once the PUT is answered and committed.")
    else:
        out.append("* Stratus on S3: not run (`STRATUS_BENCH_S3_URL` unset).")
    out.append(f"* Produce workloads ran {machine.get('duration', '?')} each; the backlog was "
               f"{machine.get('backlog_mb', '?')} MiB of 1 KiB messages; the end-to-end "
               f"runs lasted {machine.get('e2e_duration', '?')} each. Topics had 8 queues on every system.")
    loads = []
    for k, n in present:
        lp = os.path.join(res, k, "load.txt")
        if os.path.exists(lp):
            d = dict(l.rstrip("\n").split("=", 1) for l in open(lp) if "=" in l)
            loads.append(f"{n} {d.get('before', '?')} before, {d.get('after', '?')} after "
                         f"({d.get('seconds', '?')} s of workloads)")
    if loads:
        out.append("* Load average (1, 5, 15 min) around each system's run: " + "; ".join(loads)
                   + ". Anything above ~1 means other processes shared the two cores.")
    out.append("* Before its workloads each system got a 5 s warm-up (16 connections sending, "
               "then a drain), not reported.")
    if ratio_cols:
        out.append("* Ratios are " + ", ".join(f"{label}" for _, _, label in ratio_cols)
                   + ": above 1 means more throughput or more latency than the divisor.")
    out.append("")

    for wid, title, kind in WORKLOADS:
        reports = {}
        for k, _ in present:
            p = os.path.join(res, k, wid + ".json")
            if os.path.exists(p):
                try:
                    reports[k] = json.load(open(p))
                except ValueError:
                    pass
        if not reports:
            continue
        out.append(f"### {title}")
        out.append("")
        head = ["", *[n for _, n in present], *[label for _, _, label in ratio_cols]]
        out.append("| " + " | ".join(head) + " |")
        out.append("|---|" + "---:|" * (len(head) - 1))
        for label, path, digits in rows_for(kind):
            cells = [label]
            vals = {}
            for k, _ in present:
                r = reports.get(k)
                if path is None:
                    c = get(r, "consume", "consumed") if r else None
                    a = get(r, "produce", "acked") if r else None
                    cells.append("–" if c is None else f"{c:,} / {a:,}")
                    continue
                v = get(r, *path) if r else None
                vals[k] = v
                cells.append(fmt(v, digits))
            for num, den, _ in ratio_cols:
                cells.append("" if path is None or "target" in label or "messages" in label
                             or "failed" in label else ratio(vals.get(num), vals.get(den)))
            out.append("| " + " | ".join(cells) + " |")
        errs = []
        for k, n in present:
            r = reports.get(k) or {}
            for side in ("produce", "consume"):
                for code, cnt in (get(r, side, "errors") or {}).items():
                    errs.append(f"{n} {side}: {code} × {cnt}")
        if errs:
            out.append("")
            out.append("Failures: " + "; ".join(errs) + ".")
        out.append("")

    cpath = os.path.join(res, "commands.tsv")
    if os.path.exists(cpath):
        out.append("### Exact commands")
        out.append("")
        out.append("Servers:")
        out.append("")
        out.append("```sh")
        for k, _ in present:
            if k == "rocketmq":
                out.append("JAVA_HEAP=%s tests/clients/reference-broker.sh start DIR   # broker.conf below"
                           % machine.get("java_heap", "?"))
            else:
                sp = os.path.join(res, k, "server.txt")
                if os.path.exists(sp):
                    cmd = open(sp).read().strip()
                    cmd = re.sub(r"^\S+ serve", "target/release/stratus serve", cmd)
                    cmd = re.sub(r"--data-dir \S*/", "--data-dir $BENCH_WORK/", cmd)
                    out.append(cmd)
        out.append("```")
        conf = os.path.join(res, "rocketmq", "broker.conf")
        if os.path.exists(conf):
            out.append("")
            out.append("Reference `broker.conf`:")
            out.append("")
            out.append("```properties")
            out.extend(l.rstrip("\n") for l in open(conf) if "storePath" not in l)
            out.append("```")
        out.append("")
        out.append("Clients (the same against every system; `--namesrv` differs):")
        out.append("")
        out.append("```sh")
        seen = set()
        for line in open(cpath):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                continue
            system, wid, cmd = parts
            if system not in keys:
                continue
            if wid.startswith("warmup"):
                continue
            if wid in seen and wid != "e2e-half":
                continue
            seen.add(wid)
            if wid == "e2e-half":
                out.append(f"# {system}: half of its produce-1k-8 rate")
            if wid == "e2e-common":
                out.append("# every system")
            out.append(cmd)
        out.append("```")
        out.append("")
    out.append(end)
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    name = None
    if len(args) == 4 and args[0] == "--block":
        name, args = args[1], args[2:]
    if len(args) != 2:
        sys.exit(__doc__)
    res, md = args
    BEGIN, END = markers(name)
    block = render(res, BEGIN, END)
    if os.path.exists(md):
        text = open(md).read()
    else:
        text = "# Benchmarks\n\n"
    if BEGIN in text and END in text:
        before = text[: text.index(BEGIN)]
        after = text[text.index(END) + len(END):]
        text = before + block.rstrip("\n") + after
    elif name is not None and markers(None)[1] in text:
        # A named block first goes right after the default block.
        idx = text.index(markers(None)[1]) + len(markers(None)[1])
        text = text[:idx] + "\n\n" + block.rstrip("\n") + text[idx:]
    else:
        # First generation: right after the title and its introduction, before any section.
        idx = text.find("\n## ")
        if idx < 0:
            text = text.rstrip("\n") + "\n\n" + block
        else:
            text = text[: idx + 1] + block + "\n" + text[idx + 1:]
    with open(md, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
