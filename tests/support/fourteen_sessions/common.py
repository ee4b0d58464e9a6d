"""Shared helpers for the fourteen session generators (deterministic, no network).

Three writers, one per input format `abridged simulate` reads:
- `write_abridged(path, messages, system=, tools=, model=)`: abridged JSONL (+ .meta.json)
- `write_openai(path, messages)`: OpenAI chat-completions messages, one per line
- `CCLog`: a Claude Code session log, one entry per streamed block

Every writer returns the paths it wrote.
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import string
import struct
import zlib
from pathlib import Path
from typing import Any


def out_path(out: Path, name: str) -> Path:
    """`out / name`, creating `out` if it does not exist yet."""
    out.mkdir(parents=True, exist_ok=True)
    return out / name


def write_abridged(
    path: Path,
    messages: list[dict[str, Any]],
    *,
    system: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    model: str | None = None,
) -> list[Path]:
    with path.open("w", encoding="utf-8") as fh:
        for m in messages:
            fh.write(json.dumps(m, ensure_ascii=False) + "\n")
    written = [path]
    meta: dict[str, Any] = {}
    if system:
        meta["system"] = system
    if tools:
        meta["tools"] = tools
    if model:
        meta["model"] = model
    if meta:
        stem = path.name[: -len(".jsonl")]
        meta_path = path.parent / f"{stem}.meta.json"
        meta_path.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        written.append(meta_path)
    return written


def write_openai(path: Path, messages: list[dict[str, Any]]) -> list[Path]:
    with path.open("w", encoding="utf-8") as fh:
        for m in messages:
            fh.write(json.dumps(m, ensure_ascii=False) + "\n")
    return [path]


class IdGen:
    """Unique tool-use ids (`prefix` + 22 random letters and digits) drawn from `r`."""

    def __init__(self, r: random.Random, prefix: str = "toolu_01") -> None:
        self.r = r
        self.prefix = prefix
        self.seen: set[str] = set()

    def __call__(self) -> str:
        while True:
            s = self.prefix + "".join(
                self.r.choice(string.ascii_letters + string.digits) for _ in range(22)
            )
            if s not in self.seen:
                self.seen.add(s)
                return s


def signature(r: random.Random, n: int = 344) -> str:
    raw = bytes(r.getrandbits(8) for _ in range(n * 3 // 4))
    return base64.b64encode(raw).decode()


def png(width: int, height: int, shade: int = 240) -> str:
    """A real PNG of `width` x `height` (one flat colour), base64."""
    row = b"\x00" + bytes([shade, shade, 255 - shade]) * width
    raw = row * height

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        return struct.pack(">I", len(data)) + tag + data + crc

    body = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(body).decode()


def sentence(r: random.Random, pool: list[str], lo: int = 8, hi: int = 18) -> str:
    words = [r.choice(pool) for _ in range(r.randint(lo, hi))]
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def prose(r: random.Random, pool: list[str], sentences: int) -> str:
    return " ".join(sentence(r, pool) for _ in range(sentences))


_ENGLISH_WORDS = (
    "the a this that service request latency queue worker deploy config check value "
    "change result after before because while then still also only which when error "
    "metric node cluster traffic rollback window budget owner customer report table "
    "column total month invoice account plan issue branch review test build release "
    "page section clause party term notice payment schedule data model feature score "
    "should would could might will was were is are has have been looks seems shows "
    "across between within under over into from with for about against per every"
)
ENGLISH = _ENGLISH_WORDS.split()


class CCLog:
    """A Claude Code log built entry by entry (parentUuid chain, one entry per block)."""

    def __init__(
        self,
        cwd: str,
        session: str,
        model: str = "claude-sonnet-4-5-20250929",
        version: str = "2.0.14",
        branch: str = "main",
    ) -> None:
        self.entries: list[dict[str, Any]] = []
        self._uuids = itertools.count(1)
        self._messages = itertools.count(1)
        self._parent: str | None = None
        self.cwd, self.session, self.model = cwd, session, model
        self.version, self.branch = version, branch
        self._t = 0

    def _base(self, kind: str, **extra: Any) -> dict[str, Any]:
        n = next(self._uuids)
        uuid = f"{n:08x}-1c2d-4e5f-8a9b-{n * 7919:012x}"
        self._t += 7
        s = self._t
        stamp = (
            f"2025-10-{14 + s // 86400:02d}T{(s // 3600) % 24:02d}:{(s // 60) % 60:02d}"
            f":{s % 60:02d}.{n % 1000:03d}Z"
        )
        entry = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": self.version,
            "gitBranch": self.branch,
            "type": kind,
            **extra,
            "uuid": uuid,
            "timestamp": stamp,
        }
        self._parent = uuid
        return entry

    def user(self, content: Any, **extra: Any) -> None:
        message = {"role": "user", "content": content}
        self.entries.append(self._base("user", message=message, **extra))

    def results(self, results: list[dict[str, Any]], separate: bool = True) -> None:
        groups = [[b] for b in results] if separate else [results]
        for g in groups:
            self.user(
                g,
                toolUseResult={"stdout": "", "stderr": "", "interrupted": False, "isImage": False},
            )

    def assistant(self, blocks: list[dict[str, Any]], stop: str | None = None) -> None:
        mid = f"msg_01{next(self._messages):020d}"
        for i, block in enumerate(blocks):
            message = {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [block],
                "stop_reason": stop if i == len(blocks) - 1 else None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 6,
                    "cache_creation_input_tokens": 512,
                    "cache_read_input_tokens": 20480,
                    "output_tokens": 180,
                    "service_tier": "standard",
                },
            }
            entry = self._base("assistant", message=message, requestId=f"req_011CU{mid[-10:]}")
            self.entries.append(entry)

    def write(self, path: Path) -> list[Path]:
        with path.open("w", encoding="utf-8") as fh:
            for e in self.entries:
                fh.write(json.dumps(e, ensure_ascii=False) + "\n")
        return [path]


def tool_use(tid: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def tool_result(tid: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    b: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": content}
    if is_error:
        b["is_error"] = True
    return b


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def thinking(t: str, sig: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": t, "signature": sig}
