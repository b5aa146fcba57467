#!/usr/bin/env python3
"""Cuts one large `opencode export` document into sessions of about SIZE megabytes each, for the
benchmarks (docs/benchmarks.md): an opencode session is one JSON document, which a reader (pond's,
opencode's own) takes whole, so a folder of sessions of a realistic size is what a conversion of
someone's opencode history reads.

    scripts/split-opencode-export.py BIG.json 3 OUTDIR

Session k (from 1) keeps the messages that fall in its share, in order, with `-k` appended to its
session id (in `info.id` and every `sessionID`), its `time.created` that of its first message.
Written with two-space indents as `opencode export` writes. Deterministic.
"""
import json
import os
import sys


def main():
    path, size, out = sys.argv[1], float(sys.argv[2]) * 1_000_000, sys.argv[3]
    doc = json.load(open(path, encoding="utf-8"))
    info, messages = doc["info"], doc["messages"]
    os.makedirs(out, exist_ok=True)
    k, share, held = 0, [], 0
    for i, m in enumerate(messages):
        share.append(m)
        held += len(json.dumps(m, ensure_ascii=False))
        if held >= size or i == len(messages) - 1:
            k += 1
            sid = f"{info['id']}-{k}"
            for msg in share:
                msg["info"]["sessionID"] = sid
                for p in msg.get("parts", []):
                    if "sessionID" in p:
                        p["sessionID"] = sid
            first = share[0]["info"].get("time", {}).get("created")
            head = dict(info, id=sid)
            if first is not None:
                head["time"] = dict(info.get("time", {}), created=first)
            with open(os.path.join(out, f"{sid}.json"), "w", encoding="utf-8") as f:
                json.dump({"info": head, "messages": share}, f, indent=2, ensure_ascii=False)
                f.write("\n")
            share, held = [], 0


if __name__ == "__main__":
    main()
