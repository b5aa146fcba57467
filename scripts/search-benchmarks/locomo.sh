#!/usr/bin/env bash
# Search quality on real, labelled data: the half of LoCoMo in ../shared/searchbench.
#
# Converts the conversations to Claude Code session files, syncs them into a fresh store (with
# update-indexes), asks every question through pond_search with its conversation's project as
# the filter, and scores the run beside the reference BM25 run (score_run.py).
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
