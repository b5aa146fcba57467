#!/usr/bin/env python3
"""simulate_fusion.py - choose the fixed per-arm weights of pond's hybrid search (spec 8).

Replays pond's fusion (store/src/search/fusion.rs) over what each arm returned for every
question of the searchbench data, recorded by `search_bench --arms ARMS.jsonl`:
each arm's session scores are divided by the best session score it returned (0 when that is not
positive), a session missing from an arm scores 0 there, and the fused score is the weighted sum.
`--norm minmax` replays the min-max normalization fusion.rs used before (to compare). For every full-text weight w on a grid (the vector arm gets 1 - w), the fused
rankings are scored with the benchmark's own metrics (locomo_bench.session_metrics).

The weight is chosen by the mean of Hit@1, R@5 and NDCG@5. So that the reported quality is not
measured on the questions the weight was chosen on, the choice is also made leave-one-
conversation-out: for each conversation, the weight that is best on the other four is scored on
it; the pooled result is the held-out estimate.

usage: simulate_fusion.py QUERIES.jsonl ARMS.jsonl [--step 0.05] [--norm max|minmax] [--json]
  QUERIES.jsonl: convert_locomo.py's queries (gold labels); ARMS.jsonl: search_bench --arms.
Needs ../shared/searchbench (locomo_bench.py) beside the repository.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "shared", "searchbench"))
from locomo_bench import session_metrics  # noqa: E402

KEYS = ("hit@1", "recall@3", "recall@5", "mrr", "ndcg@5")


NORM = "max"


def normalized(sessions):
    """{session: score in [0, 1]} as fusion.rs normalizes an arm."""
    if not sessions:
        return {}
    scores = [s for _, s in sessions]
    lo, hi = min(scores), max(scores)
    out = {}
    for sid, s in sessions:
        if NORM == "minmax":
            v = (s - lo) / (hi - lo) if hi > lo else 1.0
        else:
            v = s / hi if hi > 0 else 0.0
        out.setdefault(sid, min(1.0, max(0.0, v)))
    return out


def fuse(arms, w_text, limit=100):
    weights = {"full_text": w_text, "full_text (scan: no index yet)": w_text, "vector": 1.0 - w_text}
    total = {}
    for name, sessions in arms.items():
        for sid, v in normalized(sessions).items():
            total[sid] = total.get(sid, 0.0) + weights[name] * v
    ranked = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))
    return [sid for sid, _ in ranked[:limit]]


def score(queries, arms_by_qid, w_text, only=None):
    rows = []
    for q in queries:
        conv = q["qid"].split("/")[0]
        if only is not None and conv not in only:
            continue
        label = dict(zip(q["gold_session_ids"], q["gold_sessions"]))
        ranked = [label.get(s, s) for s in fuse(arms_by_qid.get(q["qid"], {}), w_text)]
        rows.append(session_metrics(ranked, set(q["gold_sessions"])))
    n = len(rows)
    return {k: sum(r[k] for r in rows) / n for k in KEYS}, n


def objective(m):
    return (m["hit@1"] + m["recall@5"] + m["ndcg@5"]) / 3


def main():
    qpath, apath = sys.argv[1], sys.argv[2]
    step = float(sys.argv[sys.argv.index("--step") + 1]) if "--step" in sys.argv else 0.05
    as_json = "--json" in sys.argv
    global NORM
    NORM = sys.argv[sys.argv.index("--norm") + 1] if "--norm" in sys.argv else "max"
    if NORM not in ("max", "minmax"):
        sys.exit(f"--norm {NORM}: max or minmax")
    queries = [json.loads(l) for l in open(qpath, encoding="utf-8")]
    arms_by_qid = {}
    for l in open(apath, encoding="utf-8"):
        r = json.loads(l)
        arms_by_qid[r["qid"]] = r["arms"]
    hybrid = sum(1 for a in arms_by_qid.values() if "vector" in a)
    grid = [round(i * step, 4) for i in range(int(round(1 / step)) + 1)]
    table = []
    for w in grid:
        m, n = score(queries, arms_by_qid, w)
        table.append((w, m))
    best_w, best = max(table, key=lambda t: (objective(t[1]), t[0]))
    text_only = dict(table)[1.0]
    vector_only = dict(table)[0.0]

    # Leave one conversation out: the weight chosen on four conversations, scored on the fifth.
    convs = sorted({q["qid"].split("/")[0] for q in queries})
    held = {k: 0.0 for k in KEYS}
    held_n = 0
    chosen = {}
    for c in convs:
        rest = set(convs) - {c}
        w_c = max(grid, key=lambda w: (objective(score(queries, arms_by_qid, w, rest)[0]), w))
        chosen[c] = w_c
        m, n = score(queries, arms_by_qid, w_c, {c})
        for k in KEYS:
            held[k] += m[k] * n
        held_n += n
    held = {k: v / held_n for k, v in held.items()}

    if as_json:
        print(json.dumps({"questions": len(queries), "hybrid_questions": hybrid,
                          "grid": [{"full_text_weight": w, **m} for w, m in table],
                          "best": {"full_text_weight": best_w, **best},
                          "leave_one_conversation_out": {"chosen": chosen, **held}}, indent=1))
        return
    print(f"{len(queries)} questions, {hybrid} with both arms")
    print(f"{'full_text weight':>16s}  Hit@1  R@3    R@5    MRR    NDCG@5")
    for w, m in table:
        mark = "  <- best" if w == best_w else ""
        print(f"{w:16.2f}  " + " ".join(f"{m[k]:.4f}" for k in KEYS) + mark)
    print(f"full-text arm alone (w=1):   " + " ".join(f"{text_only[k]:.4f}" for k in KEYS))
    print(f"vector arm alone (w=0):      " + " ".join(f"{vector_only[k]:.4f}" for k in KEYS))
    print(f"chosen: full_text {best_w:.2f}, vector {1 - best_w:.2f}")
    print("leave one conversation out (weight chosen on the other four): "
          + ", ".join(f"{c} {w:.2f}" for c, w in chosen.items()))
    print(f"held-out estimate:           " + " ".join(f"{held[k]:.4f}" for k in KEYS))


if __name__ == "__main__":
    main()
