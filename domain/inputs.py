"""Checks on what a caller hands in, beyond the shape of one message: its size, whether JSON can
carry it, and the tool definitions a session starts with.

Each raises a typed `SessionError` before anything is recorded, so bad input costs nothing and
leaves no trace in the store.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence

from abridged.domain.errors import (
    InvalidMessageError,
    InvalidToolDefinitionError,
    InvalidUsageError,
    MalformedBlockError,
    MessageTooLargeError,
    UnencodableContentError,
)
from abridged.domain.messages import JSON, TOOL_NAME_PATTERN, Message, Role
from abridged.domain.replies import shown_reply
from abridged.domain.reply_shapes import check_server_turn
from abridged.domain.validation import check_blocks, check_cache_control, check_sequence

DEFAULT_MAX_MESSAGE_BYTES = 6_000_000
"""The largest message (its Messages API JSON, UTF-8) a session accepts by default. The API
takes at most 32 MB per request and 5 MB per image; a single message larger than this is
almost always a runaway tool output, and one of 8 MB stalls some PostgreSQL set-ups."""

MAX_JSON_DEPTH = 128
"""The deepest nesting of a tool input (or definition) serialized; deeper is refused
(`UnencodableContentError`). Real tool inputs nest a few levels; every walk of a message
stays far from Python's recursion limit below this."""

MAX_TOKEN_COUNT = 100_000_000
"""The largest token count accepted from a caller (usage, a request's estimate): above any
model's window by far; a larger one is a bug that would skew every later estimate."""


def encoded_size(value: JSON, where: str, compact: str | None = None) -> int:
    """The size in bytes of `value` as UTF-8 JSON; raises `UnencodableContentError` when JSON
    cannot carry it (a lone surrogate, nesting deeper than `MAX_JSON_DEPTH`). `compact`, the
    same value's JSON with `separators=(",", ":")`, spares encoding a large value again:
    the size is then its size plus a byte for each separator's space."""
    depth = _depth(value, where)
    if depth > MAX_JSON_DEPTH:
        raise UnencodableContentError(
            f"{where} is nested {depth} levels deep; at most {MAX_JSON_DEPTH} are accepted"
        )
    spaces = _separator_spaces(value) if compact is not None else None
    if compact is not None and spaces is not None:
        try:
            return len(compact.encode("utf-8")) + spaces
        except UnicodeEncodeError:
            pass  # said below, at its place in the text the size is of
    try:
        # `allow_nan=False`: NaN and infinities are not JSON; the API refuses a request
        # holding them, so a message holding them would poison every later request.
        return len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    except UnicodeEncodeError as error:
        raise UnencodableContentError(
            f"{where} holds a character UTF-8 cannot encode (a lone surrogate at "
            f"{error.start}); the API would refuse it"
        ) from None
    except (TypeError, ValueError) as error:
        raise UnencodableContentError(f"{where} is not JSON: {error}") from None


def check_message_size(message: Message, limit: int, compact: str | None = None) -> int:
    """The message's size in bytes; raises `MessageTooLargeError` over `limit`, and
    `UnencodableContentError` when it cannot be serialized. `compact`: its wire JSON without
    spaces, when the caller has it (see `encoded_size`)."""
    size = encoded_size(message.to_wire(), f"the {message.role.value} message", compact)
    if size > limit:
        raise MessageTooLargeError(
            f"the {message.role.value} message is {size:,} bytes, over the limit of "
            f"{limit:,} (max_message_bytes); shorten or truncate it before appending",
            size=size,
            limit=limit,
        )
    return size


def tool_key(tool: Mapping[str, JSON]) -> str:
    """What tells a tool definition from the others: its name, or for an MCP toolset (which
    has none) its server's."""
    if tool.get("type") == "mcp_toolset":
        return f"mcp_toolset:{tool.get('mcp_server_name')}"
    return str(tool.get("name"))


MAX_BREAKPOINTS = 4
"""The most `cache_control` breakpoints a request may carry."""


def _check_tool_marks(tools: Sequence[Mapping[str, JSON]]) -> None:
    """The host's `cache_control` marks on its tools, sent with every request, must be ones
    the API takes: `{"type": "ephemeral"}` with an optional `ttl` of "5m" or "1h", at most
    `MAX_BREAKPOINTS`, and no 1-hour mark after a 5-minute one (tools come first in cache
    order). `render_request` leaves the library's own marks the room these leave."""
    marks = 0
    short_seen = False
    for index, tool in enumerate(tools):
        control = tool.get("cache_control")
        if control is None:
            continue
        where = f"tools[{index}]"
        try:
            check_cache_control({"cache_control": control}, where)
        except MalformedBlockError as error:
            raise InvalidToolDefinitionError(str(error)) from None
        marks += 1
        if marks > MAX_BREAKPOINTS:
            raise InvalidToolDefinitionError(
                f"{where}: at most {MAX_BREAKPOINTS} cache_control breakpoints fit a request"
            )
        hour = isinstance(control, Mapping) and control.get("ttl") == "1h"
        if hour and short_seen:
            raise InvalidToolDefinitionError(
                f"{where}: a 1h cache_control may not follow a 5m one (the longer comes first)"
            )
        short_seen = short_seen or not hour


def check_tool_definitions(tools: Sequence[Mapping[str, JSON]]) -> None:
    """Raises `InvalidToolDefinitionError` for a tool the Messages API would refuse: every tool
    needs a unique `name` matching `[a-zA-Z0-9_-]{1,64}`, and a custom tool an `input_schema`
    object whose `type` is "object". Server tools (with a `type` other than "custom") bring
    their own schema. An MCP toolset (`"type": "mcp_toolset"`) has no name: it names its
    server (`mcp_server_name`), once."""
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise InvalidToolDefinitionError("tools must be a list of tool definitions")
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, Mapping):
            raise InvalidToolDefinitionError(f"{where} must be an object")
    _check_tool_marks(tools)
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if tool.get("type") == "mcp_toolset":
            server = tool.get("mcp_server_name")
            if not isinstance(server, str) or not server:
                raise InvalidToolDefinitionError(
                    f"{where}: an mcp_toolset needs its mcp_server_name"
                )
            if tool_key(tool) in seen:
                raise InvalidToolDefinitionError(f"{where}: MCP server {server!r} has two toolsets")
            seen.add(tool_key(tool))
            encoded_size(dict(tool), where)
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
            raise InvalidToolDefinitionError(
                f"{where}: name {name!r:.80} must match [a-zA-Z0-9_-]{{1,64}}"
            )
        if name in seen:
            raise InvalidToolDefinitionError(f"{where}: tool {name!r} is defined twice")
        seen.add(name)
        kind = tool.get("type", "custom")
        if kind in (None, "custom"):
            schema = tool.get("input_schema")
            if not isinstance(schema, Mapping) or schema.get("type") != "object":
                raise InvalidToolDefinitionError(
                    f"{where} ({name}): input_schema must be a JSON schema object with "
                    "'type': 'object'"
                )
        encoded_size(dict(tool), where)


def first_invalid(
    messages: Sequence[Message], max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> tuple[int, InvalidMessageError] | None:
    """The first message of a whole conversation that a session would refuse, with the error,
    or None: each message on its own (assistant ones as model replies), its size, and its
    place after the one before. Checking all of it first means a conversation fed from a file
    is refused whole instead of leaving a session half made.

    Tool ids reused after a compaction are legitimate, so reuse is left to the session."""
    previous: Message | None = None
    spoken: list[Message] = []
    for index, message in enumerate(messages):
        try:
            check_message_size(message, max_message_bytes)
            reply = message.role is Role.ASSISTANT
            check_blocks(shown_reply(message) if reply else message)
            check_sequence(previous, message, tuple)
            earlier = functools.partial(_before_last, tuple(spoken))
            check_server_turn(spoken[-1] if spoken else None, earlier, message)
        except InvalidMessageError as error:
            return index, error
        previous = message
        if not message.is_system:
            spoken = [*spoken[-1:], message]
    return None


def _before_last(spoken: tuple[Message, ...]) -> Message | None:
    return spoken[-2] if len(spoken) > 1 else None


def _depth(value: JSON, where: str) -> int:
    """How deeply `value` nests, counted without recursion (so any depth is measured);
    `UnencodableContentError` for an object key that is not a string: JSON would write
    `{1: "a"}` as `{"1": "a"}`, so a request would differ from the same session loaded
    from the store, and `{1: "a", "1": "b"}` would carry the key twice."""
    deepest = 0
    stack: list[tuple[JSON, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            deepest = max(deepest, depth)
            for key in item:
                if not isinstance(key, str):
                    raise UnencodableContentError(
                        f"{where} has an object key that is not a string: {key!r:.40}"
                    )
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _separator_spaces(value: JSON) -> int | None:
    """How many separators `json.dumps` writes with a space after it (", " and ": ") in
    `value`; `None` when it holds a float JSON cannot carry (NaN, infinities)."""
    spaces = 0
    stack: list[JSON] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            spaces += max(2 * len(item) - 1, 0)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            spaces += max(len(item) - 1, 0)
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return None
    return spaces


def check_token_count(value: object, what: str, *, zero: bool = True) -> int:
    """`value` as a token count a caller reported; raises `InvalidUsageError` when it is not
    a whole number between 0 (1 without `zero`) and `MAX_TOKEN_COUNT`."""
    low = 0 if zero else 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidUsageError(f"{what} must be a whole number, got {value!r:.40}")
    if not low <= value <= MAX_TOKEN_COUNT:
        raise InvalidUsageError(
            f"{what} must be between {low} and {MAX_TOKEN_COUNT:,}, got {value:,}"[:200]
        )
    return value
