#!/usr/bin/env python3
"""latency.py - per-query latency of `pond search` run as a fresh process (cold: what a person
at a shell gets), and of ripgrep over the same session files (the baseline: what that person
would otherwise run), query by query in turn. Prints p50/p95/p99 per command and filter kind,
and each command's peak RSS.

usage: latency.py POND STORE CORPUS_DIR QUERIES.jsonl [--runs N]
"""
import json, os, subprocess, sys, time

pond, store, corpus, qpath = sys.argv[1:5]
runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
queries = [json.loads(l) for l in open(qpath, encoding="utf-8")]
projects = os.path.join(corpus, "projects")


def pond_cmd(q):
    cmd = [pond, "search", "--json", "--data", store, "--limit", "10"]
    if q["filter"]:
        cmd += ["--project", q["project"]]
    return cmd + ["--", q["query"]]


def rg_cmd(q):
    # Files holding any of the words, case-insensitively: the sessions to look at.
    where = os.path.join(projects, q["project"].replace("/", "-")) if q["filter"] else projects
    cmd = ["rg", "--ignore-case", "--fixed-strings", "--files-with-matches"]
    for w in q["query"].split():
        cmd += ["-e", w]
    return cmd + [where]


def timed(cmd):
    """Wall milliseconds and peak RSS (KiB) of one run of cmd, from the kernel's own accounting."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    took = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{cmd}: exit {code}")
    return took * 1000, usage.ru_maxrss


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


results = {"pond search (cold process)": {True: [], False: []}, "ripgrep": {True: [], False: []}}
peaks = {}
for name, make in (("pond search (cold process)", pond_cmd), ("ripgrep", rg_cmd)):
    for q in queries[:20]:  # warm the page cache
        timed(make(q))
for r in range(runs):
    for q in queries:
        for name, make in (("pond search (cold process)", pond_cmd), ("ripgrep", rg_cmd)):
            ms, kib = timed(make(q))
            results[name][q["filter"]].append(ms)
            peaks[name] = max(peaks.get(name, 0), kib)
for name, by in results.items():
    for filt, xs in ((None, by[True] + by[False]), (True, by[True]), (False, by[False])):
        label = {None: "all", True: "with project filter", False: "no filter"}[filt]
        print(f"{name:28s} {label:20s} n={len(xs):4d}  p50 {pct(xs, .5):8.1f} ms  "
              f"p95 {pct(xs, .95):8.1f} ms  p99 {pct(xs, .99):8.1f} ms")
for name, kib in peaks.items():
    print(f"{name:28s} peak RSS over all runs: {kib / 1024:.0f} MiB")
