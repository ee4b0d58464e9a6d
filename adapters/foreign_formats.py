"""Other agents' logs that abridged does not read, recognised so as to be refused by name.

Read as abridged's JSONL (or as OpenAI chat), such a log fails at its first line with a
message about a `role` it never had, or a format it is not in; named, the user knows what
they gave and what is read instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from abridged.domain.messages import JSON

__all__ = ["READ", "foreign_format"]

READ = (
    "abridged reads its own JSONL, Claude Code session logs, OpenAI chat-completions "
    "messages and Anthropic Messages API request bodies"
)

_CODEX_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_RESPONSES_TYPES = (
    "function_call",
    "function_call_output",
    "reasoning",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "item_reference",
)
_RESPONSES_PARTS = ("input_text", "output_text", "input_image", "input_file")
_LANGCHAIN_TYPES = (
    "human",
    "ai",
    "tool",
    "system",
    "chat",
    "function",
    "AIMessageChunk",
    "HumanMessageChunk",
)


def foreign_format(records: Sequence[tuple[int, JSON]], detected: str) -> tuple[int, str] | None:
    """The line and name of the first record in a format abridged recognises but does not
    read (a Codex CLI rollout, OpenAI Responses API items, a LangChain message dump, a log
    of one content block a record), given the format `records` were `detected` in.

    A log of one block a record is refused in any format but Claude Code's: its `tool`
    role reads as OpenAI chat, which then refused its first line for its `content`, naming
    a format the file is not in. The other names are given only where the records read as
    abridged's JSONL or the Messages API's: an OpenAI chat export may hold the Responses
    API's parts (`output_text`), which its importer reads as text."""
    if detected == "claude-code":
        return None
    for number, record in records[:50]:
        if not isinstance(record, Mapping):
            continue
        if "role" in record and isinstance(record.get("content"), Mapping):
            return number, _ONE_BLOCK
        if detected in ("abridged", "anthropic") and (name := _name(record)) is not None:
            return number, name
    return None


_ONE_BLOCK = (
    "a log of one content block a record ('content' an object, not a string or a list: each "
    "block of a message, a tool's call or result among them, written as a record of its own)"
)


def _name(record: Mapping[str, JSON]) -> str | None:
    kind = record.get("type")
    if kind in _CODEX_TYPES and "payload" in record:
        return "a Codex CLI rollout log"
    if isinstance(record.get("input"), list) or (
        record.get("object") == "response" and isinstance(record.get("output"), list)
    ):
        return "an OpenAI Responses API document ('input' / 'output' items)"
    if kind in _RESPONSES_TYPES or _has_responses_parts(record):
        return f"an OpenAI Responses API item (type {kind!r})"
    if record.get("lc") == 1 and kind == "constructor":
        return "a LangChain serialized message"
    if (
        kind in _LANGCHAIN_TYPES
        and "role" not in record
        and ("data" in record or "content" in record)
    ):
        return f"a LangChain message dump (type {kind!r})"
    return None


def _has_responses_parts(record: Mapping[str, JSON]) -> bool:
    content = record.get("content")
    return isinstance(content, list) and any(
        isinstance(part, Mapping) and part.get("type") in _RESPONSES_PARTS for part in content
    )
