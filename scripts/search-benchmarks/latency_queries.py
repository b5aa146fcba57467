#!/usr/bin/env python3
"""latency_queries.py - the search latency benchmark's queries, drawn from a corpus written by
../shared/searchbench/gen_search_corpus.py: N queries of 1 to 3 words (5+ letters) taken from
random messages of the corpus, each with its message's project; every other query is marked to
run with that project as its filter.

usage: latency_queries.py CORPUS_DIR [N] [SEED] > queries.jsonl
"""
import json, os, random, re, sys

corpus = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
files = sorted(os.path.join(r, f) for r, _, fs in os.walk(os.path.join(corpus, "projects"))
               for f in fs if f.endswith(".jsonl"))
out = []
while len(out) < n:
    lines = open(rng.choice(files), encoding="utf-8").read().splitlines()
    rec = json.loads(rng.choice(lines))
    c = rec["message"]["content"]
    text = c if isinstance(c, str) else " ".join(b.get("text", "") for b in c if isinstance(b, dict))
    words = re.findall(r"[^\W\d_][^\W_]{4,}", text)
    if not words:
        continue
    k = min(len(words), rng.randint(1, 3))
    out.append({"qid": f"q{len(out):03d}", "query": " ".join(rng.sample(words, k)),
                "project": rec["cwd"], "filter": len(out) % 2 == 1})
for q in out:
    print(json.dumps(q, ensure_ascii=False))
