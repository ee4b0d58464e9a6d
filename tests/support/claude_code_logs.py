"""Claude Code session logs, written as Claude Code writes them, for the importer tests.

Each line is one entry: `user` and `assistant` entries wrap an API message; an assistant
message is streamed as one entry per content block, all with the same `message.id`; tool
results come back as `user` entries (often one per result of a parallel batch) with a
`toolUseResult`; sub-agent work is in `isSidechain` entries; `isMeta` entries, summaries,
file-history snapshots and synthetic API-error messages are bookkeeping, not conversation.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

SESSION = "4f1c8a5e-2b7d-4e0a-9c3b-5d6e7f8a9b0c"
MODEL = "claude-opus-4-8"


class Log:
    """Builds a Claude Code log entry by entry, chaining `parentUuid` like Claude Code."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._uuids = itertools.count(1)
        self._messages = itertools.count(1)
        self._parent: str | None = None

    def _base(self, kind: str, **extra: Any) -> dict[str, Any]:
        uuid = f"00000000-0000-4000-8000-{next(self._uuids):012d}"
        entry = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/bookminder",
            "sessionId": SESSION,
            "version": "2.1.3",
            "gitBranch": "main",
            "type": kind,
            **extra,
            "uuid": uuid,
            "timestamp": "2026-11-20T10:15:00.000Z",
        }
        if not extra.get("isSidechain"):
            self._parent = uuid
        return entry

    def user(self, content: str | list[dict[str, Any]], **extra: Any) -> Log:
        self.entries.append(
            self._base("user", message={"role": "user", "content": content}, **extra)
        )
        return self

    def results(self, *results: tuple[str, Any], separate: bool = True) -> Log:
        """Tool results, each in an entry of its own (as Claude Code writes a parallel
        batch) unless `separate` is false."""
        blocks = [
            {"tool_use_id": tool_id, "type": "tool_result", "content": content}
            for tool_id, content in results
        ]
        groups = [[b] for b in blocks] if separate else [blocks]
        for group in groups:
            self.user(group, toolUseResult={"stdout": "", "stderr": "", "interrupted": False})
        return self

    def assistant(self, *blocks: dict[str, Any], **extra: Any) -> Log:
        """One API message, streamed as one entry per block."""
        message_id = f"msg_01Abc{next(self._messages):06d}"
        for block in blocks:
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": extra.pop("model", MODEL),
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 4, "output_tokens": 1, "cache_read_input_tokens": 0},
            }
            self.entries.append(
                self._base("assistant", message=message, requestId="req_011CV", **extra)
            )
        return self

    def raw(self, entry: dict[str, Any]) -> Log:
        self.entries.append(entry)
        return self

    def write(self, path: Path) -> Path:
        path.write_text(
            "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in self.entries),
            encoding="utf-8",
        )
        return path


def thinking(text: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def long_claude_code_log(seed: int, turns: int = 40) -> Log:
    """A Claude Code log of long assistant messages (signed thinking, 1,500 to 2,800 words of
    text and a command each, then another long answer), a prompt with a constraint every
    four turns, and beside it a `document` block as a web fetch returns an empty page (a
    text source with empty `data`, a field this version does not know)."""
    rng = random.Random(seed)
    vocabulary = [
        "the",
        "parser",
        "reads",
        "each",
        "token",
        "and",
        "the",
        "scanner",
        "keeps",
        "`state_machine`",
        "with",
        "--strict",
        "mode",
        "port",
        "8080",
        "timeout",
        "30",
        "see",
        "https://example.org/docs/page",
    ]

    def prose(n: int) -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(n))

    log = Log()
    log.user("Refactor the config loader. Never touch the migrations folder and only use tabs.")
    for k in range(turns):
        call = f"toolu_{k:04d}a"
        log.assistant(
            thinking(prose(rng.randint(200, 1500)), f"sig{k}"),
            text(prose(rng.randint(1500, 2800))),
            tool_use(call, "Bash", command=f"pytest tests/test_{k}.py -q"),
        )
        failure = f"\nE   ValueError: bad key {k}" if k % 3 == 0 else ""
        log.results((call, prose(rng.randint(100, 900)) + failure))
        log.assistant(text(prose(rng.randint(800, 2500))))
        if k % 4 == 3:
            ask = f"Next: step {k}, keep `load_config` stable, don't rename it. {prose(60)}"
            empty_page = {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": ""},
                "title": "empty page",
                "citations": {"enabled": True},
                "retrieved_at": "2026-11-20T10:15:00Z",
            }
            log.user([{"type": "text", "text": ask}, empty_page])
    log.assistant(text("Done."))
    return log
