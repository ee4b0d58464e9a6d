"""Shared builders for the seven sessions: one abstract conversation, three writers.

`Conv` records a conversation as events (user text, assistant blocks, tool results) and writes it
as abridged JSONL with a `.meta.json` beside it (`write_abridged`), as OpenAI chat-completions
messages (`write_openai`) or as a Claude Code session log (`write_claude_code`). Every writer
takes the output directory and returns the paths it wrote.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path
from typing import Any

Call = tuple[str, dict[str, Any], Any]


class Conv:
    """A conversation drawn from its own seeded generator, written in any of the three formats."""

    def __init__(
        self,
        seed: int,
        system: str,
        tools: list[dict[str, Any]],
        model: str = "claude-sonnet-4-5",
    ) -> None:
        self.rng = random.Random(seed)
        self.system = system
        self.tools = tools
        self.model = model
        self.events: list[tuple[str, Any]] = []
        self._ids = 0

    def new_id(self, prefix: str = "toolu_01") -> str:
        self._ids += 1
        tail = "".join(self.rng.choice(string.ascii_letters + string.digits) for _ in range(20))
        return f"{prefix}{tail}{self._ids:03d}"

    def signature(self) -> str:
        return base64.b64encode(self.rng.randbytes(self.rng.randint(180, 420))).decode()

    def user(self, text: str) -> None:
        self.events.append(("user", text))

    def say(self, text: str, thinking: str | None = None) -> None:
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": self.signature()})
        blocks.append({"type": "text", "text": text})
        self.events.append(("assistant", blocks))

    def calls(
        self, calls: list[Call], text: str | None = None, thinking: str | None = None
    ) -> list[str]:
        """One reply with `calls` [(name, input, result)], result either a string or
        (string, True) for an error; then the results message. Returns the tool-use ids."""
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": self.signature()})
        if text:
            blocks.append({"type": "text", "text": text})
        results = []
        ids = []
        for name, tool_input, outcome in calls:
            ident = self.new_id()
            ids.append(ident)
            blocks.append({"type": "tool_use", "id": ident, "name": name, "input": tool_input})
            result, error = outcome if isinstance(outcome, tuple) else (outcome, False)
            results.append((ident, result, error))
        self.events.append(("assistant", blocks))
        self.events.append(("results", results))
        return ids

    def call(
        self,
        name: str,
        tool_input: dict[str, Any],
        result: Any,
        text: str | None = None,
        thinking: str | None = None,
    ) -> str:
        return self.calls([(name, tool_input, result)], text, thinking)[0]

    def write_abridged(self, out_dir: Path, name: str) -> list[Path]:
        path = out_dir / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for kind, payload in self.events:
                rec: dict[str, Any]
                if kind == "user":
                    rec = {"role": "user", "content": [{"type": "text", "text": payload}]}
                elif kind == "assistant":
                    rec = {"role": "assistant", "content": payload}
                else:
                    content = []
                    for ident, result, error in payload:
                        block: dict[str, Any] = {
                            "type": "tool_result",
                            "tool_use_id": ident,
                            "content": [{"type": "text", "text": result}],
                        }
                        if error:
                            block["is_error"] = True
                        content.append(block)
                    rec = {"role": "user", "content": content}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        meta = {"system": self.system, "model": self.model, "tools": self.tools}
        meta_path = out_dir / f"{name}.meta.json"
        meta_path.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        return [path, meta_path]

    def write_openai(self, out_dir: Path, name: str) -> Path:
        path = out_dir / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as f:

            def put(rec: dict[str, Any]) -> None:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")

            put({"role": "system", "content": self.system})
            for kind, payload in self.events:
                if kind == "user":
                    put({"role": "user", "content": payload})
                elif kind == "assistant":
                    texts = [b["text"] for b in payload if b["type"] == "text"]
                    calls = [
                        {
                            "id": b["id"].replace("toolu_01", "call_"),
                            "type": "function",
                            "function": {
                                "name": b["name"],
                                "arguments": json.dumps(b["input"], ensure_ascii=False),
                            },
                        }
                        for b in payload
                        if b["type"] == "tool_use"
                    ]
                    rec: dict[str, Any] = {
                        "role": "assistant",
                        "content": "\n\n".join(texts) if texts else None,
                    }
                    if calls:
                        rec["tool_calls"] = calls
                    put(rec)
                else:
                    for ident, result, _error in payload:
                        tool_call_id = ident.replace("toolu_01", "call_")
                        put({"role": "tool", "tool_call_id": tool_call_id, "content": result})
        return path

    def write_claude_code(
        self, out_dir: Path, name: str, cwd: str, session: str, branch: str = "main"
    ) -> Path:
        path = out_dir / f"{name}.jsonl"
        uuid_n = 0
        msg_n = 0
        parent: str | None = None
        minute = 0
        entries: list[dict[str, Any]] = []

        def base(kind: str, **extra: Any) -> dict[str, Any]:
            nonlocal uuid_n, parent, minute
            uuid_n += 1
            minute += 1
            uuid = f"{session[:8]}-7a1e-4c2b-9d3f-{uuid_n:012d}"
            stamp = (
                f"2026-02-1{minute // 1440 % 9}T{minute // 60 % 24:02d}:{minute % 60:02d}"
                f":07.{uuid_n % 1000:03d}Z"
            )
            e = {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": session,
                "version": "2.0.37",
                "gitBranch": branch,
                "type": kind,
                **extra,
                "uuid": uuid,
                "timestamp": stamp,
            }
            parent = uuid
            return e

        entries.append({"type": "summary", "summary": "session", "leafUuid": f"{session[:8]}-0000"})
        for kind, payload in self.events:
            if kind == "user":
                entries.append(base("user", message={"role": "user", "content": payload}))
            elif kind == "assistant":
                msg_n += 1
                mid = f"msg_01{self.rng.randrange(16**16):016x}{msg_n:04d}"
                for b in payload:
                    message = {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": self.model,
                        "content": [b],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {
                            "input_tokens": 6,
                            "output_tokens": 40,
                            "cache_read_input_tokens": 14000,
                        },
                    }
                    entries.append(
                        base("assistant", requestId=f"req_011C{msg_n:08d}", message=message)
                    )
            else:
                for ident, result, error in payload:
                    block = {"tool_use_id": ident, "type": "tool_result", "content": result}
                    if error:
                        block["is_error"] = True
                    outcome = {"stdout": result[:200], "stderr": "", "interrupted": False}
                    entries.append(
                        base(
                            "user",
                            message={"role": "user", "content": [block]},
                            toolUseResult=outcome,
                        )
                    )
        with path.open("w", encoding="utf-8") as f:
            for e in entries:
                f.write(json.dumps(e, ensure_ascii=False) + "\n")
        return path


def schema(tool_name: str, description: str, **props: str) -> dict[str, Any]:
    """An Anthropic tool definition whose properties (all required) have the given types."""
    return {
        "name": tool_name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {k: {"type": v} for k, v in props.items()},
            "required": list(props),
        },
    }


def openai_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI function-tool form of an Anthropic tool definition."""
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool["description"],
            "parameters": tool["input_schema"],
        },
    }
