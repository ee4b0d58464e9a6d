"""Messages and content blocks: the Anthropic Messages content model as value objects.

Every block knows its wire form (`to_wire`) and can be rebuilt from it (`block_from_wire`),
so a message survives a round trip through the event store byte for byte: thinking blocks
and their signatures in particular must come back exactly as the model produced them.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from abridged.domain.errors import InvalidMessageError, MalformedBlockError

JSON: TypeAlias = Any
"""A JSON value as `json.loads` returns it."""

# Used with `fullmatch`: `$` would also match before a trailing newline, which the API refuses.
TOOL_ID_PATTERN = re.compile(r"[a-zA-Z0-9_-]+")
TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

SERVER_TOOL_RESULT_TYPES = frozenset(
    {
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_result",
        "advisor_tool_result",
    }
)
"""Results of tools the provider runs: each answers a `server_tool_use` (or `mcp_tool_use`)
earlier in the same assistant message (the advisor's answers one named `advisor`,
agents-and-tools/tool-use/advisor-tool)."""
SERVER_TOOL_USE_TYPES = frozenset({"server_tool_use", "mcp_tool_use"})
NESTED_ONLY_TYPES = frozenset({"tool_reference", "browser_state"})
"""Block types that appear only inside a tool_result's content."""
UNMARKED_REPLY_TYPES = frozenset({"fallback", "mcp_tool_listing"})
"""Blocks of a reply that go back with it unchanged and take no `cache_control`: a
`fallback` marks where one model's output gives way to the next, and stays in its place
between the thinking of the two (build-with-claude/refusals-and-fallback); an
`mcp_tool_listing` is the tool list an MCP toolset fetched, reused from the reply that
carries it."""
KNOWN_WIRE_TYPES = frozenset(
    {"document", "search_result", "container_upload", "image"}
    | SERVER_TOOL_USE_TYPES
    | SERVER_TOOL_RESULT_TYPES
    | NESTED_ONLY_TYPES
    | UNMARKED_REPLY_TYPES
)
"""Messages API block types kept as their JSON (`WireBlock`): validated and counted by
type, never edited (an `image` is one only when it names a Files API file; by base64 or
url it is an `ImageBlock`). Any other type not modelled here is kept the same way,
unchecked."""


class Role(enum.Enum):
    """Who wrote a message. The system prompt is separate; a `system` message is an
    instruction given mid-conversation (after a user turn), for the models that take them."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"


TOOL_CHANGE_TYPES = frozenset({"tool_addition", "tool_removal"})
"""Blocks of a `system` message that add or withdraw a tool from that point on."""


def _with_extra(wire: dict[str, JSON], extra: str) -> dict[str, JSON]:
    """`wire` with the fields a block kept unmodelled (`extra`, a JSON object's text)."""
    if extra:
        wire.update(json.loads(extra))
    return wire


@attrs.frozen
class TextBlock:
    text: str
    citations: tuple[JSON, ...] | None = attrs.field(default=None, hash=False)
    """The citations the model attached to this text, kept with it (`None`: none)."""
    extra: str = attrs.field(default="", kw_only=True)
    """Fields of the block this version does not model, as the text of a JSON object
    (`""`: none). Every block type modelled here has one: a field the API adds to a known
    block (a tool call's `caller`) goes back with its block unchanged."""

    def to_wire(self) -> dict[str, JSON]:
        wire: dict[str, JSON] = {"type": "text", "text": self.text}
        if self.citations is not None:
            wire["citations"] = list(self.citations)
        return _with_extra(wire, self.extra)


@attrs.frozen
class ImageBlock:
    """An image, either inline (`source_type="base64"`) or by `url`."""

    source_type: str
    media_type: str = ""
    data: str = ""
    url: str = ""
    extra: str = attrs.field(default="", kw_only=True)

    def to_wire(self) -> dict[str, JSON]:
        if self.source_type == "url":
            source: dict[str, JSON] = {"type": "url", "url": self.url}
        else:
            source = {"type": "base64", "media_type": self.media_type, "data": self.data}
        return _with_extra({"type": "image", "source": source}, self.extra)


@attrs.frozen
class ToolUseBlock:
    id: str
    name: str
    input: Mapping[str, JSON] = attrs.field(hash=False)
    extra: str = attrs.field(default="", kw_only=True)

    def to_wire(self) -> dict[str, JSON]:
        wire = {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}
        return _with_extra(wire, self.extra)


@attrs.frozen
class WireBlock:
    """A block kept exactly as the JSON it arrived as.

    Documents, images by Files API id, search results, server tool calls and their results,
    container uploads and tool references are validated and counted by their type; a type
    not known yet passes through unchecked. Either way the block goes back to the API byte
    for byte."""

    type: str
    json: str
    """The block's JSON text, keys in the order they arrived."""

    @classmethod
    def of(cls, wire: Mapping[str, JSON]) -> WireBlock:
        """The block of `wire`, without its `cache_control` (a tool definition's too): as
        for every block, a request's breakpoints are placed when it is rendered, within the
        API's four in all (build-with-claude/prompt-caching); the host's would add to them."""
        kind = wire.get("type")
        if not isinstance(kind, str) or not kind:
            raise MalformedBlockError(f"a content block needs a string 'type', got {kind!r:.80}")
        kept = _without_breakpoints(wire)
        try:
            text = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as error:
            raise MalformedBlockError(f"a {kind} block is not plain JSON: {error}") from None
        return cls(kind, text)

    @property
    def known(self) -> bool:
        """Whether the type is one of the Messages API's, rather than one not known yet."""
        return self.type in KNOWN_WIRE_TYPES

    def to_wire(self) -> dict[str, JSON]:
        wire: dict[str, JSON] = json.loads(self.json)
        return wire


def _without_breakpoints(wire: Mapping[str, JSON]) -> dict[str, JSON]:
    kept = {k: v for k, v in wire.items() if k != "cache_control"}
    tool = kept.get("tool")
    definition = tool.get("definition") if isinstance(tool, Mapping) else None
    # A tool defined in a system message's `tool_addition` may carry one in its definition
    # ("on the block or in the definition, not both").
    if (
        isinstance(tool, Mapping)
        and isinstance(definition, Mapping)
        and "cache_control" in definition
    ):
        bare = {k: v for k, v in definition.items() if k != "cache_control"}
        kept["tool"] = {**tool, "definition": bare}
    return kept


@attrs.frozen
class ToolResultBlock:
    """The outcome of one tool call. `content` keeps the shape it arrived in (string or list)."""

    tool_use_id: str
    content: str | tuple[TextBlock | ImageBlock | WireBlock, ...] = ""
    is_error: bool = False
    extra: str = attrs.field(default="", kw_only=True)

    def to_wire(self) -> dict[str, JSON]:
        wire: dict[str, JSON] = {"type": "tool_result", "tool_use_id": self.tool_use_id}
        if isinstance(self.content, str):
            wire["content"] = self.content
        else:
            wire["content"] = [block.to_wire() for block in self.content]
        if self.is_error:
            wire["is_error"] = True
        return _with_extra(wire, self.extra)

    @property
    def text(self) -> str:
        """All the text of the result, joined (search results' text too); images and
        documents are left out."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(nested_text(b) for b in self.content if nested_text(b))


@attrs.frozen
class ThinkingBlock:
    """Extended thinking. Sent back byte for byte with its signature, or not at all."""

    thinking: str
    signature: str
    extra: str = attrs.field(default="", kw_only=True)

    def to_wire(self) -> dict[str, JSON]:
        wire = {"type": "thinking", "thinking": self.thinking, "signature": self.signature}
        return _with_extra(wire, self.extra)


@attrs.frozen
class RedactedThinkingBlock:
    data: str
    extra: str = attrs.field(default="", kw_only=True)

    def to_wire(self) -> dict[str, JSON]:
        return _with_extra({"type": "redacted_thinking", "data": self.data}, self.extra)


def nested_text(block: TextBlock | ImageBlock | WireBlock) -> str:
    """The readable text of a block inside a tool result: text, or a search result's."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, WireBlock) and block.type == "search_result":
        content = block.to_wire().get("content")
        if isinstance(content, list):
            return "\n".join(
                c["text"]
                for c in content
                if isinstance(c, Mapping) and isinstance(c.get("text"), str)
            )
    return ""


Block: TypeAlias = (
    TextBlock
    | ImageBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | WireBlock
)


@attrs.frozen
class Message:
    role: Role
    content: tuple[Block, ...]
    extra: str = ""
    """A system message's own fields (`clear_at`, …), JSON in order; it may have no content."""

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    @property
    def tool_results(self) -> tuple[ToolResultBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolResultBlock))

    @property
    def starts_with_thinking(self) -> bool:
        """Whether the first block is a thinking or redacted_thinking block."""
        return bool(self.content) and isinstance(
            self.content[0], ThinkingBlock | RedactedThinkingBlock
        )

    @property
    def is_user_prompt(self) -> bool:
        """A user message that answers no tool call: it starts a new turn."""
        return self.role is Role.USER and not self.tool_results

    @property
    def text(self) -> str:
        """The plain text blocks of the message, joined."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    def to_wire(self) -> dict[str, JSON]:
        wire: dict[str, JSON] = {"role": self.role.value}
        if self.content or not self.extra:
            wire["content"] = [block.to_wire() for block in self.content]
        return _with_extra(wire, self.extra)

    @classmethod
    def user(cls, *content: Block | str) -> Message:
        return cls(Role.USER, _blocks(content))

    @classmethod
    def assistant(cls, *content: Block | str) -> Message:
        return cls(Role.ASSISTANT, _blocks(content))

    @classmethod
    def system(cls, *content: Block | str) -> Message:
        """An instruction given mid-conversation; it must follow a user turn."""
        return cls(Role.SYSTEM, _blocks(content))

    @property
    def is_system(self) -> bool:
        return self.role is Role.SYSTEM

    @classmethod
    def from_wire(cls, wire: Mapping[str, JSON]) -> Message:
        """Build a message from its Messages API form; raises `InvalidMessageError`."""
        if not isinstance(wire, Mapping):
            raise MalformedBlockError(f"a message must be an object, got {type(wire).__name__}")
        role_name = wire.get("role")
        try:
            role = Role(role_name)
        except ValueError:
            raise InvalidMessageError(
                f"role must be 'user', 'assistant' or 'system', got {role_name!r}"
            ) from None
        extra = _extra(wire, "message") if role is Role.SYSTEM else ""
        if "content" not in wire and extra:
            return cls(role, (), extra)
        content = wire.get("content")
        if isinstance(content, str):
            return cls(role, (TextBlock(content),), extra)
        if not isinstance(content, Sequence) or isinstance(content, bytes):
            raise MalformedBlockError("message content must be a string or a list of blocks")
        return cls(role, tuple(block_from_wire(b) for b in content), extra)


def _blocks(content: Sequence[Block | str]) -> tuple[Block, ...]:
    return tuple(TextBlock(c) if isinstance(c, str) else c for c in content)


def _str(wire: Mapping[str, JSON], key: str, kind: str) -> str:
    value = wire.get(key)
    if not isinstance(value, str):
        raise MalformedBlockError(f"a {kind} block needs a string {key!r}, got {value!r:.80}")
    return value


MODELLED_FIELDS: Mapping[str, frozenset[str]] = {
    "text": frozenset({"type", "text", "citations"}),
    "image": frozenset({"type", "source"}),
    "tool_use": frozenset({"type", "id", "name", "input"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
    "message": frozenset({"role", "content"}),  # a system message's
}
"""The fields each modelled block type (and a system message) reads; any other is kept in its
`extra`, but `cache_control`: a request's breakpoints are placed when it is rendered."""


def _extra(wire: Mapping[str, JSON], kind: str) -> str:
    modelled = MODELLED_FIELDS[kind]
    if wire.keys() <= modelled:
        return ""
    fields = {k: v for k, v in wire.items() if k not in modelled and k != "cache_control"}
    if not fields:
        return ""
    try:
        return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise MalformedBlockError(f"a {kind} block is not plain JSON: {error}") from None


def block_from_wire(wire: JSON) -> Block:
    """Build one content block from its Messages API form; raises `MalformedBlockError`."""
    if not isinstance(wire, Mapping):
        raise MalformedBlockError(f"a content block must be an object, got {wire!r:.80}")
    kind = wire.get("type")
    if isinstance(kind, str) and kind in MODELLED_FIELDS:
        return _modelled_block(wire, kind, _extra(wire, kind))
    # Everything else, known or not yet known, is kept as the JSON it came as.
    return WireBlock.of(wire)


def _modelled_block(wire: Mapping[str, JSON], kind: str, extra: str) -> Block:
    if kind == "text":
        citations = wire.get("citations")
        if citations is not None and not isinstance(citations, list | tuple):
            raise MalformedBlockError("a text block's 'citations' must be a list")
        return TextBlock(
            _str(wire, "text", "text"),
            tuple(citations) if citations is not None else None,
            extra=extra,
        )
    if kind == "image":
        source = wire.get("source")
        if not isinstance(source, Mapping):
            raise MalformedBlockError("an image block needs a 'source' object")
        if source.get("type") == "url":
            return ImageBlock("url", url=_str(source, "url", "image url"), extra=extra)
        if source.get("type") == "base64":
            return ImageBlock(
                "base64",
                media_type=_str(source, "media_type", "image"),
                data=_str(source, "data", "image"),
                extra=extra,
            )
        if source.get("type") == "file":
            # By Files API id: kept as it came (`WireBlock`), as a document by file is.
            return WireBlock.of(wire)
        raise MalformedBlockError(f"unsupported image source type {source.get('type')!r}")
    if kind == "tool_use":
        tool_input = wire.get("input", {})
        if not isinstance(tool_input, Mapping):
            raise MalformedBlockError("a tool_use block's 'input' must be an object")
        return ToolUseBlock(
            _str(wire, "id", "tool_use"), _str(wire, "name", "tool_use"), tool_input, extra=extra
        )
    if kind == "tool_result":
        raw = wire.get("content", "")
        content: str | tuple[TextBlock | ImageBlock | WireBlock, ...]
        if isinstance(raw, str):
            content = raw
        elif isinstance(raw, Sequence):
            nested = tuple(block_from_wire(b) for b in raw)
            for block in nested:
                if not isinstance(block, TextBlock | ImageBlock | WireBlock):
                    raise MalformedBlockError(
                        "tool_result content may hold text, images, documents, search results "
                        "and tool references, not tool calls or thinking"
                    )
            content = nested  # type: ignore[assignment]
        else:
            raise MalformedBlockError("a tool_result's 'content' must be a string or a list")
        is_error = wire.get("is_error", False)
        if not isinstance(is_error, bool):
            raise MalformedBlockError("a tool_result's 'is_error' must be true or false")
        tool_use_id = _str(wire, "tool_use_id", "tool_result")
        return ToolResultBlock(tool_use_id, content, is_error, extra=extra)
    if kind == "thinking":
        signature = wire.get("signature")
        return ThinkingBlock(
            _str(wire, "thinking", "thinking"),
            signature if isinstance(signature, str) else "",
            extra=extra,
        )
    return RedactedThinkingBlock(_str(wire, "data", "redacted_thinking"), extra=extra)
