#!/usr/bin/env python3
"""Synthetic Codex rollouts (G2 envelope format, as Codex 0.10x-0.16x writes it) for the
benchmarks (docs/benchmarks.md).

    scripts/gen-codex-rollout.py 200 > /tmp/rollout-200mb.jsonl        # one rollout of >= 200 MB
    scripts/gen-codex-rollout.py --corpus 1000000 /tmp/corpus/codex    # a ~/.codex home of >= 1M messages
    scripts/gen-codex-rollout.py --corpus 1000000 /tmp/more/codex 8   # another, disjoint (seed 8, not 7)

Each turn is what real rollouts hold: a turn_context, a user message (and its event_msg echo),
reasoning with encrypted content, a function call with JSON-string arguments and its output, an
assistant message, and token counts: eight lines, each one canonical message. A corpus is a
`sessions/YYYY/MM/DD/` tree of rollouts of 20 to 400 turns, with shorter texts. Deterministic:
the same arguments give the same bytes.
"""
import json
import os
import random
import sys
import uuid

LINES_PER_TURN = 8
WORDS = ("the parser reads each record and maps it onto a canonical message while keeping every "
         "field so a native write gives back equal values for tool calls reasoning and results").split()


class Rollout:
    """Writes one rollout's lines to `out`, counting bytes and lines."""

    def __init__(self, rng, out, day):
        self.rng, self.out, self.day = rng, out, day
        self.second = self.written = self.lines = 0

    def ts(self):
        self.second += 1
        h, rem = divmod(self.second, 3600)
        m, s = divmod(rem, 60)
        return f"2026-01-{self.day + h // 24:02d}T{h % 24:02d}:{m:02d}:{s:02d}.{self.second % 1000:03d}Z"

    def emit(self, kind, payload):
        line = json.dumps({"timestamp": self.ts(), "type": kind, "payload": payload}, separators=(",", ":"))
        self.out.write(line)
        self.out.write("\n")
        self.written += len(line) + 1
        self.lines += 1

    def text(self, n):
        return " ".join(self.rng.choice(WORDS) for _ in range(n))

    def meta(self, sid, cwd, instructions):
        self.emit("session_meta", {
            "id": sid, "timestamp": f"2026-01-{self.day:02d}T00:00:00.000Z", "cwd": cwd,
            "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli",
            "model_provider": "openai", "base_instructions": {"text": self.text(instructions)},
            "git": {"commit_hash": "1cdfa7b17410e00cddbb7a4347336af2c6f80ee0", "branch": "main"}})

    def turn(self, turn, cwd, sizes):
        """One turn; `sizes` = (prompt, encrypted, output, answer) maxima."""
        rng, text = self.rng, self.text
        prompt_max, encrypted_max, output_max, answer_max = sizes
        call_id = f"call_{turn:08d}"
        self.emit("turn_context", {"turn_id": str(uuid.UUID(int=rng.getrandbits(128))), "cwd": cwd,
                                   "approval_policy": "on-request",
                                   "sandbox_policy": {"type": "workspace-write", "network_access": False},
                                   "model": "gpt-5.3-codex", "effort": "high", "summary": "auto"})
        prompt = text(rng.randint(10, prompt_max))
        self.emit("response_item", {"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": prompt}]})
        self.emit("event_msg", {"type": "user_message", "message": prompt, "images": [], "local_images": []})
        self.emit("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": text(30)}],
                                    "content": None,
                                    "encrypted_content": "gAAAAB" + "x" * rng.randint(200, encrypted_max)})
        self.emit("response_item", {"type": "function_call", "name": "shell", "call_id": call_id,
                                    "arguments": json.dumps({"command": ["bash", "-lc", f"rg -n parser src/{turn}.rs"],
                                                             "workdir": cwd})})
        self.emit("response_item", {"type": "function_call_output", "call_id": call_id,
                                    "output": json.dumps({"output": text(rng.randint(50, output_max)),
                                                          "metadata": {"exit_code": 0, "duration_seconds": 0.1}})})
        self.emit("response_item", {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": text(rng.randint(20, answer_max))}]})
        self.emit("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": turn * 1000,
                                                                                    "output_tokens": turn * 100}}})


def one_rollout(size_mb):
    target = int(size_mb * 1_000_000)
    r = Rollout(random.Random(42), sys.stdout, 1)
    r.meta("019c8a4c-ed82-79a1-aa28-7738fc5ab61a", "/work/app", 200)
    turn = 0
    while r.written < target:
        turn += 1
        r.turn(turn, "/work/app", (80, 2000, 1500, 300))


def corpus(messages, root, seed=7):
    rng = random.Random(seed)
    total = sessions = 0
    while total < messages:
        sessions += 1
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        day = 1 + sessions % 28
        folder = os.path.join(root, "sessions", "2026", "01", f"{day:02d}")
        os.makedirs(folder, exist_ok=True)
        name = f"rollout-2026-01-{day:02d}T00-00-{sessions % 60:02d}-{sid}.jsonl"
        with open(os.path.join(folder, name), "w") as out:
            r = Rollout(rng, out, day)
            cwd = f"/work/project-{rng.randint(1, 40)}"
            r.meta(sid, cwd, 100)
            for turn in range(1, rng.randint(20, 400) + 1):
                r.turn(turn, cwd, (60, 800, 400, 150))
            total += r.lines
    print(f"{sessions} sessions, {total} messages under {root}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--corpus":
        corpus(int(sys.argv[2]), sys.argv[3], *(int(a) for a in sys.argv[4:]))
    elif len(sys.argv) <= 2:
        one_rollout(float(sys.argv[1]) if len(sys.argv) > 1 else 200)
    else:
        sys.exit(__doc__)
