#!/usr/bin/env python3
"""A large session derived from a real one, for the benchmarks (docs/benchmarks.md): the real
file's records repeated until the output holds at least SIZE megabytes, so its lines are of every
kind, shape and size the real file holds (not only messages).

    scripts/grow-session.py REAL.jsonl 200 > /tmp/big.jsonl

The first record is written once when it is a header (a Codex `session_meta` or bare G0 header,
a pi `session` header); every other record is repeated. Repetition k (from 1) gets ids of its
own (every string under an id-like key gets `-k` appended, so tool calls still pair with their
results and uuids stay unique; `sessionId` and the header's id are kept, so it stays one
session), timestamps moved past the end of repetition k-1, and Codex `ordinal`s moved past the
last one. A pi v3 entry with no parent (the root of the file's tree) gets the last entry of
repetition k-1 as its parent, so the grown file stays one line of entries, as the real one is,
instead of a tree whose every repetition but the last is a side branch. Deterministic: the same
input and size give the same bytes.
"""
import json
import re
import sys
from datetime import datetime, timedelta

ID_KEYS = {"uuid", "parentUuid", "leafUuid", "logicalParentUuid", "id", "tool_use_id",
           "toolUseID", "parentToolUseID", "sourceToolAssistantUUID", "call_id", "requestId",
           "promptId", "messageId", "turn_id", "item_id", "response_id", "parentId",
           "toolCallId"}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def parse_time(text):
    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")


def shift_time(text, delta):
    if not isinstance(text, str) or not ISO.match(text):
        return text
    frac = text[19:-1]
    return (parse_time(text) + delta).strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def rewrite(value, k, delta, key=None):
    if isinstance(value, dict):
        return {name: rewrite(v, k, delta, name) for name, v in value.items()}
    if isinstance(value, list):
        return [rewrite(v, k, delta) for v in value]
    if key in ID_KEYS and isinstance(value, str) and value:
        return f"{value}-{k}"
    if key == "timestamp":
        return shift_time(value, delta)
    return value


def is_header(record):
    return (record.get("type") == "session_meta"
            or (record.get("type") == "session" and "id" in record)
            or ("id" in record and "timestamp" in record and "type" not in record
                and "record_type" not in record))


def main():
    path, size = sys.argv[1], float(sys.argv[2]) * 1_000_000
    records = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
    header = records.pop(0) if records and is_header(records[0]) else None
    times = [parse_time(r["timestamp"]) for r in records
             if isinstance(r.get("timestamp"), str) and ISO.match(r["timestamp"])]
    span = (max(times) - min(times) + timedelta(seconds=1)) if times else timedelta(seconds=1)
    ordinals = [r["ordinal"] for r in records if isinstance(r.get("ordinal"), int)]
    ordinal_span = (max(ordinals) + 1) if ordinals else 0
    out = sys.stdout
    written = 0
    if header is not None:
        line = json.dumps(header, separators=(",", ":"), ensure_ascii=False)
        out.write(line + "\n")
        written += len(line.encode()) + 1
    k = 0
    last_entry = None
    while written < size:
        for record in records:
            r = record if k == 0 else rewrite(record, k, span * k)
            if k and isinstance(r.get("ordinal"), int):
                r["ordinal"] += ordinal_span * k
            if "parentId" in r and "id" in r:
                if r["parentId"] is None and last_entry is not None:
                    r = dict(r, parentId=last_entry)
                last_entry = r["id"]
            line = json.dumps(r, separators=(",", ":"), ensure_ascii=False)
            out.write(line + "\n")
            written += len(line.encode()) + 1
        k += 1


if __name__ == "__main__":
    main()
