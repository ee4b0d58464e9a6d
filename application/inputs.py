"""What a host passes in, converted once at the boundary: dicts, or the anthropic SDK's objects.

The SDK's `Message` / `BetaMessage`, its content blocks and its `Usage` are pydantic models;
they are read by their JSON form (`to_dict()`, else `model_dump()`), duck-typed, so the
application does not depend on the SDK. A reply's usage comes with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from abridged.domain.errors import (
    InvalidArgumentError,
    MalformedBlockError,
    UnencodableContentError,
    UnknownSessionError,
)
from abridged.domain.inputs import MAX_JSON_DEPTH, check_token_count
from abridged.domain.messages import JSON, Message
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage, with_reply_report
from abridged.domain.validation import check_cache_control

USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


PLAIN_DEPTH = MAX_JSON_DEPTH + 8
"""How deep `plain` reads: a tool input's limit plus the levels of a message around it."""


def plain(value: Any, _depth: int = 0) -> JSON:
    """`value` as JSON values: SDK models (at any depth) by their API form, the rest as is.
    Raises `UnencodableContentError` past `PLAIN_DEPTH` levels (not a `RecursionError`)."""
    if _depth > PLAIN_DEPTH:
        raise UnencodableContentError(
            f"the input is nested more than {PLAIN_DEPTH} levels deep; a tool input may nest "
            f"at most {MAX_JSON_DEPTH}"
        )
    deeper = _depth + 1
    if isinstance(value, Mapping):
        return {key: plain(item, deeper) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, deeper) for item in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        # The SDK's own serializer: the fields the API sent, by their API names.
        return plain(to_dict(), deeper)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return plain(model_dump(mode="json", exclude_none=True), deeper)
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
    _check_cache_controls(wire.get("content"))
    return Message.from_wire(wire)


def _check_cache_controls(content: JSON) -> None:
    """Every block's `cache_control` is one the API accepts (see `check_cache_control`),
    also on the blocks whose own is not kept: a bogus one is a caller's mistake to hear of."""
    if not isinstance(content, list):
        return
    for index, block in enumerate(content):
        if isinstance(block, Mapping):
            check_cache_control(block, f"block {index}")
            _check_cache_controls(block.get("content"))


def as_usage(usage: Usage | Mapping[str, JSON] | Any | None) -> Usage | None:
    """Provider usage from a `Usage`, the API's `usage` JSON or the SDK's `Usage` object.
    Missing or null counts are 0; unknown fields are ignored. Raises `InvalidUsageError`
    for a count below 0 or over `MAX_TOKEN_COUNT`."""
    if usage is None:
        return usage
    if isinstance(usage, Usage):
        return checked_usage(usage)
    values = plain(usage)
    if not isinstance(values, Mapping):
        raise MalformedBlockError(f"usage must be an object, got {type(usage).__name__}")
    counts: dict[str, Any] = {}
    for name in USAGE_FIELDS:
        value = values.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MalformedBlockError(f"usage {name} must be a whole number, got {value!r}")
        counts[name] = value or 0
    return checked_usage(Usage(**counts))


def checked_usage(usage: Usage) -> Usage:
    """`usage` when every count is a whole number from 0 to `MAX_TOKEN_COUNT`; else
    `InvalidUsageError` (a count that feeds every later estimate must be plausible)."""
    for name in USAGE_FIELDS:
        check_token_count(getattr(usage, name), f"usage {name}")
    return usage


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


def reply_model(message: Any) -> str | None:
    """The model an SDK reply (or its dict) names as its writer, if any."""
    if isinstance(message, Message):
        return None
    model = (
        message.get("model") if isinstance(message, Mapping) else getattr(message, "model", None)
    )
    if not isinstance(model, str) or not model.strip():
        return None
    return encodable(model, "the reply's model")


__all__: Sequence[str] = ("as_message", "as_usage", "plain", "reply_model", "reply_usage")


def as_session_id(session_id: UUID | str) -> UUID:
    """A session id from a UUID or its string; raises `UnknownSessionError` for anything else
    (no session can have it)."""
    if isinstance(session_id, UUID):
        return session_id
    if isinstance(session_id, str):
        try:
            return UUID(session_id.strip())
        except ValueError:
            pass
    raise UnknownSessionError(f"no session with id {session_id!r:.80}: not a UUID")


def encodable(value: str, what: str) -> str:
    """`value`, or `InvalidArgumentError` when UTF-8 cannot encode it (a lone surrogate,
    U+D800 to U+DFFF): stored, it would fail the event's write; sent, the request."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidArgumentError(
            f"{what} holds a lone surrogate (U+D800 to U+DFFF) at {error.start}, which UTF-8 "
            "cannot encode"
        ) from None
    return value


def reason_text(value: object) -> str:
    """A withdrawal's, deletion's or requested compaction's reason: a non-blank string UTF-8
    can encode; `InvalidArgumentError` otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"reason must be a non-blank string, got {value!r:.40}")
    return encodable(value, "reason")


def optional_text(value: object, what: str, *, blank: bool = True) -> str | None:
    """`value` when it is `None` or a string (non-blank without `blank`); raises
    `InvalidArgumentError` naming `what` otherwise, before anything is recorded."""
    if value is None:
        return None
    if not isinstance(value, str) or (not blank and not value.strip()):
        kind = "a string" if blank else "a non-blank string"
        raise InvalidArgumentError(
            f"{what} must be {kind} or None, got {type(value).__name__} {value!r:.40}"
        )
    return encodable(value, what)


def check_system_text(system: str) -> None:
    """`InvalidArgumentError` for a system prompt of white space alone: the API refuses a
    blank system text, so every request would be refused ("" means none)."""
    if system and not system.strip():
        raise InvalidArgumentError(
            f'system must not be only white space, got {system!r:.40} (pass "" for none)'
        )


def optional_count(value: object, what: str) -> int | None:
    """`value` when it is `None` or an int (not a bool); `InvalidArgumentError` otherwise.
    Its range is the settings' to check (`InvalidSettingsError`)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidArgumentError(
            f"{what} must be an int or None, got {type(value).__name__} {value!r:.40}"
        )
    return value


def optional_settings(value: object) -> CompactionSettings | None:
    """`value` when it is `None` or `CompactionSettings`; a dict (or anything else) raises
    `InvalidArgumentError` pointing at `settings_from`, before anything is recorded."""
    if value is not None and not isinstance(value, CompactionSettings):
        raise InvalidArgumentError(
            f"settings must be CompactionSettings or None, got {type(value).__name__}; build "
            "them with CompactionSettings(...) or settings_from(preset, **changes)"
        )
    return value
