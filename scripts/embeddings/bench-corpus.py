#!/usr/bin/env python3
"""The embedding benchmark's input (docs/benchmarks.md, "Embedding throughput"): the
conversational text of the real sessions in ../shared/fixtures, one string per user or assistant
message as pond's search_text holds it (text parts only: no tool calls, tool results, reasoning,
or harness-injected blocks such as <system-reminder> or <environment_context>, nor the
fixtures' [REDACTED_TEXT ...] placeholders), deduplicated,
in file order.

    python3 scripts/embeddings/bench-corpus.py ../shared/fixtures > /tmp/embed-corpus.json
"""
import json
import pathlib
import sys


def texts_of(content):
    if isinstance(content, str):
        return [content]
    out = []
    for part in content or []:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            out.append(part.get("text") or "")
    return out


def injected(t):
    s = t.lstrip()
    # Harness tags, injected instructions, and the fixtures' redaction placeholders.
    return s.startswith(("<", "# AGENTS.md", "Caveat:", "[REDACTED"))


def messages(path):
    for line in path.open(encoding="utf-8", errors="replace"):
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(r, dict):
            continue
        # Claude Code: {"type": "user"|"assistant", "message": {"content": ...}}
        if r.get("type") in ("user", "assistant") and isinstance(r.get("message"), dict):
            yield texts_of(r["message"].get("content"))
        # Codex: {"type": "response_item", "payload": {"type": "message", "role", "content"}}
        elif r.get("type") == "response_item" and isinstance(r.get("payload"), dict):
            p = r["payload"]
            if p.get("type") == "message" and p.get("role") in ("user", "assistant"):
                yield texts_of(p.get("content"))
        # pi: {"type": "message", "message": {"role", "content"}}
        elif r.get("type") == "message" and isinstance(r.get("message"), dict):
            m = r["message"]
            if m.get("role") in ("user", "assistant"):
                yield texts_of(m.get("content"))


root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/fixtures")
seen, corpus = set(), []
for path in sorted(root.rglob("*.jsonl")):
    for parts in messages(path):
        text = "".join(t for t in parts if not injected(t)).strip()
        if text and text not in seen:
            seen.add(text)
            corpus.append(text)
json.dump(corpus, sys.stdout, ensure_ascii=False)
n = len(corpus)
lens = sorted(len(t) for t in corpus)
print(f"{n} texts, mean {sum(lens) / n:.0f} chars, median {lens[n // 2]}, p90 {lens[n * 9 // 10]}, "
      f"max {lens[-1]}", file=sys.stderr)
