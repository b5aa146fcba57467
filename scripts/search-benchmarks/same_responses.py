#!/usr/bin/env python3
"""What a `pond serve` answers to every benchmark query, for comparing two builds.

usage: same_responses.py POND_BIN STORE QUERIES.jsonl OUT.jsonl

Serves STORE with POND_BIN on 127.0.0.1 (a free port), posts each query of QUERIES (latency.sh's
queries.jsonl: `limit` 10, the project filter where `filter` is true, as load.sh's requests) to
`/v1/search` one at a time, and writes each response body as one line of OUT with its keys
sorted. Two builds answered alike when `cmp` finds their OUT files equal: a change meant to make
searches cheaper is checked this way before it is timed (docs/benchmarks.md, issue 19).
"""
import json
import re
import subprocess
import sys
import urllib.request


def main() -> None:
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[2])
    pond, store, queries, out = sys.argv[1:]
    server = subprocess.Popen(
        [pond, "serve", "--data", store, "--bind", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        addr = None
        for line in server.stderr:
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                addr = m.group(1)
                break
        if addr is None:
            sys.exit(f"same_responses.py: {pond} serve exited before listening")
        with open(out, "w") as f, open(queries) as qs:
            for n, line in enumerate(qs, 1):
                q = json.loads(line)
                body = {"protocol_version": 1, "query": q["query"], "limit": 10}
                if q.get("filter"):
                    body["project"] = q["project"]
                request = urllib.request.Request(
                    addr + "/v1/search",
                    data=json.dumps(body).encode(),
                    headers={"Content-Type": "application/json"},
                )
                try:
                    with urllib.request.urlopen(request) as r:
                        answer = json.loads(r.read())
                except urllib.error.HTTPError as e:
                    sys.exit(f"same_responses.py: {queries}:{n}: HTTP {e.code}: {e.read()[:500]!r}")
                f.write(json.dumps(answer, sort_keys=True) + "\n")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
