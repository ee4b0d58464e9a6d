"""What every real-source converter shares: the Messages sequence rules, unique tool call
ids, the statistics of the meta sidecar and writing `X.jsonl` beside `X.meta.json`.

A converted session is a list of records `{"role": "user"|"assistant", "content": [...]}`
with Anthropic `text`, `tool_use` and `tool_result` blocks. `problems(records)` says what
would make it an invalid Messages sequence; a converter writes nothing that has any.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

Record = dict[str, Any]
Block = dict[str, Any]

TOOL_ID = re.compile(r"^[A-Za-z0-9_-]+$")


def text_block(text: str) -> Block:
    """A `text` block."""
    return {"type": "text", "text": text}


def tool_use(ident: str, name: str, arguments: object) -> Block:
    """A `tool_use` block; `arguments` is a JSON object or its JSON text (OpenAI style).
    Arguments that are not an object are kept under `arguments`."""
    value: object = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            value = {"arguments": arguments}
    if not isinstance(value, dict):
        value = {"arguments": value}
    return {"type": "tool_use", "id": ident, "name": name, "input": value}


def tool_result(ident: str, content: object, *, is_error: bool = False) -> Block:
    """A `tool_result` block; content that is neither text nor blocks is kept as its JSON."""
    block: Block = {"type": "tool_result", "tool_use_id": ident}
    if isinstance(content, list):
        block["content"] = content
    else:
        block["content"] = content if isinstance(content, str) else json.dumps(content)
    if is_error:
        block["is_error"] = True
    return block


def content_blocks(content: object) -> list[Block]:
    """A message's content as blocks: a string becomes one text block (none when blank)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [text_block(content)] if content.strip() else []
    if isinstance(content, list):
        blocks: list[Block] = []
        for item in content:
            if isinstance(item, str):
                blocks += content_blocks(item)
            elif isinstance(item, dict) and item.get("type") == "text":
                if str(item.get("text", "")).strip():
                    blocks.append(dict(item))
            elif isinstance(item, dict):
                blocks.append(dict(item))
        return blocks
    return [text_block(json.dumps(content))]


def merged(records: Iterable[Record]) -> list[Record]:
    """Consecutive messages of one role joined into one (a user message's tool results
    first, as the API wants them); messages without content dropped."""
    out: list[Record] = []
    for record in records:
        if not record["content"]:
            continue
        if out and out[-1]["role"] == record["role"]:
            out[-1] = {"role": record["role"], "content": out[-1]["content"] + record["content"]}
        else:
            out.append({"role": record["role"], "content": list(record["content"])})
    for record in out:
        if record["role"] == "user":
            blocks = record["content"]
            results = [b for b in blocks if b.get("type") == "tool_result"]
            record["content"] = results + [b for b in blocks if b.get("type") != "tool_result"]
    return out


def unique_ids(records: list[Record]) -> int:
    """Makes every tool call id unique and valid in place: a repeated id gets `_2`, `_3`, …
    and the results that follow it answer the renamed call. Returns how many were renamed."""
    seen: dict[str, int] = {}
    current: dict[str, str] = {}
    renamed = 0
    for record in records:
        for block in record["content"]:
            if block.get("type") == "tool_use":
                original = str(block["id"])
                ident = original if TOOL_ID.match(original) else re.sub(r"[^\w-]", "_", original)
                seen[ident] = seen.get(ident, 0) + 1
                if seen[ident] > 1:
                    ident = f"{ident}_{seen[ident]}"
                renamed += ident != original
                current[original] = ident
                block["id"] = ident
            elif block.get("type") == "tool_result":
                original = str(block["tool_use_id"])
                block["tool_use_id"] = current.get(original, original)
    return renamed


def problems(records: Sequence[Record]) -> list[str]:
    """What makes `records` an invalid Messages sequence (empty when nothing): roles that do
    not alternate or do not start with the user, empty content or text, tool calls not
    answered in the next message, results answering no call of the message before, ids
    repeated or invalid."""
    found: list[str] = []
    calls_seen: set[str] = set()
    for number, record in enumerate(records, start=1):
        role, blocks = record.get("role"), record.get("content")
        expected = "user" if number % 2 else "assistant"
        if role != expected:
            found.append(f"line {number}: role {role!r}, expected {expected!r}")
        if not isinstance(blocks, list) or not blocks:
            found.append(f"line {number}: no content")
            continue
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and not str(block.get("text", "")).strip():
                found.append(f"line {number}: empty text block")
            if kind == "tool_use":
                ident = str(block.get("id"))
                if role != "assistant" or not TOOL_ID.match(ident) or ident in calls_seen:
                    found.append(f"line {number}: tool_use {ident!r} misplaced or repeated")
                calls_seen.add(ident)
        asked = _ids(records[number - 2], "tool_use", "id") if number > 1 else []
        answered = _ids(record, "tool_result", "tool_use_id")
        if sorted(answered) != sorted(asked) and (answered or role == "user"):
            found.append(f"line {number}: results {answered} do not answer calls {asked}")
        kinds = [b.get("type") for b in blocks]
        other = next((i for i, k in enumerate(kinds) if k != "tool_result"), len(kinds))
        if "tool_result" in kinds[other:]:
            found.append(f"line {number}: text before a tool_result")
    if records and records[-1].get("role") == "assistant" and _ids(records[-1], "tool_use", "id"):
        found.append(f"line {len(records)}: the last message's tool calls are unanswered")
    return found


def _ids(record: Record, kind: str, key: str) -> list[str]:
    return [str(b.get(key)) for b in record.get("content", []) if b.get("type") == kind]


def _chars(content: object) -> int:
    return len(content) if isinstance(content, str) else len(json.dumps(content))


def stats(records: Sequence[Record]) -> dict[str, int]:
    """The sidecar's `stats`, as the shared transcripts give them."""
    chars = sum(len(json.dumps(r, ensure_ascii=False)) + 1 for r in records)
    blocks = [b for r in records for b in r["content"]]
    results = [b for b in blocks if b.get("type") == "tool_result"]
    return {
        "messages": len(records),
        "chars_jsonl": chars,
        "approx_tokens_chars_div_4": chars // 4,
        "tool_use_blocks": sum(b.get("type") == "tool_use" for b in blocks),
        "tool_result_blocks": len(results),
        "thinking_blocks": sum(b.get("type") == "thinking" for b in blocks),
        "largest_tool_result_chars": max((_chars(b["content"]) for b in results), default=0),
    }


def write_session(folder: Path, name: str, records: list[Record], meta: dict[str, Any]) -> Path:
    """Writes `name.jsonl` and `name.meta.json` (with `stats`) into `folder`; raises
    `ValueError` naming the problems when `records` is not a valid Messages sequence."""
    found = problems(records)
    if found:
        raise ValueError(f"{name}: " + "; ".join(found[:5]))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    lines = (json.dumps(r, ensure_ascii=False) for r in records)
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    sidecar = {**meta, "stats": stats(records)}
    (folder / f"{name}.meta.json").write_text(json.dumps(sidecar, ensure_ascii=False, indent=1))
    return path
