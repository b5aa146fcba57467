#!/usr/bin/env bash
# Search latency at 1M messages (a benchmark, not a test): a corpus whose text is drawn from real
# session text (../shared/fixtures and the LoCoMo file, by ../shared/searchbench/gen_search_corpus.py),
# 300 queries of 1-3 words (half with a project filter), synced and indexed by pond.
#   - warm: every query through the pond_search handler in one process holding the store open,
#     as the server does (search_bench; 3 timed passes after a warm-up), with its peak RSS;
#   - cold: `pond search` as a new process per query, against ripgrep over the same files.
#
# usage: scripts/search-benchmarks/latency.sh WORKDIR [MESSAGES]     (default 1000000)
# Needs: python3, ripgrep (rg), /usr/bin/time; makes a release build of pond and search_bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=../shared/searchbench
work=${1:?usage: latency.sh WORKDIR [MESSAGES]}
n=${2:-1000000}
command -v rg >/dev/null || { echo "latency.sh: ripgrep (rg) is needed for the baseline" >&2; exit 2; }
mkdir -p "$work"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pond/target}"
# A fresh machine has no protoc: the README commands' own way to get one (scripts/lib.sh).
source scripts/lib.sh
pond_ensure_protoc
# --bin pond too: with --example alone cargo builds only the example.
cargo build --release --locked -p pond -p pond-server --example search_bench --bin pond >&2
bin="$CARGO_TARGET_DIR/release"

if [ ! -d "$work/corpus/projects" ]; then
  python3 "$bench/gen_search_corpus.py" ../shared/fixtures "$bench/locomo-dev.json" "$work/corpus" "$n" >&2
fi
[ -f "$work/queries.jsonl" ] || python3 scripts/search-benchmarks/latency_queries.py "$work/corpus" 300 > "$work/queries.jsonl"
if [ ! -d "$work/store" ]; then
  /usr/bin/time -v "$bin/pond" sync --data "$work/store" --source "claude-code=$work/corpus/projects" --json \
    > "$work/sync.json" 2> "$work/sync.time"
fi
"$bin/pond" status --data "$work/store"
echo "== warm: pond_search in one process, store held open (3 passes after a warm-up)"
/usr/bin/time -v "$bin/examples/search_bench" "$work/store" "$work/queries.jsonl" --runs 3 2> "$work/warm.err" || true
grep -E "^(all|with|no) |Maximum resident|Elapsed" "$work/warm.err"
echo "== cold: one process per query, against ripgrep over the same files"
python3 scripts/search-benchmarks/latency.py "$bin/pond" "$work/store" "$work/corpus" "$work/queries.jsonl"
