#!/usr/bin/env python3
"""Times `pond convert` against the naive round trip of the same input, in turn, for the
conversion table of docs/benchmarks.md.

    scripts/bench-convert.py POND BASELINE RUNS FROM:TO=INPUT [FROM:TO=INPUT ...]

For each conversion: one warm-up run of each command, then RUNS counted runs in turn
(pond, baseline, pond, baseline, ...), each writing to /dev/null (pond's single output file
goes to stdout). A folder INPUT (many sessions, so many files) is written to files by both:
pond with --out into a fresh folder, the baseline into one file beside it, removed after each
run (outside the timing). Each run's wall time is a monotonic clock around the child; its CPU time
(user + sys) and peak RSS come from the kernel's accounting of that child (wait4). The ratio
pond / baseline wall is taken pair by pair. Prints one Markdown row per conversion: medians,
and the ratio's median (min-max).

With BENCH_HANDOFF set to a build of bench/core-handoff, the probe runs just before and just
after each counted pond run, and a last column says in how many of the row's pond runs either
reading was slow: over 1.5 times the lowest reading of the invocation so far. On a virtual
machine a slow reading means the host has put the two CPUs far apart, which slows pond's two
threads and not the single-threaded baseline (docs/benchmarks.md, "2026-12-06, 16:10-16:35
UTC"). Every run still counts in the medians; the column says which rows to distrust.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time


SCRATCH = os.environ.get("BENCH_SCRATCH", "/tmp/bench-convert-out")


def run(argv, to_file=None):
    """Runs argv with stdout to /dev/null (or to the file `to_file`); returns (wall s, cpu s,
    peak MiB). SCRATCH is emptied before and after, outside the timing."""
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    with open(to_file or os.devnull, "wb") as null:
        start = time.monotonic()
        child = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE)
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
    shutil.rmtree(SCRATCH, ignore_errors=True)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        sys.exit(f"{argv}: exit {child.returncode}\n{err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def handoff(probe):
    """One reading of bench/core-handoff: ns for a cache line to pass between CPUs 0 and 1."""
    out = subprocess.run([probe, "500000"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{probe}: exit {out.returncode}: {out.stderr.strip()}")
    return float(out.stdout)


def main():
    pond, baseline, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    probe = os.environ.get("BENCH_HANDOFF")
    lowest = float("inf")
    print("| pair | input | pond wall | pond CPU | pond peak MiB | baseline wall | baseline CPU "
          "| baseline peak MiB | pond / baseline wall |" + (" slow handoffs |" if probe else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if probe else ""))
    for spec in sys.argv[4:]:
        pair, source = spec.split("=", 1)
        folder = os.path.isdir(source)
        a = [pond, "convert", pair, source] + (["--out", SCRATCH + "/pond"] if folder else [])
        b = [baseline, source]
        b_out = SCRATCH + "/baseline.out" if folder else None
        run(a), run(b, b_out)
        pa, pb, readings = [], [], []
        for _ in range(runs):
            before = handoff(probe) if probe else 0.0
            pa.append(run(a))
            after = handoff(probe) if probe else 0.0
            readings.append(max(before, after))
            lowest = min(lowest, before, after)
            pb.append(run(b, b_out))
        ratios = [x[0] / y[0] for x, y in zip(pa, pb)]
        med = lambda rows, i: statistics.median(r[i] for r in rows)
        frm, to = pair.split(":")
        print(f"| {frm}→{to} | {os.path.basename(source)} | {med(pa, 0):.3f} | {med(pa, 1):.3f} "
              f"| {max(r[2] for r in pa):.1f} | {med(pb, 0):.3f} | {med(pb, 1):.3f} "
              f"| {max(r[2] for r in pb):.1f} | **{statistics.median(ratios):.2f}** "
              f"({min(ratios):.2f}-{max(ratios):.2f}) |"
              + (f" {sum(r > 1.5 * lowest for r in readings)}/{runs} |" if probe else ""),
              flush=True)


if __name__ == "__main__":
    main()
