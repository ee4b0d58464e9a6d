"""What a host passes in, converted once at the boundary: dicts, or the anthropic SDK's objects.

The SDK's `Message` / `BetaMessage`, its content blocks and its `Usage` are pydantic models;
they are read by their JSON form (`to_dict()`, else `model_dump()`), duck-typed, so the
application does not depend on the SDK. A reply's usage comes with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from abridged.domain.errors import MalformedBlockError
from abridged.domain.messages import JSON, Message
from abridged.domain.usage import Usage, with_reply_report

USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def plain(value: Any) -> JSON:
    """`value` as JSON values: SDK models (at any depth) by their API form, the rest as is."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        # The SDK's own serializer: the fields the API sent, by their API names.
        return plain(to_dict())
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return plain(model_dump(mode="json", exclude_none=True))
    return value


def as_message(message: Message | Mapping[str, JSON] | Any) -> Message:
    """A `Message` from a `Message`, its Messages API dict (blocks may be SDK objects), or
    an SDK `Message` / `BetaMessage`; raises `InvalidMessageError` for anything else."""
    if isinstance(message, Message):
        return message
    wire = plain(message)
    if not isinstance(wire, Mapping):
        raise MalformedBlockError(
            f"a message must be an object or an SDK message, got {type(message).__name__}"
        )
    return Message.from_wire(wire)


def as_usage(usage: Usage | Mapping[str, JSON] | Any | None) -> Usage | None:
    """Provider usage from a `Usage`, the API's `usage` JSON or the SDK's `Usage` object.
    Missing or null counts are 0; unknown fields are ignored."""
    if usage is None or isinstance(usage, Usage):
        return usage
    values = plain(usage)
    if not isinstance(values, Mapping):
        raise MalformedBlockError(f"usage must be an object, got {type(usage).__name__}")
    counts: dict[str, Any] = {}
    for name in USAGE_FIELDS:
        value = values.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MalformedBlockError(f"usage {name} must be a whole number, got {value!r}")
        counts[name] = value or 0
    return Usage(**counts)


def reply_usage(message: Any) -> Usage | None:
    """The usage an SDK reply (or its dict) carries, if any."""
    if isinstance(message, Message):
        return None
    usage = (
        message.get("usage") if isinstance(message, Mapping) else getattr(message, "usage", None)
    )
    if usage is None:
        return None
    counted = as_usage(usage)
    reply = plain(message)
    if counted is None or not isinstance(reply, Mapping):
        return counted
    return with_reply_report(counted, reply)


__all__: Sequence[str] = ("as_message", "as_usage", "plain", "reply_usage")
