#!/usr/bin/env python3
"""Writes a synthetic Codex rollout (G2 envelope format, as Codex 0.10x-0.16x writes it) of at least
SIZE_MB megabytes to stdout, for the convert benchmark (docs/benchmarks.md).

    scripts/gen-codex-rollout.py 200 > /tmp/rollout-200mb.jsonl

Each turn is what real rollouts hold: a turn_context, a user message (and its event_msg echo),
reasoning with encrypted content, a function call with JSON-string arguments and its output, an
assistant message, and token counts. Deterministic: the same size gives the same bytes.
"""
import json
import random
import sys
import uuid

def main():
    size_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 200
    target = int(size_mb * 1_000_000)
    rng = random.Random(42)
    sid = "019c8a4c-ed82-79a1-aa28-7738fc5ab61a"
    words = ("the parser reads each record and maps it onto a canonical message while keeping every "
             "field so a native write gives back equal values for tool calls reasoning and results").split()
    out = sys.stdout
    written = 0
    second = 0

    def ts():
        nonlocal second
        second += 1
        h, rem = divmod(second, 3600)
        m, s = divmod(rem, 60)
        return f"2026-01-{1 + h // 24:02d}T{h % 24:02d}:{m:02d}:{s:02d}.{second % 1000:03d}Z"

    def emit(kind, payload):
        nonlocal written
        line = json.dumps({"timestamp": ts(), "type": kind, "payload": payload}, separators=(",", ":"))
        out.write(line)
        out.write("\n")
        written += len(line) + 1

    def text(n):
        return " ".join(rng.choice(words) for _ in range(n))

    emit("session_meta", {"id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/app",
                          "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli",
                          "model_provider": "openai", "base_instructions": {"text": text(200)},
                          "git": {"commit_hash": "1cdfa7b17410e00cddbb7a4347336af2c6f80ee0", "branch": "main"}})
    turn = 0
    while written < target:
        turn += 1
        turn_id = str(uuid.UUID(int=rng.getrandbits(128)))
        call_id = f"call_{turn:08d}"
        emit("turn_context", {"turn_id": turn_id, "cwd": "/work/app", "approval_policy": "on-request",
                              "sandbox_policy": {"type": "workspace-write", "network_access": False},
                              "model": "gpt-5.3-codex", "effort": "high", "summary": "auto"})
        prompt = text(rng.randint(10, 80))
        emit("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": prompt}]})
        emit("event_msg", {"type": "user_message", "message": prompt, "images": [], "local_images": []})
        emit("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": text(30)}],
                               "content": None, "encrypted_content": "gAAAAB" + "x" * rng.randint(200, 2000)})
        emit("response_item", {"type": "function_call", "name": "shell", "call_id": call_id,
                               "arguments": json.dumps({"command": ["bash", "-lc", f"rg -n parser src/{turn}.rs"],
                                                        "workdir": "/work/app"})})
        emit("response_item", {"type": "function_call_output", "call_id": call_id,
                               "output": json.dumps({"output": text(rng.randint(50, 1500)),
                                                     "metadata": {"exit_code": 0, "duration_seconds": 0.1}})})
        emit("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": text(rng.randint(20, 300))}]})
        emit("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": turn * 1000,
                                                                               "output_tokens": turn * 100}}})

if __name__ == "__main__":
    main()
