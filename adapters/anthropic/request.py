"""Rendering a context as an Anthropic Messages API request body."""

from __future__ import annotations

from typing import Any

from domain.session import Context


def render_request(context: Context, *, model: str, max_tokens: int) -> dict[str, Any]:
    """The complete `POST /v1/messages` body for `context`: model, max_tokens, system,
    messages and tools (the last two only when present)."""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    if context.system:
        body["system"] = context.system
    body["messages"] = [message.to_wire() for message in context.messages]
    if context.tools:
        body["tools"] = [dict(tool) for tool in context.tools]
    return body
