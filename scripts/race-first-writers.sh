#!/usr/bin/env bash
# Writers racing to create a store's tables (docs/decisions.md, "Creating a table another writer
# may be creating"): three `pond sync` processes started at once on an empty store, N times,
# each store's row counts compared with one sync of the same sources alone. Prints every race
# whose counts differ and the number of them.
#
#   scripts/race-first-writers.sh [N=200] [POND=~/.cache/pond/target/debug/pond] [ROOT]
#
# ROOT: where the stores go, a directory (default: a fresh temporary one) or an object-store
# prefix such as s3://pond/race (its settings from the environment, as pond reads them; each
# store a prefix of its own under it, left there).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-200}"
pond="${2:-$HOME/.cache/pond/target/debug/pond}"
f="$PWD/../shared/fixtures"
sources=("pi=$f/pi/git-ai" "claude-code=$f/claude-code/claude-code-viewer" "pi=$f/pi/harness-generated")
work="${3:-}"
if [ -z "$work" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
remove() { case "$1" in *://*) ;; *) rm -rf "$1" ;; esac; }
counts() {
  "$pond" status --data "$1" --json | python3 -c 'import json, sys
print(" ".join(t["table"] + "=" + str(t["rows"]) for t in json.load(sys.stdin)["tables"]))'
}
args=()
for s in "${sources[@]}"; do args+=(--source "$s"); done
"$pond" sync --only import "${args[@]}" --data "$work/alone" >/dev/null 2>&1 || true
want="$(counts "$work/alone")"
echo "alone: $want"
lost=0
for i in $(seq 1 "$n"); do
  d="$work/race$i"
  for s in "${sources[@]}"; do
    "$pond" sync --only import --source "$s" --data "$d" >/dev/null 2>&1 &
  done
  wait || true
  got="$(counts "$d")"
  if [ "$got" != "$want" ]; then
    echo "race $i: $got"
    lost=$((lost + 1))
  fi
  remove "$d"
done
echo "races that lost rows: $lost of $n"
