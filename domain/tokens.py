"""How a request's size is estimated from a text counter.

One rule, used everywhere: at append (stored in the event), for summaries, for truncated tool
outputs, and by tests that re-count a dumped request body. Structural overheads are fixed
constants on the safe side of what the API bills for the JSON around the text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from abridged.domain.images import MAX_IMAGE_TOKENS, inline_image_tokens
from abridged.domain.messages import (
    JSON,
    Block,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)

CountText = Callable[[str], int]
"""Counts the tokens of a text; the `TokenCounter` port's `count`."""

MESSAGE_OVERHEAD = 4
BLOCK_OVERHEAD = 3
TOOL_OVERHEAD = 8
DOCUMENT_MIN_TOKENS = 1_600
"""The least a PDF, or a document fetched by the provider (by url or file), is counted."""
REQUEST_OVERHEAD = 16
PDF_BYTES_PER_TOKEN = 8
"""A PDF is billed by its pages (text and an image of each); its bytes are all we know of
them here. Eight bytes a token overestimates text-heavy PDFs, and `DOCUMENT_MIN_TOKENS` is
the least."""


def canonical_json(value: JSON) -> str:
    """The JSON text a tool input or definition is counted (and compared) by."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)


def text_block_tokens(text: str, count: CountText) -> int:
    """What a text block of `text` costs in a request (also a summary chunk, per-turn content)."""
    return BLOCK_OVERHEAD + count(text)


def block_tokens(block: Block, count: CountText) -> int:
    if isinstance(block, WireBlock):
        return wire_block_tokens(block, count)
    # A field this version does not model is sent with its block, so it counts as its JSON.
    extra = count(block.extra) if block.extra else 0
    return extra + _modelled_block_tokens(block, count)


def _modelled_block_tokens(block: Block, count: CountText) -> int:
    if isinstance(block, TextBlock):
        if block.citations:
            return text_block_tokens(block.text, count) + count(canonical_json(block.citations))
        return text_block_tokens(block.text, count)
    if isinstance(block, ToolUseBlock):
        return TOOL_OVERHEAD + count(block.name) + count(canonical_json(dict(block.input)))
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str):
            return TOOL_OVERHEAD + count(block.content)
        return TOOL_OVERHEAD + sum(block_tokens(b, count) for b in block.content)
    if isinstance(block, ThinkingBlock):
        return BLOCK_OVERHEAD + count(block.thinking)
    if isinstance(block, RedactedThinkingBlock):
        return BLOCK_OVERHEAD + len(block.data) // 4
    if isinstance(block, ImageBlock):
        if block.source_type == "base64":
            return BLOCK_OVERHEAD + inline_image_tokens(block.data, block.media_type)
        return BLOCK_OVERHEAD + MAX_IMAGE_TOKENS
    raise TypeError(f"not a content block: {block!r}")


def wire_block_tokens(block: WireBlock, count: CountText) -> int:
    """A block kept as JSON counts as its JSON text, except the bytes of an inline PDF."""
    if block.type == "document":
        wire = block.to_wire()
        source = wire.get("source")
        if isinstance(source, Mapping) and source.get("type") == "base64":
            data = source.get("data")
            pdf_bytes = len(data) * 3 // 4 if isinstance(data, str) else 0
            rest = {k: v for k, v in wire.items() if k != "source"}
            return (
                BLOCK_OVERHEAD
                + max(DOCUMENT_MIN_TOKENS, pdf_bytes // PDF_BYTES_PER_TOKEN)
                + count(canonical_json(rest))
            )
        if isinstance(source, Mapping) and source.get("type") in {"url", "file"}:
            # Fetched by the provider: its size is not known here.
            return BLOCK_OVERHEAD + DOCUMENT_MIN_TOKENS + count(block.json)
    if block.type == "image":
        # By Files API id: its size is not known here (`abridged.domain.images`).
        return BLOCK_OVERHEAD + MAX_IMAGE_TOKENS + count(block.json)
    return BLOCK_OVERHEAD + count(block.json)


def message_tokens(message: Message, count: CountText) -> int:
    return MESSAGE_OVERHEAD + sum(message_block_tokens(message, count))


def message_block_tokens(message: Message, count: CountText) -> tuple[int, ...]:
    """What each block of `message` costs in a request. A `role: "system"` message goes out
    as itself to a model that takes the role and as marked text in the user message before
    it to one that does not (`folded_system_text`); the session's model may change after
    the message is counted, so each of its blocks counts as the larger of the two."""
    if not message.is_system:
        return tuple(block_tokens(b, count) for b in message.content)
    return tuple(
        max(block_tokens(b, count), text_block_tokens(folded_system_text(b.to_wire()), count))
        for b in message.content
    )


SYSTEM_MESSAGE_OPEN = "<system-message>"
SYSTEM_MESSAGE_CLOSE = "</system-message>"


def folded_system_text(block: Mapping[str, JSON]) -> str:
    """A block of a system message as the text a model without system messages is sent."""
    if block.get("type") == "text":
        body = str(block.get("text", ""))
    else:
        # A tool change, which an older model cannot take: said in words instead.
        tool = block.get("tool")
        tool = tool if isinstance(tool, Mapping) else {}
        definition = tool.get("definition")
        definition = definition if isinstance(definition, Mapping) else {}
        name = tool.get("name") or definition.get("name", "?")
        verb = "now available" if block.get("type") == "tool_addition" else "withdrawn"
        body = f"The tool {name!r} is {verb} from here on."
    return f"{SYSTEM_MESSAGE_OPEN}\n{body}\n{SYSTEM_MESSAGE_CLOSE}"


def system_tokens(system: str, count: CountText) -> int:
    return text_block_tokens(system, count) if system else 0


def tools_tokens(tools: Sequence[Mapping[str, JSON]], count: CountText) -> int:
    return sum(TOOL_OVERHEAD + count(canonical_json(dict(tool))) for tool in tools)


def request_tokens(
    system: str, tools: Sequence[Mapping[str, JSON]], messages: Sequence[Message], count: CountText
) -> int:
    """The estimate of a whole request, counted from scratch (tests and audits use this)."""
    return (
        REQUEST_OVERHEAD
        + system_tokens(system, count)
        + tools_tokens(tools, count)
        + sum(message_tokens(m, count) for m in messages)
    )


class CountedEntry(Protocol):
    """A retained message with its blocks' counts as shown (a session's `Entry` is one): what
    the planners and the degradation read of every message."""

    @property
    def position(self) -> int: ...
    @property
    def message(self) -> Message: ...
    @property
    def block_tokens(self) -> tuple[int, ...]: ...
