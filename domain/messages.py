"""Messages and content blocks: the Anthropic Messages content model as value objects.

Every block knows its wire form (`to_wire`) and can be rebuilt from it (`block_from_wire`),
so a message survives a round trip through the event store byte for byte: thinking blocks
and their signatures in particular must come back exactly as the model produced them.
"""

from __future__ import annotations

import enum
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


class Role(enum.Enum):
    """Who wrote a message. There is no system role: the system prompt is separate."""

    USER = "user"
    ASSISTANT = "assistant"


@attrs.frozen
class TextBlock:
    text: str

    def to_wire(self) -> dict[str, JSON]:
        return {"type": "text", "text": self.text}


@attrs.frozen
class ImageBlock:
    """An image, either inline (`source_type="base64"`) or by `url`."""

    source_type: str
    media_type: str = ""
    data: str = ""
    url: str = ""

    def to_wire(self) -> dict[str, JSON]:
        if self.source_type == "url":
            return {"type": "image", "source": {"type": "url", "url": self.url}}
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": self.media_type, "data": self.data},
        }


@attrs.frozen
class ToolUseBlock:
    id: str
    name: str
    input: Mapping[str, JSON] = attrs.field(hash=False)

    def to_wire(self) -> dict[str, JSON]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


@attrs.frozen
class ToolResultBlock:
    """The outcome of one tool call. `content` keeps the shape it arrived in (string or list)."""

    tool_use_id: str
    content: str | tuple[TextBlock | ImageBlock, ...] = ""
    is_error: bool = False

    def to_wire(self) -> dict[str, JSON]:
        wire: dict[str, JSON] = {"type": "tool_result", "tool_use_id": self.tool_use_id}
        if isinstance(self.content, str):
            wire["content"] = self.content
        else:
            wire["content"] = [block.to_wire() for block in self.content]
        if self.is_error:
            wire["is_error"] = True
        return wire

    @property
    def text(self) -> str:
        """All the text of the result, joined; images are left out."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


@attrs.frozen
class ThinkingBlock:
    """Extended thinking. Sent back byte for byte with its signature, or not at all."""

    thinking: str
    signature: str

    def to_wire(self) -> dict[str, JSON]:
        return {"type": "thinking", "thinking": self.thinking, "signature": self.signature}


@attrs.frozen
class RedactedThinkingBlock:
    data: str

    def to_wire(self) -> dict[str, JSON]:
        return {"type": "redacted_thinking", "data": self.data}


Block: TypeAlias = (
    TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock
)


@attrs.frozen
class Message:
    role: Role
    content: tuple[Block, ...]

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    @property
    def tool_results(self) -> tuple[ToolResultBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolResultBlock))

    @property
    def is_user_prompt(self) -> bool:
        """A user message that answers no tool call: it starts a new turn."""
        return self.role is Role.USER and not self.tool_results

    @property
    def text(self) -> str:
        """The plain text blocks of the message, joined."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    def to_wire(self) -> dict[str, JSON]:
        return {"role": self.role.value, "content": [block.to_wire() for block in self.content]}

    @classmethod
    def user(cls, *content: Block | str) -> Message:
        return cls(Role.USER, _blocks(content))

    @classmethod
    def assistant(cls, *content: Block | str) -> Message:
        return cls(Role.ASSISTANT, _blocks(content))

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
                f"role must be 'user' or 'assistant', got {role_name!r}"
            ) from None
        content = wire.get("content")
        if isinstance(content, str):
            return cls(role, (TextBlock(content),))
        if not isinstance(content, Sequence) or isinstance(content, bytes):
            raise MalformedBlockError("message content must be a string or a list of blocks")
        return cls(role, tuple(block_from_wire(b) for b in content))


def _blocks(content: Sequence[Block | str]) -> tuple[Block, ...]:
    return tuple(TextBlock(c) if isinstance(c, str) else c for c in content)


def _str(wire: Mapping[str, JSON], key: str, kind: str) -> str:
    value = wire.get(key)
    if not isinstance(value, str):
        raise MalformedBlockError(f"a {kind} block needs a string {key!r}, got {value!r:.80}")
    return value


def block_from_wire(wire: JSON) -> Block:
    """Build one content block from its Messages API form; raises `MalformedBlockError`."""
    if not isinstance(wire, Mapping):
        raise MalformedBlockError(f"a content block must be an object, got {wire!r:.80}")
    kind = wire.get("type")
    if kind == "text":
        return TextBlock(_str(wire, "text", "text"))
    if kind == "image":
        source = wire.get("source")
        if not isinstance(source, Mapping):
            raise MalformedBlockError("an image block needs a 'source' object")
        if source.get("type") == "url":
            return ImageBlock("url", url=_str(source, "url", "image url"))
        if source.get("type") == "base64":
            return ImageBlock(
                "base64",
                media_type=_str(source, "media_type", "image"),
                data=_str(source, "data", "image"),
            )
        raise MalformedBlockError(f"unsupported image source type {source.get('type')!r}")
    if kind == "tool_use":
        tool_input = wire.get("input", {})
        if not isinstance(tool_input, Mapping):
            raise MalformedBlockError("a tool_use block's 'input' must be an object")
        return ToolUseBlock(
            _str(wire, "id", "tool_use"), _str(wire, "name", "tool_use"), tool_input
        )
    if kind == "tool_result":
        raw = wire.get("content", "")
        content: str | tuple[TextBlock | ImageBlock, ...]
        if isinstance(raw, str):
            content = raw
        elif isinstance(raw, Sequence):
            nested = tuple(block_from_wire(b) for b in raw)
            for block in nested:
                if not isinstance(block, TextBlock | ImageBlock):
                    raise MalformedBlockError(
                        "tool_result content may hold only text and image blocks"
                    )
            content = nested  # type: ignore[assignment]
        else:
            raise MalformedBlockError("a tool_result's 'content' must be a string or a list")
        is_error = wire.get("is_error", False)
        if not isinstance(is_error, bool):
            raise MalformedBlockError("a tool_result's 'is_error' must be true or false")
        return ToolResultBlock(_str(wire, "tool_use_id", "tool_result"), content, is_error)
    if kind == "thinking":
        signature = wire.get("signature")
        return ThinkingBlock(
            _str(wire, "thinking", "thinking"), signature if isinstance(signature, str) else ""
        )
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(_str(wire, "data", "redacted_thinking"))
    raise MalformedBlockError(f"unknown content block type {kind!r}")
