"""A session being written: its messages, the facts planted in it, and filler turns.

`PlantedSession.write(out)` writes `NAME.jsonl` and `NAME.meta.json` (abridged JSONL, with the
system prompt and the `TOOLS` below) and `NAME.facts.json`: a list of the planted facts, each

- `{kind, text, speaker, msg}`: `text` must appear verbatim in a request that keeps it;
- `{kind, text, with, speaker, msg}`: a pair, both strings on one line of the request;
- `{kind: "reversal", old, new, speaker, msg}`: a value or decision replaced later.

`speaker` is `user` or `agent`, `msg` the index of the next message when it was planted.
Every session draws from its own `random.Random(seed)`, so the files are the same on every run.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    IdGen,
    text,
    tool_result,
    tool_use,
    write_abridged,
)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "bash",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "query",
        "description": "Run SQL against the warehouse.",
        "input_schema": {"type": "object", "properties": {"sql": {"type": "string"}}},
    },
    {
        "name": "lookup_ticket",
        "description": "Look a support ticket up.",
        "input_schema": {"type": "object", "properties": {"ticket_id": {"type": "string"}}},
    },
]


class PlantedSession:
    """A session being written: messages and the facts planted in it."""

    def __init__(self, name: str, seed: int, system: str) -> None:
        self.name, self.r, self.system = name, random.Random(seed), system
        self.m: list[dict[str, Any]] = []
        self.facts: list[dict[str, Any]] = []
        self.ids = IdGen(self.r)

    # -- planting -------------------------------------------------------------------------
    def plant(self, kind: str, speaker: str, *texts: str) -> None:
        """Each of `texts`, a fact of `kind` said by `speaker` in the next message."""
        for t in texts:
            self.facts.append({"kind": kind, "text": t, "speaker": speaker, "msg": len(self.m)})

    def pair(self, kind: str, speaker: str, a: str, b: str) -> None:
        """`a` and `b`, which a request keeps only when one of its lines holds both."""
        self.facts.append(
            {"kind": kind, "text": a, "with": b, "speaker": speaker, "msg": len(self.m)}
        )

    def reversal(self, old: str, new: str, speaker: str) -> None:
        """`old`, stated next, and `new`, which replaces it later in the session."""
        self.facts.append(
            {"kind": "reversal", "old": old, "new": new, "speaker": speaker, "msg": len(self.m)}
        )

    # -- messages -------------------------------------------------------------------------
    def user(self, t: str) -> None:
        self.m.append({"role": "user", "content": t})

    def say(self, t: str) -> None:
        self.m.append({"role": "assistant", "content": [text(t)]})

    def call(self, lead: str, name: str, inp: dict[str, Any], out: str, err: bool = False) -> None:
        """The agent's call of tool `name` after the text `lead`, and its result `out`."""
        tid = self.ids()
        self.m.append({"role": "assistant", "content": [text(lead), tool_use(tid, name, **inp)]})
        self.m.append({"role": "user", "content": [tool_result(tid, out, err)]})

    # -- filler ---------------------------------------------------------------------------
    def words(self, n: int) -> str:
        return " ".join(self.r.choice(ENGLISH) for _ in range(n))

    def code(self, path: str, lines: int) -> str:
        """A Python-looking file of about `lines` lines."""
        r = self.r
        out = [f"# {path}", "from __future__ import annotations", "import logging", ""]
        for k in range(lines):
            v = r.choice(["retry", "batch", "cursor", "window", "offset", "limit", "shard"])
            if k % 9 == 0:
                out.append(f"def handle_{v}_{k}(ctx, payload):")
            elif k % 9 == 8:
                out.append("")
            else:
                value = r.randint(1, 900)
                out.append(f"    {v}_{k % 7} = ctx.get('{v}', {value})  # {self.words(5)}")
        return "\n".join(out)

    def log(self, lines: int) -> str:
        """`lines` lines of a service log."""
        r = self.r
        out = []
        for _ in range(lines):
            lvl = r.choice(["INFO", "INFO", "INFO", "DEBUG", "WARN"])
            out.append(
                f"2026-03-0{r.randint(1, 9)} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:"
                f"{r.randint(0, 59):02d} {lvl} [{r.choice(['api', 'worker', 'sched', 'db'])}] "
                f"{self.words(r.randint(6, 12))} id={r.getrandbits(32):08x} "
                f"took={r.randint(3, 900)}ms"
            )
        return "\n".join(out)

    def rows(self, lines: int) -> str:
        """A CSV of `lines` rows of monthly account figures."""
        r = self.r
        out = ["segment,month,accounts,churned,mrr_eur"]
        for _ in range(lines):
            out.append(
                f"{r.choice(['smb', 'mid', 'ent', 'edu'])},2025-{r.randint(1, 12):02d},"
                f"{r.randint(100, 9000)},{r.randint(1, 300)},"
                f"{r.randint(1000, 90000)}.{r.randint(0, 99):02d}"
            )
        return "\n".join(out)

    def late(self, ask: str, reply: str, plants: list[tuple[str, str]]) -> None:
        """A turn late in the session (inside the reference's last 20 messages, outside
        abridged's 8% tail once a few more turns follow) whose reply states facts."""
        self.user(ask)
        for kind, t in plants:
            assert t in reply, t
            self.plant("late_" + kind, "agent", t)
        self.say(reply)

    def filler_turn(self, k: int, ask: str | None = None, big: int = 1) -> None:
        """One ordinary working turn: a short ask, one to three tool calls with 60-160 line
        outputs, and a short reply naming a file, a number and a backticked name."""
        r = self.r
        service = r.choice(["billing", "worker", "api", "sched"])
        module = r.choice(["retry", "queue", "handlers", "models", "views"])
        path = f"services/{service}/{module}_{k}.py"
        self.user(ask or f"Next, step {k}: check {path} and tell me what {self.words(4)} does.")
        for _ in range(r.randint(1, 3)):
            kind = r.choice(["read", "bash", "query"])
            if kind == "read":
                out = self.code(path, r.randint(60, 140) * big)
                self.call("Reading it.", "read_file", {"path": path}, out)
            elif kind == "bash":
                word = r.choice(["retry", "timeout", "cursor"])
                cmd = f"grep -rn {word} services/ | head -{r.randint(50, 120)}"
                self.call(
                    "Searching.", "bash", {"command": cmd}, self.log(r.randint(50, 120) * big)
                )
            else:
                since = f"2025-0{r.randint(1, 9)}"
                sql = f"select segment, month, accounts from metrics_{k} where month >= '{since}'"
                self.call("Querying.", "query", {"sql": sql}, self.rows(r.randint(60, 140) * big))
        self.say(
            f"In `{path.rsplit('/', 1)[-1]}` the handler retries up to {r.randint(2, 9)} times; "
            f"`handle_batch_{k}` reads a window of {r.randint(10, 500)} rows. "
            f"{self.words(14).capitalize()}."
        )

    def chat_turn(self, k: int) -> None:
        """A short exchange without tools (a chat-heavy session)."""
        r = self.r
        self.user(f"Quick one ({k}): {self.words(r.randint(8, 20))}?")
        self.say(
            " ".join(
                self.words(r.randint(10, 18)).capitalize() + "." for _ in range(r.randint(10, 16))
            )
        )

    def write(self, out: Path) -> list[Path]:
        """Write the session's files into `out` (created if missing); the paths written."""
        out.mkdir(parents=True, exist_ok=True)
        written = write_abridged(
            out / f"{self.name}.jsonl", self.m, system=self.system, tools=TOOLS
        )
        facts = out / f"{self.name}.facts.json"
        facts.write_text(json.dumps(self.facts, ensure_ascii=False, indent=1), encoding="utf-8")
        return [*written, facts]
