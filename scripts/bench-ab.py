#!/usr/bin/env python3
"""Times two or more `pond` builds on one conversion, alternating them run by run, so that a
change between builds is measured in the same minutes of the machine (a benchmark, not a test).

    scripts/bench-ab.py POND_A,POND_B[,...] FROM:TO INPUT RUNS

Each run writes to /dev/null; wall time is a monotonic clock around the child, CPU time (user +
sys) the kernel's accounting of that child (wait4). Prints per build the minimum and median
wall and the median CPU. Against the naive round trip use scripts/bench-convert.py.
"""
import os
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    bins = sys.argv[1].split(",")
    pair, source, runs = sys.argv[2], sys.argv[3], int(sys.argv[4])
    timed = {b: [] for b in bins}
    for _ in range(runs):
        for b in bins:
            start = time.monotonic()
            child = subprocess.Popen([b, "convert", pair, source],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.monotonic() - start
            if status != 0:
                sys.exit(f"{b} convert {pair} {source}: exit status {status}")
            timed[b].append((wall, usage.ru_utime + usage.ru_stime))
    for b in bins:
        walls = [w for w, _ in timed[b]]
        cpus = [c for _, c in timed[b]]
        print(f"{b} {pair}: wall min {min(walls):.3f} s, median {statistics.median(walls):.3f} s; "
              f"CPU median {statistics.median(cpus):.3f} s")


if __name__ == "__main__":
    main()
