#!/usr/bin/env bash
# Seeds each fuzz target's corpus (fuzz/corpus/<target>, not committed) from the shared fixtures,
# the repository's own fixtures, and the committed regression inputs. Usage: fuzz/seed.sh
set -euo pipefail
cd "$(dirname "$0")"
shared=../../shared/fixtures
[ -d "$shared" ] || { echo "fuzz/seed.sh: $shared is missing" >&2; exit 2; }
seed() { # target file...
  local dir=corpus/$1; shift
  mkdir -p "$dir"
  for f in "$@"; do
    cp -- "$f" "$dir/$(sha1sum "$f" | cut -c1-16)"
  done
}
mapfile -t claude < <(find "$shared/claude-code" ../fixtures/claude-code -name '*.jsonl' -size -2M 2>/dev/null)
seed claude_code "${claude[@]}"
mapfile -t pi < <(find "$shared/pi" ../fixtures/pi -name '*.jsonl' -size -2M 2>/dev/null)
seed pi "${pi[@]}"
mapfile -t export < <(find "$shared/opencode" ../fixtures/opencode -name '*.json' -size -2M \
  ! -path '*storage*' ! -path '*legacy*' 2>/dev/null)
seed opencode_export "${export[@]}"
mapfile -t dbs < <(find "$shared/opencode" -name '*.db' -size -4M 2>/dev/null)
seed opencode_db "${dbs[@]}"
# Codex: the first byte picks plain (0), raw .zst (1) or compressed (2).
mkdir -p corpus/codex
while IFS= read -r f; do
  h=$(sha1sum "$f" | cut -c1-16)
  { printf '\0'; cat "$f"; } > "corpus/codex/p$h"
  { printf '\2'; cat "$f"; } > "corpus/codex/c$h"
done < <(find "$shared/codex" ../fixtures/codex -name '*.jsonl' -size -2M 2>/dev/null)
# Wire events: the canonical examples, each session log turned into its wire event list.
mkdir -p corpus/wire_events
for f in ../fixtures/canonical/*.json; do
  python3 - "$f" > "corpus/wire_events/$(basename "$f" .json)" <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
events = [dict(kind="session", **log["session"])]
for m in log["messages"]:
    head = {k: m[k] for k in ("id", "session_id", "role", "timestamp", "options") if k in m}
    if m["role"] == "system":
        head["content"] = m.get("content", "")
    events.append(dict(kind="message", **head))
    if m["role"] != "system":
        events.extend(dict(kind="part", **p) for p in m.get("content", []))
json.dump(events, sys.stdout)
PY
done
# Archives: small valid containers as `pond export` lays them out (manifest first, three tables,
# every file listed with its length and SHA-256), one with an extra file per table, and the same
# cut short; the fuzzer mutates from there.
mkdir -p corpus/archive
python3 - corpus/archive <<'PY'
import hashlib, io, json, sys, tarfile
out = sys.argv[1]
def archive(files_per_table, size):
    tables, blobs = [], []
    for t in ("sessions", "messages", "parts"):
        files = []
        for j in range(files_per_table):
            path = f"{t}.lance/data/{j}.lance" if j else f"{t}.lance/_versions/1.manifest"
            data = (f"{t}:{j};" * size).encode()
            files.append({"path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
            blobs.append((path, data))
        tables.append({"name": t, "rows": files_per_table, "files": files})
    manifest = {"format": "pond-archive", "format_version": 1, "pond_version": "0.1.0",
                "schema_version": 1, "created_at": "2026-11-25T00:00:00Z", "tables": tables}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path, data in [("manifest.json", json.dumps(manifest, indent=2).encode())] + blobs:
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
for name, data in [("one", archive(1, 20)), ("two", archive(2, 50))]:
    open(f"{out}/{name}", "wb").write(data)
    open(f"{out}/{name}-cut", "wb").write(data[: len(data) * 2 // 3])
PY
for t in corpus/*/; do
  [ -d regressions/"$(basename "$t")" ] && cp regressions/"$(basename "$t")"/* "$t" 2>/dev/null || true
done
ls corpus | while read -r t; do echo "$t: $(ls corpus/$t | wc -l) seeds"; done
