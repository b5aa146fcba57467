#!/usr/bin/env bash
# Search quality on real, labelled data: the half of LoCoMo in ../shared/searchbench.
#
# Converts the conversations to Claude Code session files, syncs them into a fresh store (with
# update-indexes), asks every question through pond_search with its conversation's project as
# the filter, and scores the run beside the reference BM25 run (score_run.py).
#
# With POND_BENCH_MODEL=NAME (e.g. all-minilm-l6-v2) it also runs hybrid search: the model is
# installed into POND_MODELS (default ~/.cache/pond/models) unless there, the embed stage runs,
# every question is asked again as a pond with `[embedding] model = NAME` asks it (run-hybrid),
# each arm's results are recorded (arms.jsonl) and simulate_fusion.py replays the fusion over
# them for every weight on a grid, with a leave-one-conversation-out estimate.
#
# usage: scripts/search-benchmarks/locomo.sh [WORKDIR]      (default: a new temp dir)
# Needs: python3, and a release build of pond and of the search_bench example, which it makes.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=../shared/searchbench
[ -d "$bench" ] || { echo "locomo.sh: $bench is missing" >&2; exit 2; }
work=${1:-$(mktemp -d)}
mkdir -p "$work"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pond/target}"
# A fresh machine has no protoc: the README commands' own way to get one (scripts/lib.sh).
source scripts/lib.sh
pond_ensure_protoc
cargo build --release --locked -p pond -p pond-server --example search_bench --bin pond >&2
bin="$CARGO_TARGET_DIR/release"

python3 "$bench/convert_locomo.py" "$bench/locomo-dev.json" "$work/locomo" >&2
rm -rf "$work/store"
"$bin/pond" sync --data "$work/store" --source "claude-code=$work/locomo/projects" --json > "$work/sync.json"
# Every question, with its conversation's project as the filter.
"$bin/examples/search_bench" "$work/store" "$work/locomo/queries.jsonl" --runs 1 --limit 100 \
  --out "$work/run-pond.jsonl"
(cd "$bench" && python3 score_run.py "$work/locomo/queries.jsonl" "$work/run-pond.jsonl" \
  --baseline run-bm25-reference-dev.jsonl)

model=${POND_BENCH_MODEL:-}
[ -n "$model" ] || exit 0
models=${POND_MODELS:-$HOME/.cache/pond/models}
[ -f "$models/$model/pond-model.json" ] || "$bin/pond" models install "$model" --models "$models" >&2
printf '[embedding]\nmodel = "%s"\nmodels = "%s"\n' "$model" "$models" > "$work/config.toml"
/usr/bin/time -v env POND_CONFIG="$work/config.toml" "$bin/pond" sync --data "$work/store" \
  --only embed --json > "$work/embed.json" 2> "$work/embed.time"
grep -E "Elapsed|Maximum resident" "$work/embed.time" >&2
"$bin/examples/search_bench" "$work/store" "$work/locomo/queries.jsonl" --runs 1 --limit 100 \
  --model "$model" --models "$models" --out "$work/run-hybrid.jsonl" --arms "$work/arms.jsonl"
echo "== hybrid ($model), the weights in store/src/search/fusion.rs"
(cd "$bench" && python3 score_run.py "$work/locomo/queries.jsonl" "$work/run-hybrid.jsonl" \
  --baseline run-bm25-reference-dev.jsonl)
echo "== hybrid against pond's full-text arm"
(cd "$bench" && python3 score_run.py "$work/locomo/queries.jsonl" "$work/run-hybrid.jsonl" \
  --baseline "$work/run-pond.jsonl" | grep paired)
echo "== fusion weights replayed over both arms"
python3 scripts/search-benchmarks/simulate_fusion.py "$work/locomo/queries.jsonl" "$work/arms.jsonl"
