"""What a Claude Code log holds beyond the conversation `load_transcript` reads: Claude
Code's own compaction (its boundary and the summary it sent after it) and the replies as
the API streamed them (blank text blocks kept)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from abridged.adapters.transcripts import Transcript


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


@attrs.frozen
class Compaction:
    """Claude Code's own compaction in a log: the boundary's line and the summary it sent."""

    line: int
    summary: str


def compaction_in(path: Path) -> Compaction | None:
    """The first compaction a Claude Code log records, if any."""
    boundary = None
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            entry = json.loads(line) if line.strip() else {}
            if entry.get("subtype") == "compact_boundary" and boundary is None:
                boundary = number
            elif boundary is not None and entry.get("isCompactSummary"):
                content = entry["message"]["content"]
                if isinstance(content, list):
                    content = "\n".join(b.get("text", "") for b in content)
                return Compaction(boundary, str(content))
    return None


def raw_replies(path: Path, transcript: Transcript) -> dict[int, tuple[Any, ...]]:
    """The replies as the API streamed them (by the log's `message.id`), for the messages of
    `transcript` that differ from them only by blank text blocks (which the importer drops,
    as a client must before it sends them back: the API refuses them)."""
    entries: dict[int, Any] = {}
    blocks: dict[str, list[Any]] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            entry = json.loads(line) if line.strip() else {}
            message = entry.get("message")
            if entry.get("type") == "assistant" and isinstance(message, Mapping):
                entries[number] = message.get("id")
                blocks.setdefault(str(message.get("id")), []).extend(message.get("content") or [])
    found: dict[int, tuple[Any, ...]] = {}
    for index, message in enumerate(transcript.messages):
        if message.role.value != "assistant" or not transcript.line_numbers:
            continue
        raw = blocks.get(str(entries.get(transcript.line_numbers[index])), [])
        kept = [b for b in raw if b.get("type") != "text" or b.get("text", "").strip()]
        if len(kept) < len(raw) and kept == _blocks(message.to_wire()["content"]):
            found[index] = tuple(raw)
    return found
