#!/usr/bin/env python3
"""The IVF_PQ's recall@k against the flat scan, from two `search_bench --arms` runs over the same
queries: one as pond searches (the index, default nprobes) and one with `--exact-vectors`.

Recall is over the vector arm's sessions (what the arm hands the fusion): for each query, the
share of the exact arm's first k sessions that the indexed arm also ranks in its first k.

usage: vector_recall.py INDEXED.arms.jsonl EXACT.arms.jsonl [K]     (K default 10)
"""
import json
import sys


def arms(path):
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
            vector = row.get("arms", {}).get("vector")
            if vector is None:
                sys.exit(f"{path}:{n}: query {row.get('qid')} has no vector arm (mode {row.get('mode')})")
            out[row["qid"]] = [s for s, _ in vector]
    return out


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    k = int(sys.argv[3]) if len(sys.argv) == 4 else 10
    indexed, exact = arms(sys.argv[1]), arms(sys.argv[2])
    if indexed.keys() != exact.keys():
        sys.exit("the two runs did not ask the same queries")
    recalls = []
    for qid, truth in exact.items():
        truth = truth[:k]
        if not truth:
            continue
        got = set(indexed[qid][:k])
        recalls.append(sum(s in got for s in truth) / len(truth))
    if not recalls:
        sys.exit("no query returned a vector result")
    recalls.sort()
    mean = sum(recalls) / len(recalls)
    print(f"vector arm recall@{k} of the index against the flat scan: mean {mean:.4f} over "
          f"{len(recalls)} queries; min {recalls[0]:.2f}, p10 {recalls[len(recalls) // 10]:.2f}, "
          f"{sum(r == 1.0 for r in recalls)} queries exact")


if __name__ == "__main__":
    main()
