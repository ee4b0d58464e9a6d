"""Rendering a context as an Anthropic Messages API request body, with cache breakpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from abridged.application.ports import RequestOptions
from abridged.domain.capabilities import ModelCapabilities, capabilities_for
from abridged.domain.context import Context
from abridged.domain.errors import InvalidRequestOptionsError
from abridged.domain.messages import (
    KNOWN_WIRE_TYPES,
    NESTED_ONLY_TYPES,
    UNMARKED_REPLY_TYPES,
)
from abridged.domain.reply_shapes import loop_opener
from abridged.domain.tokens import folded_system_text

MAX_BREAKPOINTS = 4
CACHE_TTLS = ("5m", "1h")


COUNT_TOKENS_FIELDS = frozenset(
    {
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "cache_control",
        "output_config",
    }
)
"""The request fields `POST /v1/messages/count_tokens` accepts; it rejects the others
(`max_tokens` first of all) as extra inputs."""


def render_request(
    context: Context,
    *,
    model: str,
    max_tokens: int,
    cache: bool = True,
    ttl: str = "5m",
    options: RequestOptions | None = None,
    capabilities: ModelCapabilities | None = None,
) -> dict[str, Any]:
    """The complete `POST /v1/messages` body for `context`: model, max_tokens, system,
    messages and tools (the last two only when present), and the `options` that are set
    (thinking, tool_choice, temperature, metadata, stop_sequences). Raises
    `InvalidRequestOptionsError` when the thinking budget is not below `max_tokens`.

    With `cache`, at most four prompt-cache breakpoints are set, where the prefix stays
    byte-stable longest: after the system prompt, after the facts ledger's segments (which a
    compaction appends to, so the next request reads the earlier ones), after the summary
    chunks, at the prune boundary (the last message before it) and on the last message
    (before any per-turn content); when that is five, the one after the summary chunks goes.
    Thinking blocks and empty text are never marked.

    `role: "system"` messages go out as such for a model whose `capabilities` take them (by
    default the row the context was prepared with, `Context.capabilities`, which holds the
    host's table; else the model's row of `abridged.domain.capabilities`); for an older model
    each becomes marked text at the end of the user message before it, so roles still
    alternate.
    """
    if ttl not in CACHE_TTLS:
        raise ValueError(f"ttl must be one of {', '.join(CACHE_TTLS)}, got {ttl!r}")
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    # Breakpoints the host set on its tool definitions count toward the API's four, and come
    # first: "Cache entries with longer TTL must appear before shorter TTLs", so after a
    # 5-minute one of the host's, ours are 5-minute ones too.
    host_marks = [tool["cache_control"] for tool in context.tools if tool.get("cache_control")]
    taken = len(host_marks)
    if any(not isinstance(m, dict) or m.get("ttl", "5m") != "1h" for m in host_marks):
        ttl = "5m"
    marker = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}
    if context.system:
        if cache and taken < MAX_BREAKPOINTS:
            body["system"] = [{"type": "text", "text": context.system, "cache_control": marker}]
            taken += 1
        else:
            body["system"] = context.system
    messages = [message.to_wire() for message in context.messages]
    if cache and messages:
        for index, limit in _breakpoints(context, len(messages), MAX_BREAKPOINTS - taken):
            at = index
            while at > 0 and not messages[at].get("content"):
                # A system message of fields only (a turn's `output_config`): the breakpoint
                # goes on the message before it.
                at -= 1
            _mark(messages[at], limit if at == index else -1, marker)
    rows = capabilities or context.capabilities or capabilities_for(model)
    if not rows.system_messages and any(m["role"] == "system" for m in messages):
        messages = folded_system_messages(messages, rows.prefix_bound_thinking)
    body["messages"] = messages
    if context.tools:
        body["tools"] = [dict(tool) for tool in context.tools]
    if options is not None:
        manual = options.thinking is not None and options.thinking.get("type") == "enabled"
        if manual and context.thinking_paused:
            # abridged had to take the open loop's thinking out of view (it could not fit
            # unchanged): with manual thinking the API takes the loop only with thinking off
            # until the next prompt. Adaptive thinking takes it as it is ("no assistant turn
            # needs to start with one", build-with-claude/thinking): the host's settings stay.
            options = attrs.evolve(options, thinking=None)
        elif manual:
            _check_tool_loop(context)
        options.check_tools(context.tools)
        body.update(_options(options, max_tokens))
    return body


def rendered(
    context: Context, model: str, max_tokens: int, options: RequestOptions | None
) -> dict[str, Any]:
    """`render_request` with caching on, as the chat models send it."""
    return render_request(context, model=model, max_tokens=max_tokens, options=options)


def folded_system_messages(
    messages: list[dict[str, Any]], bound: bool = False
) -> list[dict[str, Any]]:
    """The wire messages with each `role: "system"` message folded into the user message
    before it, as text marked as a system instruction (for models that refuse the role).
    A system message always follows a user turn, so roles keep alternating. One for its
    turn only (`clear_at`) leaves once the turn is over, but not on a model that binds
    thinking (`bound`): the replies' thinking is bound to the text it was folded into."""
    folded: list[dict[str, Any]] = []
    last_user = max((k for k, m in enumerate(messages) if m["role"] == "user"), default=-1)
    for index, message in enumerate(messages):
        if message["role"] != "system" or not folded or folded[-1]["role"] != "user":
            folded.append(message)
            continue
        if message.get("clear_at") == "next_user_message" and index < last_user and not bound:
            # Shown only for the user turn it follows, as the API shows it: that turn is over.
            continue
        # Its own fields (a turn's `output_config`) have no form in a user message.
        previous = dict(folded[-1])
        marked = map(_as_marked_text, message.get("content") or [])
        previous["content"] = [*previous["content"], *marked]
        folded[-1] = previous
    return folded


def _as_marked_text(block: dict[str, Any]) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "text", "text": folded_system_text(block)}
    if "cache_control" in block:
        text["cache_control"] = block["cache_control"]
    return text


def _check_tool_loop(context: Context) -> None:
    """With thinking on, the API requires the assistant message that opens the active tool
    loop (after the last plain user prompt) to start with its thinking."""
    opener = loop_opener(context.messages)
    if opener is not None and not opener.starts_with_thinking:
        raise InvalidRequestOptionsError(
            "thinking cannot be turned on in the middle of a tool loop whose first reply had no "
            "thinking; turn it on at the next user prompt"
        )


def count_tokens_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a Messages request body that `messages.count_tokens` accepts:
    `client.messages.count_tokens(**count_tokens_body(body))`."""
    return {key: value for key, value in body.items() if key in COUNT_TOKENS_FIELDS}


def _options(options: RequestOptions, max_tokens: int) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    options.check_for(max_tokens)
    if options.thinking is not None:
        fields["thinking"] = dict(options.thinking)
    if options.tool_choice is not None:
        fields["tool_choice"] = dict(options.tool_choice)
    if options.temperature is not None:
        fields["temperature"] = options.temperature
    if options.metadata is not None:
        fields["metadata"] = dict(options.metadata)
    if options.stop_sequences:
        fields["stop_sequences"] = list(options.stop_sequences)
    return fields


def _breakpoints(context: Context, count: int, budget: int) -> list[tuple[int, int]]:
    """(message index, number of leading blocks eligible) for each breakpoint, in order, at
    most `budget` of them."""
    wanted: list[tuple[int, int]] = []
    after_summaries: tuple[int, int] | None = None
    lead = context.compaction_block
    if lead:
        # The API's compaction block: stable until the next compaction.
        wanted.append((0, 1))
    if context.summary_messages:
        ledger = len(context.ledger)
        if ledger:
            wanted.append((lead, ledger))
        chunks = len(context.summaries) - lead
        after_summaries = (lead, ledger + chunks)
        if chunks:
            wanted.append(after_summaries)
    if context.stable_prefix > 0:
        wanted.append((context.stable_prefix - 1, -1))
    last = count - 1
    wanted.append((last, -1 - context.extra_blocks if context.extra_blocks else -1))
    if budget <= 0:
        return []
    unique: list[tuple[int, int]] = []
    for point in wanted:
        if point not in unique:
            unique.append(point)
    if len(unique) > budget and context.ledger and after_summaries in unique:
        # The ledger's end is the point a compaction leaves in place; the chunks after it
        # change at every compaction anyway, and the last message's entry covers them.
        unique.remove(after_summaries)
    if len(unique) > budget and lead:
        # The compaction block's breakpoint stays: it is the longest-lived prefix there is.
        return [unique[0], *unique[1:][len(unique) - budget :]]
    return unique[-budget:] if len(unique) > budget else unique


CACHEABLE_TYPES = (
    (frozenset({"text", "image", "tool_use", "tool_result", "compaction"}) | KNOWN_WIRE_TYPES)
    - NESTED_ONLY_TYPES
    - UNMARKED_REPLY_TYPES
)


def _mark(message: dict[str, Any], limit: int, marker: dict[str, str]) -> None:
    """Marks the last eligible block among the first `limit` (negative: all but the last
    `-limit - 1`) blocks of the message."""
    blocks = message.get("content") or []
    end = limit if limit >= 0 else len(blocks) + limit + 1
    for block in reversed(blocks[:end]):
        if block["type"] in {"thinking", "redacted_thinking"}:
            continue
        if block["type"] not in CACHEABLE_TYPES:
            continue  # a block type not known yet goes out unchanged
        if block["type"] == "text" and not block["text"].strip():
            continue
        block["cache_control"] = dict(marker)
        return
