#!/usr/bin/env bash
# Hybrid search latency at 1M messages with the IVF_PQ (a benchmark, not a test), on the store
# latency.sh builds (run latency.sh and load.sh first: this adds vectors to WORKDIR/store).
# The vectors are synthetic: a tiny random BERT of the store's width (server/examples/
# tiny_model.rs) embeds every message through the real embed stage, so the stage's throughput
# and peak RSS at this size are measured too (for the tiny model: a real model's throughput is
# docs/benchmarks.md, "Embedding throughput"); update-indexes trains the IVF_PQ; then every
# query runs through pond_search as a pond with the tiny model configured (3 timed passes).
#
# Last, the IVF_PQ's recall@10 against the flat scan (vector_recall.py) on 100 of the queries.
#
# usage: scripts/search-benchmarks/hybrid-latency.sh WORKDIR
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:?usage: hybrid-latency.sh WORKDIR}
[ -d "$work/store" ] && [ -f "$work/queries.jsonl" ] || { echo "hybrid-latency.sh: run latency.sh $work first" >&2; exit 2; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pond/target}"
# A fresh machine has no protoc: the README commands' own way to get one (scripts/lib.sh).
source scripts/lib.sh
pond_ensure_protoc
cargo build --release --locked -p pond -p pond-server --example search_bench --example tiny_model --bin pond >&2
bin="$CARGO_TARGET_DIR/release"
model=tiny-384
[ -f "$work/models/$model/pond-model.json" ] || "$bin/examples/tiny_model" "$work/models" "$model" >&2
printf '[embedding]\nmodel = "%s"\nmodels = "%s"\n' "$model" "$work/models" > "$work/config.toml"
export POND_CONFIG="$work/config.toml"
echo "== embed stage (tiny model) over every message; messages.lance before: $(du -sh "$work/store/messages.lance" | cut -f1)"
/usr/bin/time -v "$bin/pond" sync --data "$work/store" --only embed --json > "$work/embed.json" 2> "$work/embed.time"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["embed"]; print(f"embedded {e[\"embedded\"]} of {e[\"backlog\"]} in {e[\"seconds\"]:.0f} s = {e[\"embedded\"]/max(e[\"seconds\"],1e-9):,.0f} msg/s, {e[\"commits\"]} commits")' "$work/embed.json"
grep -E "Elapsed|Maximum resident" "$work/embed.time"
echo "messages.lance after: $(du -sh "$work/store/messages.lance" | cut -f1) (every version kept)"
echo "== update-indexes: the IVF_PQ"
/usr/bin/time -v "$bin/pond" sync --data "$work/store" --only update-indexes --json > "$work/ivf.json" 2> "$work/ivf.time"
python3 -c 'import json,sys; [print(u["index"], u["action"], round(u["seconds"],1), "s") for u in json.load(open(sys.argv[1]))["update_indexes"]["indexes"]]' "$work/ivf.json"
grep -E "Elapsed|Maximum resident" "$work/ivf.time"
echo "== warm hybrid: pond_search in one process, store held open (3 passes after a warm-up)"
/usr/bin/time -v "$bin/examples/search_bench" "$work/store" "$work/queries.jsonl" --runs 3 \
  --model "$model" --models "$work/models" 2> "$work/hybrid.err" || true
grep -E "^(all|with|no) |Maximum resident|Elapsed" "$work/hybrid.err"
echo "== IVF_PQ recall@10 against the flat scan: the vector arm's sessions, the first 100 queries"
head -100 "$work/queries.jsonl" > "$work/queries-100.jsonl"
for mode in ivf flat; do
  extra=(); [ $mode = flat ] && extra=(--exact-vectors)
  "$bin/examples/search_bench" "$work/store" "$work/queries-100.jsonl" --runs 0 \
    --model "$model" --models "$work/models" --arms "$work/arms-$mode.jsonl" "${extra[@]}" 2> "$work/recall-$mode.err" || true
done
python3 scripts/search-benchmarks/vector_recall.py "$work/arms-ivf.jsonl" "$work/arms-flat.jsonl"
