#!/usr/bin/env python3
"""Alternated runs of several commands, for the quick comparisons of docs/benchmarks.md:

    scripts/bench-alternate.py RUNS 'LABEL=[VAR=VALUE ...] COMMAND ARGS' ...

One warm-up round, then RUNS rounds running each command in turn (stdout to /dev/null); prints
each label's median and minimum wall and CPU time (user + sys, from wait4) and its peak RSS.
"""
import os, subprocess, sys, time, statistics, shlex
runs = int(sys.argv[1]); specs = [s.split('=',1) for s in sys.argv[2:]]
res = {l: [] for l,_ in specs}
for r in range(runs + 1):
    for l, c in specs:
        env = dict(os.environ)
        argv = shlex.split(c)
        while argv and '=' in argv[0]:
            k, v = argv.pop(0).split('=',1); env[k] = v
        with open(os.devnull,'wb') as null:
            t = time.monotonic(); p = subprocess.Popen(argv, stdout=null, stderr=subprocess.DEVNULL, env=env)
            _, st, u = os.wait4(p.pid, 0); w = time.monotonic() - t
        if r: res[l].append((w, u.ru_utime + u.ru_stime, u.ru_maxrss/1024))
for l,_ in specs:
    v = res[l]
    print(f"{l:30s} wall {statistics.median(x[0] for x in v):.3f} (min {min(x[0] for x in v):.3f})  cpu {statistics.median(x[1] for x in v):.3f} (min {min(x[1] for x in v):.3f})  rss {max(x[2] for x in v):.1f}")
