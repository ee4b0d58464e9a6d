"""Other agents' logs that abridged does not read, recognised so as to be refused by name.

Read as abridged's JSONL, such a log fails at its first line with a message about a `role`
it never had; named, the user knows what they gave and what is read instead.
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


def foreign_format(records: Sequence[tuple[int, JSON]]) -> tuple[int, str] | None:
    """The line and name of the first record in a format abridged recognises but does not
    read (a Codex CLI rollout, OpenAI Responses API items, a LangChain message dump)."""
    for number, record in records[:50]:
        if isinstance(record, Mapping) and (name := _name(record)) is not None:
            return number, name
    return None


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
