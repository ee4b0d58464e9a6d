"""Conversations recorded by other tools, read as Messages API messages.

Two formats besides abridged's own JSONL (`abridged.adapters.transcripts`):

- **Claude Code** session logs (`~/.claude/projects/<project>/<session>.jsonl`): one entry
  per line. An assistant message is streamed as several entries sharing its
  `message.id`, one block each; they are regrouped. Sidechain (sub-agent) entries, meta
  entries, API-error placeholders and bookkeeping entries (summaries, snapshots, system
  notes) are skipped. Thinking blocks are kept byte for byte, signatures included.
- **OpenAI chat completions** messages: a JSON list, an object with `messages`, or one
  message per line. `system` / `developer` messages become the system prompt, an
  assistant's `tool_calls` become `tool_use` blocks (their JSON `arguments` the input),
  and `tool` messages become the `tool_result` blocks of one user message.

Both end the same way (`normalize`): consecutive messages of one role are joined, a tool
call left unanswered gets an error result saying so, a result answering no call of the
message before it is dropped, and the conversation starts at its first user message. What
was changed to make a valid conversation is listed in `Imported.notes`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from abridged.domain.errors import InvalidMessageError
from abridged.domain.messages import JSON, Message

Format = Literal["abridged", "claude-code", "openai"]
FORMATS: tuple[str, ...] = ("abridged", "claude-code", "openai")

_CLAUDE_CODE_TYPES = frozenset(
    {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
)
_OPENAI_ROLES = frozenset({"system", "developer", "tool", "function"})
_ID_CHARACTERS = re.compile(r"[^a-zA-Z0-9_-]")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
UNANSWERED = "[no result was recorded for this tool call]"


class FormatError(ValueError):
    """A record cannot be read in the chosen format; the message names the line."""

    def __init__(self, line: int | None, problem: str) -> None:
        super().__init__(problem if line is None else f"line {line}: {problem}")
        self.line = line
        self.problem = problem


@attrs.frozen
class Imported:
    """A conversation read from another tool's format."""

    messages: tuple[Message, ...]
    line_numbers: tuple[int, ...]
    """The line each message starts at (1-based); 0 when the file is one JSON document."""
    system: str = ""
    model: str | None = None
    notes: tuple[str, ...] = ()


def detect_format(records: Sequence[tuple[int, JSON]]) -> Format:
    """Which format parsed records are in, from their shape."""
    for _, record in records[:50]:
        if not isinstance(record, Mapping):
            continue
        if record.get("type") in _CLAUDE_CODE_TYPES and (
            "sessionId" in record or "uuid" in record or "leafUuid" in record
        ):
            return "claude-code"
        if record.get("role") in _OPENAI_ROLES or "tool_calls" in record:
            return "openai"
        if isinstance(record.get("messages"), list):
            return "openai"
    return "abridged"


def read_records(text: str) -> list[tuple[int, JSON]]:
    """The JSON records of a file: one document (a list's items, or an object's
    `messages`), else one record per non-blank line. Raises `FormatError`."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            document = json.loads(stripped)
        except json.JSONDecodeError:
            document = None
        if isinstance(document, list):
            return [(0, item) for item in document]
    records: list[tuple[int, JSON]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            if number == 1 and stripped.startswith("{"):
                return _one_document(stripped)
            raise FormatError(number, f"not valid JSON ({error.msg})") from None
    return records


def _one_document(text: str) -> list[tuple[int, JSON]]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError(error.lineno, f"not valid JSON ({error.msg})") from None
    return [(0, document)]


# Claude Code.


def import_claude_code(records: Iterable[tuple[int, JSON]]) -> Imported:
    """A Claude Code session log's main conversation; raises `FormatError`."""
    raw: list[tuple[int, str, list[JSON], str | None]] = []  # line, role, blocks, message id
    model = None
    skipped = 0
    for number, entry in records:
        if not isinstance(entry, Mapping):
            raise FormatError(number, "a Claude Code log entry must be a JSON object")
        kind = entry.get("type")
        if kind == "system" and _is_system_message(entry.get("message")):
            # An instruction the host sent mid-conversation (`role: "system"`), not one of
            # the log's own notices, which have no message.
            raw.append((number, "system", _system_blocks(entry["message"]), None))
            continue
        if kind not in ("user", "assistant"):
            continue
        if entry.get("isSidechain") or entry.get("isMeta") or entry.get("isApiErrorMessage"):
            skipped += 1
            continue
        message = entry.get("message")
        if not isinstance(message, Mapping):
            raise FormatError(number, f"a {kind} entry needs its 'message' object")
        if message.get("model") == "<synthetic>":
            skipped += 1
            continue
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise FormatError(number, "message content must be a string or a list of blocks")
        blocks: list[JSON] = content
        message_id = message.get("id") if kind == "assistant" else None
        if kind == "assistant" and model is None and isinstance(message.get("model"), str):
            model = message["model"]
        if raw and message_id is not None and raw[-1][3] == message_id:
            # Another block of the same streamed API message.
            for block in blocks:
                if block not in raw[-1][2]:
                    raw[-1][2].append(block)
            continue
        raw.append(
            (number, kind, list(blocks), message_id if isinstance(message_id, str) else None)
        )
    notes = [f"{skipped} sidechain, meta or synthetic entries skipped"] if skipped else []
    return normalize([(n, role, blocks) for n, role, blocks, _ in raw], model=model, notes=notes)


def _is_system_message(message: object) -> bool:
    return isinstance(message, Mapping) and message.get("role") == "system"


def _system_blocks(message: Mapping[str, JSON]) -> list[JSON]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


# OpenAI chat completions.


def import_openai(records: Iterable[tuple[int, JSON]]) -> Imported:
    """OpenAI chat-completions messages; raises `FormatError`."""
    flat: list[tuple[int, JSON]] = []
    for number, record in records:
        if isinstance(record, Mapping) and isinstance(record.get("messages"), list):
            flat.extend((number, m) for m in record["messages"])
        else:
            flat.append((number, record))
    system: list[str] = []
    raw: list[tuple[int, str, list[JSON]]] = []
    notes: list[str] = []
    model = None
    for number, message in flat:
        if not isinstance(message, Mapping):
            raise FormatError(number or None, "an OpenAI message must be a JSON object")
        role = message.get("role")
        if isinstance(message.get("model"), str) and model is None:
            model = message["model"]
        if role in ("system", "developer"):
            text = _openai_text(message.get("content"), number)
            if text.strip():
                system.append(text)
        elif role == "user":
            raw.append((number, "user", _openai_parts(message.get("content"), number)))
        elif role == "assistant":
            raw.append((number, "assistant", _openai_assistant(message, number)))
        elif role == "tool":
            tool_call_id = message.get("tool_call_id")
            if not isinstance(tool_call_id, str):
                raise FormatError(number or None, "a tool message needs its 'tool_call_id'")
            result: dict[str, JSON] = {
                "type": "tool_result",
                "tool_use_id": _tool_id(tool_call_id),
                "content": _openai_text(message.get("content"), number),
            }
            raw.append((number, "user", [result]))
        elif role == "function":
            notes.append(f"a legacy 'function' message (line {number}) was skipped")
        else:
            raise FormatError(number or None, f"unknown role {role!r}")
    return normalize(raw, system="\n\n".join(system), model=model, notes=notes)


def _openai_text(content: JSON, number: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    raise FormatError(number or None, "message content must be a string or a list of parts")


def _openai_parts(content: JSON, number: int) -> list[JSON]:
    if content is None or isinstance(content, str):
        return [{"type": "text", "text": content or ""}]
    if not isinstance(content, list):
        raise FormatError(number or None, "message content must be a string or a list of parts")
    blocks: list[JSON] = []
    for part in content:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            if isinstance(url, str):
                blocks.append(_image(url))
    return blocks


def _image(url: str) -> dict[str, JSON]:
    match = re.match(r"^data:(image/[a-z]+);base64,(.*)$", url, re.DOTALL)
    if match:
        source = {"type": "base64", "media_type": match[1], "data": match[2]}
        return {"type": "image", "source": source}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _openai_assistant(message: Mapping[str, Any], number: int) -> list[JSON]:
    blocks: list[JSON] = []
    text = _openai_text(message.get("content"), number)
    if text.strip():
        blocks.append({"type": "text", "text": text})
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise FormatError(number or None, "'tool_calls' must be a list")
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(call.get("id"), str):
            raise FormatError(number or None, "a tool call needs an 'id' and a 'function'")
        arguments = function.get("arguments")
        tool_input: JSON
        try:
            tool_input = json.loads(arguments) if isinstance(arguments, str) else arguments
        except json.JSONDecodeError:
            tool_input = {"arguments": arguments}
        if tool_input is None:
            tool_input = {}
        if not isinstance(tool_input, Mapping):
            tool_input = {"value": tool_input}
        blocks.append(
            {
                "type": "tool_use",
                "id": _tool_id(call["id"]),
                "name": _tool_name(function.get("name")),
                "input": dict(tool_input),
            }
        )
    return blocks


def _tool_id(raw: str) -> str:
    return _ID_CHARACTERS.sub("_", raw) or "call"


def _tool_name(raw: object) -> str:
    name = _ID_CHARACTERS.sub("_", raw if isinstance(raw, str) else "")[:64]
    return name if _NAME.match(name) else "tool"


# Making a valid conversation of what was recorded.


def normalize(
    raw: Sequence[tuple[int, str, list[JSON]]],
    *,
    system: str = "",
    model: str | None = None,
    notes: Sequence[str] = (),
) -> Imported:
    """Messages from (line, role, blocks): blank text dropped, consecutive roles joined,
    tool calls and results paired, starting at the first user message."""
    notes = list(notes)
    joined: list[tuple[int, str, list[JSON]]] = []
    for number, role, blocks in _systems_before_replies(raw):
        kept = [b for b in blocks if not _blank_text(b)]
        if not kept:
            continue
        if joined and joined[-1][1] == role:
            joined[-1] = (joined[-1][0], role, _join(role, joined[-1][2], kept))
            continue
        joined.append((number, role, kept))
    while joined and joined[0][1] != "user":
        joined.pop(0)
        notes.append("an assistant message before the first user message was skipped")
    messages: list[Message] = []
    numbers: list[int] = []
    previous_calls: list[str] = []
    for number, role, recorded in joined:
        blocks = _paired(recorded, previous_calls, notes, number) if role == "user" else recorded
        if not blocks:
            continue
        try:
            message = Message.from_wire({"role": role, "content": blocks})
        except InvalidMessageError as error:
            raise FormatError(number or None, str(error)) from None
        previous_calls = [u.id for u in message.tool_uses] if role == "assistant" else []
        messages.append(message)
        numbers.append(number)
    if not messages:
        raise FormatError(None, "holds no conversation (no user message)")
    return Imported(tuple(messages), tuple(numbers), system, model, tuple(notes))


def _systems_before_replies(
    raw: Sequence[tuple[int, str, list[JSON]]],
) -> list[tuple[int, str, list[JSON]]]:
    """The records with each system message moved, if need be, to just before the next
    assistant reply: the API takes one only between a user turn and the reply to it."""
    ordered: list[tuple[int, str, list[JSON]]] = []
    held: list[tuple[int, str, list[JSON]]] = []
    for record in raw:
        if record[1] == "system":
            held.append(record)
            continue
        if record[1] == "assistant" and held and ordered and ordered[-1][1] == "user":
            ordered.extend(held)
            held = []
        ordered.append(record)
    if held and ordered and ordered[-1][1] == "user":
        ordered.extend(held)
    return ordered


def _blank_text(block: JSON) -> bool:
    return (
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and (not isinstance(block.get("text"), str) or not block["text"].strip())
    )


def _is_result(block: JSON) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


def _is_thinking(block: JSON) -> bool:
    return isinstance(block, Mapping) and block.get("type") in ("thinking", "redacted_thinking")


def _join(role: str, first: list[JSON], second: list[JSON]) -> list[JSON]:
    if role == "user":
        # Tool results lead a user message.
        both = first + second
        return [b for b in both if _is_result(b)] + [b for b in both if not _is_result(b)]
    if (
        second
        and _is_thinking(second[0])
        and not any(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in first)
    ):
        # A reply that was retried: the later attempt, with its thinking, is the one kept.
        return second
    return first + [b for b in second if not _is_thinking(b)]


def _paired(blocks: list[JSON], calls: list[str], notes: list[str], number: int) -> list[JSON]:
    results = {b.get("tool_use_id"): b for b in blocks if _is_result(b)}
    orphans = [i for i in results if i not in calls]
    if orphans:
        notes.append(f"line {number}: results for {', '.join(map(str, orphans))} answer no call")
    answered = [results[i] for i in calls if i in results]
    missing = [i for i in calls if i not in results]
    if missing:
        notes.append(f"line {number}: calls {', '.join(missing)} had no recorded result")
    filled = [
        {"type": "tool_result", "tool_use_id": i, "content": UNANSWERED, "is_error": True}
        for i in missing
    ]
    others = [b for b in blocks if not _is_result(b)]
    ordered = answered + filled
    by_call = {b["tool_use_id"]: b for b in ordered}
    return [by_call[i] for i in calls] + others
