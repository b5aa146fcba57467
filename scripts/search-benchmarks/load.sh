#!/usr/bin/env bash
# HTTP load on /v1/search (a benchmark, not a test): a release `pond serve` on 127.0.0.1 over
# the 1M-message store latency.sh builds, wrk (Debian package) with 64 connections for 60 s,
# each request one of the 300 benchmark queries in turn (half with a project filter). Reports
# wrk's requests/s and latency distribution, the non-2xx count, and the server's peak RSS.
#
# usage: scripts/search-benchmarks/load.sh WORKDIR [CONNECTIONS] [SECONDS]
# POND_BIN=PATH runs that pond binary instead of building one; POND_CONCURRENCY=N serves with
# `--concurrency N` (default: as many as the connections).
# WORKDIR is latency.sh's (it needs WORKDIR/store and WORKDIR/queries.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:?usage: load.sh WORKDIR [CONNECTIONS] [SECONDS]}
conns=${2:-64}
secs=${3:-60}
concurrency=${POND_CONCURRENCY:-$conns}
command -v wrk >/dev/null || { echo "load.sh: wrk is needed (apt-get install wrk)" >&2; exit 2; }
[ -d "$work/store" ] && [ -f "$work/queries.jsonl" ] || { echo "load.sh: run latency.sh $work first" >&2; exit 2; }
if [ -n "${POND_BIN:-}" ]; then
  # A pond built before (an experiment's, or one kept beside the store): no build.
  bin=$POND_BIN
  [ -x "$bin" ] || { echo "load.sh: POND_BIN=$bin is not an executable file" >&2; exit 2; }
else
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/pond/target}"
  # A fresh machine has no protoc: the README commands' own way to get one (scripts/lib.sh).
  source scripts/lib.sh
  pond_ensure_protoc
  # The same selection as latency.sh: another one resolves features differently and rebuilds Lance.
  cargo build --release --locked -p pond -p pond-server --example search_bench --bin pond >&2
  bin="$CARGO_TARGET_DIR/release/pond"
fi

# The request bodies, one per query, as a Lua table wrk cycles through.
lua="$work/load.lua"
python3 - "$work/queries.jsonl" > "$lua" <<'PY'
import json, sys
bodies = []
for line in open(sys.argv[1]):
    q = json.loads(line)
    body = {"protocol_version": 1, "query": q["query"], "limit": 10}
    if q.get("filter"):
        body["project"] = q["project"]
    bodies.append(json.dumps(body))
print("local bodies = {")
for b in bodies:
    print("  " + json.dumps(b) + ",")
print("}")
print("""
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  return wrk.format(nil, "/v1/search", nil, bodies[(n % #bodies) + 1])
end
local non2xx = 0
response = function(status, headers, body)
  if status ~= 200 then non2xx = non2xx + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("requests %d, errors (socket) connect %d read %d write %d timeout %d, non-2xx %d\\n",
    summary.requests, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, summary.errors.status))
  for _, p in pairs({50, 90, 95, 99, 99.9}) do
    io.write(string.format("p%s %.1f ms\\n", p, latency:percentile(p) / 1000))
  end
end
""")
PY

log="$work/serve.log"
"$bin" serve --data "$work/store" --bind 127.0.0.1:0 --concurrency "$concurrency" 2> "$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q "listening on" "$log" && break; sleep 0.1; done
addr=$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' "$log" | head -1)
[ -n "$addr" ] || { cat "$log" >&2; exit 1; }
echo "== pond serve at $addr (pid $pid); a warm-up pass of every query"
wrk -t 1 -c 4 -d 10s -s "$lua" "$addr" > /dev/null
echo "== wrk: $conns connections, ${secs}s, server concurrency $concurrency"
wrk -t 2 -c "$conns" -d "${secs}s" --timeout 10s --latency -s "$lua" "$addr"
echo "== server peak RSS: $(grep VmHWM /proc/$pid/status | awk '{print $2/1024 " MiB"}')"
# The server's CPU since it started (warm-up included): user and system seconds.
echo "== server CPU: $(awk -v hz="$(getconf CLK_TCK)" '{print $14/hz " s user, " $15/hz " s system"}' /proc/$pid/stat)"
kill -TERM $pid; wait $pid || true
echo "== 5xx lines in the server log: $(grep -c ' 5[0-9][0-9] ' "$log" || true)"
