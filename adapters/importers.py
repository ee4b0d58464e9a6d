"""Conversations recorded by other tools, read as Messages API messages.

Three formats besides abridged's own JSONL (`abridged.adapters.transcripts`):

- **Claude Code** session logs (`abridged.adapters.claude_code`).
- **OpenAI chat completions** messages (`abridged.adapters.openai_chat`).
- **Anthropic Messages API** documents: a request body (`model`, `system`, `tools`,
  `messages`) or a JSON list of messages, saved as one JSON document.

All end the same way (`normalize`): thinking without a signature (another maker's model's)
is dropped, consecutive messages of one role are joined, a tool call left unanswered gets an
error result saying so, two results for one call are joined in one, a result answering no
call of the message before it is dropped, and the conversation starts at its first user
message. What was changed to make a valid conversation is listed in
`Imported.notes`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Literal

import attrs

from abridged.adapters.cline import written_results
from abridged.adapters.recorded import (
    blank_text,
    from_first_prompt,
    is_result,
    located,
    null_flags_note,
    paired_results,
    regrouped,
    signed_thinking,
    unique_call_ids,
    without_null_flags,
)
from abridged.domain.errors import InvalidMessageError
from abridged.domain.messages import JSON, Message

Format = Literal["abridged", "claude-code", "openai", "anthropic"]
FORMATS: tuple[str, ...] = ("abridged", "claude-code", "openai", "anthropic")

_CLAUDE_CODE_TYPES = (
    "user",
    "assistant",
    "summary",
    "system",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "attachment",
)
_OPENAI_ROLES = ("developer", "tool", "function")
_OPENAI_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call", "refusal"})
_OPENAI_PARTS = ("image_url", "input_audio", "file", "refusal")
_MESSAGES_API_PARTS = (
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "document",
)
_ID_CHARACTERS = re.compile(r"[^a-zA-Z0-9_-]")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


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
    tools: tuple[Mapping[str, JSON], ...] = attrs.field(default=(), hash=False)
    """Tool definitions the record gives (a request body's `tools`)."""


def detect_format(records: Sequence[tuple[int, JSON]]) -> Format:
    """Which format parsed records are in, from their shape: the first 50 that say something
    of it (a Claude Code log can start with many snapshots, which say nothing alone)."""
    telling = list(islice(((n, r) for n, r in records if not _bookkeeping(r)), 50))
    if records and not telling:
        return "claude-code"
    for _, record in telling:
        if not isinstance(record, Mapping):
            continue
        if record.get("type") in _CLAUDE_CODE_TYPES and (
            "sessionId" in record or "uuid" in record or "leafUuid" in record
        ):
            return "claude-code"
        if isinstance(record.get("messages"), list):
            # A request body: OpenAI's when a message says so, else the Messages API's (the
            # two read a conversation of plain text alike).
            messages = record["messages"][:50]
            return "openai" if _openai_conversation(messages) else "anthropic"
    one_document = bool(telling) and all(number == 0 for number, _ in telling)
    if _openai_conversation([record for _, record in telling]):
        return "openai"
    return "anthropic" if one_document else "abridged"


def _bookkeeping(record: JSON) -> bool:
    """Whether `record` is one of Claude Code's bookkeeping entries that names no session (a
    `file-history-snapshot`), which says nothing alone of the format."""
    return (
        isinstance(record, Mapping)
        and record.get("type") in _CLAUDE_CODE_TYPES
        and "role" not in record
        and not ({"sessionId", "uuid", "leafUuid", "message"} & record.keys())
    )


def _openai_conversation(messages: Sequence[JSON]) -> bool:
    """Whether `messages` are OpenAI chat messages rather than the Messages API's.

    A `system` message alone does not say: the Messages API takes `role: "system"` messages
    too, after a user turn (today's models), where OpenAI's come first. So a `system` message
    after another message, or a block only the Messages API has (`tool_use`, `thinking`, ...),
    reads as the Messages API's unless something only OpenAI has says otherwise."""
    if any(_openai_shaped(m) for m in messages):
        return True
    if any(_messages_api_shaped(m) for m in messages):
        return False
    roles = [m.get("role") for m in messages if isinstance(m, Mapping)]
    first = next((i for i, role in enumerate(roles) if role != "system"), len(roles))
    return first > 0 and "system" not in roles[first:]


def _messages_api_shaped(message: JSON) -> bool:
    """Whether a message holds a block only the Messages API has."""
    if not isinstance(message, Mapping):
        return False
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(part, Mapping)
        and (
            part.get("type") in _MESSAGES_API_PARTS
            or (part.get("type") == "image" and "source" in part)
        )
        for part in content
    )


def _openai_shaped(message: JSON) -> bool:
    """Whether a message has what only an OpenAI chat message has (a `system` message does
    not: see `_openai_conversation`)."""
    if not isinstance(message, Mapping):
        return False
    if message.get("role") in _OPENAI_ROLES or not _OPENAI_KEYS.isdisjoint(message):
        return True
    content = message.get("content", "")
    if content is None:  # the Messages API requires content
        return True
    return isinstance(content, list) and any(
        isinstance(part, Mapping) and part.get("type") in _OPENAI_PARTS for part in content
    )


def read_records(text: str, notes: list[str] | None = None) -> list[tuple[int, JSON]]:
    """The JSON records of a file: one document (a list's items, or an object's
    `messages`), else one record per non-blank line. Raises `FormatError`.

    Given `notes`, a last line cut short (no line end, not JSON: a write interrupted by a
    crash) is skipped, and a note says so."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            document = json.loads(stripped)
        except json.JSONDecodeError:
            document = None
        if isinstance(document, list):
            return [(0, item) for item in document]
    records: list[tuple[int, JSON]] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            if number == 1 and stripped.startswith("{"):
                return _one_document(stripped)
            if notes is not None and number == len(lines) and records:
                notes.append(cut_short_note(number))
                break
            raise FormatError(number, f"not valid JSON ({error.msg})") from None
    return records


def cut_short_note(line: int) -> str:
    return (
        f"line {line}, the last, is cut short (no line end, not JSON: a write interrupted "
        "by a crash?); skipped"
    )


def _one_document(text: str) -> list[tuple[int, JSON]]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError(error.lineno, f"not valid JSON ({error.msg})") from None
    return [(0, document)]


# Anthropic Messages API documents.


def import_anthropic(records: Iterable[tuple[int, JSON]], notes: Iterable[str] = ()) -> Imported:
    """A Messages API request body, or messages, one a record; raises `FormatError`."""
    system, model, tools = "", None, ()
    wires: list[tuple[int, JSON]] = []
    for number, record in records:
        if isinstance(record, Mapping) and isinstance(record.get("messages"), list):
            system = _system_text(record.get("system"), number)
            model = record.get("model") if isinstance(record.get("model"), str) else None
            defined = record.get("tools")
            tools = tuple(defined) if isinstance(defined, list) else ()
            wires.extend((number, m) for m in record["messages"])
        else:
            wires.append((number, record))
    raw: list[tuple[int, str, list[JSON]]] = []
    nulls = 0
    for index, (number, recorded) in enumerate(wires):
        wire, cleared = without_null_flags(recorded)
        nulls += cleared
        try:
            message = Message.from_wire(wire)
        except InvalidMessageError as error:
            where = f"line {number}" if number else f"messages[{index}]"
            raise FormatError(None, f"{where}: {error}") from None
        content = wire["content"] if isinstance(wire, Mapping) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        raw.append((number, message.role.value, list(blocks or [])))
    notes = [*notes, *null_flags_note(nulls)]
    imported = normalize(raw, system=system, model=model, notes=notes)
    return attrs.evolve(imported, tools=tools)


def _system_text(system: JSON, number: int) -> str:
    if system is None or isinstance(system, str):
        return system or ""
    if isinstance(system, list) and all(
        isinstance(b, Mapping) and isinstance(b.get("text"), str) for b in system
    ):
        return "\n\n".join(b["text"] for b in system if isinstance(b, Mapping))
    raise FormatError(number or None, "'system' must be a string or a list of text blocks")


def tool_id(raw: str) -> str:
    return _ID_CHARACTERS.sub("_", raw) or "call"


def tool_name(raw: object) -> str:
    name = _ID_CHARACTERS.sub("_", raw if isinstance(raw, str) else "")[:64]
    return name if _NAME.match(name) else "tool"


# Making a valid conversation of what was recorded.


def normalize(
    raw: Sequence[tuple[int, str, list[JSON]]],
    *,
    system: str = "",
    model: str | None = None,
    models: Sequence[str] | None = None,
    notes: Sequence[str] = (),
) -> Imported:
    """Messages from (line, role, blocks): unsigned thinking and blank text dropped,
    consecutive roles joined, tool calls and results paired, a tool call id used again
    renamed, starting at the first user message that is more than results (of calls made
    before the record starts). `models`, every model the record names (by default `model`),
    are named in a note on the thinking dropped."""
    notes = list(notes)
    joined: list[tuple[int, str, list[JSON]]] = []
    blank = nulls = 0
    named = ([model] if model else []) if models is None else models
    signed = signed_thinking(list(raw), named, notes)
    for number, role, blocks in _systems_before_replies(regrouped(signed, notes)):
        kept = [b for b in blocks if not blank_text(b)]
        for index, block in enumerate(kept):
            kept[index], cleared = without_null_flags(block)
            nulls += cleared
        blank += len(blocks) - len(kept)
        if not kept:
            continue
        if joined and joined[-1][1] == role:
            _join(role, joined[-1][2], kept, notes, number)
            continue
        joined.append((number, role, kept))
    if blank:
        notes.append(f"{blank} text blocks of only white space left out (the API refuses them)")
    notes.extend(null_flags_note(nulls))
    joined = [(n, role, _results_first(b) if role == "user" else b) for n, role, b in joined]
    joined = unique_call_ids(from_first_prompt(joined, notes), notes)
    paired: list[tuple[int, str, list[JSON]]] = []
    previous_calls: list[tuple[str, str]] = []
    written = 0
    for number, role, recorded in joined:
        blocks = recorded
        if role == "user":
            blocks, read = written_results(recorded, previous_calls)
            written += read
            blocks = paired_results(blocks, [i for i, _ in previous_calls], notes, number)
        if not blocks:
            continue
        if paired and paired[-1][1] == role:
            # A user message left empty (its results answered no call) no longer stands
            # between two replies: they are one turn.
            _join(role, paired[-1][2], blocks, notes, number)
            if role == "user":
                paired[-1] = (paired[-1][0], role, _results_first(paired[-1][2]))
        else:
            paired.append((number, role, blocks))
        previous_calls = _named_calls(paired[-1][2]) if role == "assistant" else []
    if written:
        notes.append(
            f"{written} tool results written as text ('[tool] Result:', as Cline records "
            "them) read as the results of their calls"
        )
    messages: list[Message] = []
    for number, role, blocks in paired:
        try:
            messages.append(Message.from_wire({"role": role, "content": blocks}))
        except InvalidMessageError as error:
            raise FormatError(number or None, str(error)) from None
    numbers = [number for number, _, _ in paired]
    if not messages:
        raise FormatError(None, "holds no conversation (no user prompt, only tool results)")
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


def _named_calls(blocks: list[JSON]) -> list[tuple[str, str]]:
    """The tool calls of a reply: each its id and its tool's name."""
    return [
        (b["id"], str(b.get("name")))
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
    ]


def _is_thinking(block: JSON) -> bool:
    return isinstance(block, Mapping) and block.get("type") in ("thinking", "redacted_thinking")


def _join(role: str, first: list[JSON], second: list[JSON], notes: list[str], number: int) -> None:
    """`second` added to `first`, the message of its role before it. In place: a record of
    many messages in a row of one role is read in time linear in its length."""
    if role == "user":
        first.extend(second)  # the results are put first once the run is whole
        return
    # Two replies in a row (one interrupted, then retried) are one turn: each block is kept
    # but a thinking block the API would refuse there, after other blocks and not right
    # before a tool call.
    started = any(not _is_thinking(b) for b in first)
    dropped = 0
    for index, block in enumerate(second):
        if _is_thinking(block) and started and not _before_call(second, index):
            dropped += 1
            continue
        first.append(block)
        started = started or not _is_thinking(block)
    if dropped:
        notes.append(
            f"{located(number)}: {dropped} thinking block(s) of a reply that follows another "
            "dropped (the two are one turn, and the API takes thinking after other blocks "
            "only right before a tool call)"
        )


def _results_first(blocks: list[JSON]) -> list[JSON]:
    """A user message's blocks, tool results leading, as the API takes them."""
    return [b for b in blocks if is_result(b)] + [b for b in blocks if not is_result(b)]


def _before_call(blocks: list[JSON], index: int) -> bool:
    """Whether the thinking at `index` is in a run of thinking right before a tool call."""
    following = next(
        (blocks[k] for k in range(index, len(blocks)) if not _is_thinking(blocks[k])), None
    )
    return isinstance(following, Mapping) and following.get("type") == "tool_use"
