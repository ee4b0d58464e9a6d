"""Digests of messages and of history prefixes, by which `abridged serve` finds where a
client's history and a stored session part (`abridged.adapters.http.history`).

A message's digest is of the message as abridged stores and sends it, less what a client
cannot be told apart by: fields set to null, a reply's whitespace-only text blocks, the
spelling of numbers (those equal as doubles are one), and, for a block kept as JSON and a
tool call's input, the order of the keys of every object.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from abridged.application.transcodings import ByIdentity, message_json
from abridged.domain.messages import (
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


SAFE_INTEGER = 2**53
"""Integers up to this are doubles exactly, and every JSON library writes them alike."""


def _as_doubles(value: Any) -> Any:
    """`value` with each number as the double a JavaScript or Go client reads it as, written
    one way: an integral one as an integer (`1.0` and `1` alike; an integer past 2**53 as
    the double it rounds to), any other as Python's shortest repr. `value` itself (the same
    object) when no number changes, so the caller can tell."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, int) and not isinstance(value, bool):
        if -SAFE_INTEGER <= value <= SAFE_INTEGER:
            return value
        try:
            return int(float(value))
        except OverflowError:  # past any double: no client reads it as one
            return value
    if isinstance(value, Mapping):
        mapped = {key: _as_doubles(item) for key, item in value.items()}
        return value if all(mapped[key] is item for key, item in value.items()) else mapped
    if isinstance(value, list):
        listed = [_as_doubles(item) for item in value]
        return value if all(a is b for a, b in zip(listed, value, strict=True)) else listed
    return value


def message_digest(message: Message) -> str:
    """The digest of a message as abridged stores and sends it. A field set to null counts
    as absent: an SDK writes back a reply's optional fields as nulls the API left out. A
    reply's whitespace-only text blocks do not count: the API streams them (Claude Code's
    replies often start with one) and refuses them in a request, so a client sends the reply
    back without them, as abridged's own requests show it (`abridged.domain.replies`).
    Numbers count as the doubles they are: a reply's `1.0` (or an integer past 2**53) comes
    back from a JavaScript or Go client as `1` (rounded); the message stored and sent keeps
    its own spelling."""
    known = _recent.get(message)
    if known is not None:
        return known
    digest = _digest(_without_blank_text(message))
    _recent.put(message, digest)
    return digest


def _without_blank_text(message: Message) -> Message:
    if message.role is not Role.ASSISTANT:
        return message
    kept = tuple(
        b for b in message.content if not (isinstance(b, TextBlock) and not b.text.strip())
    )
    if not kept or len(kept) == len(message.content):
        return message
    return attrs.evolve(message, content=kept)


def _digest(message: Message) -> str:
    wire = message.to_wire()
    present = _without_nulls(wire)
    doubles = _as_doubles(present)
    if _kept_as_sent(message):
        # A block kept as JSON, or a field abridged does not model, keeps its keys in the
        # order they came: a client sends a reply back in its SDK's order, not the API's.
        text = json.dumps(doubles, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    elif doubles is present and present == wire:
        # Without nulls, the text is the one its event stores: encoded once for both.
        text = message_json(message)
    else:
        text = json.dumps(doubles, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _kept_as_sent(message: Message) -> bool:
    """Whether a block of `message` (or of a tool result in it) holds JSON in the order it
    came: a `WireBlock`, a modelled block with fields it does not model, or a tool call's
    `input` (a client whose JSON objects are maps, Go's or serde_json's, sorts its keys)."""
    for block in message.content:
        nested = block.content if isinstance(block, ToolResultBlock) else ()
        for item in (block, *(() if isinstance(nested, str) else nested)):
            if isinstance(item, WireBlock) or bool(getattr(item, "extra", "")):
                return True
            if isinstance(item, ToolUseBlock) and item.input:
                return True
    return False


RECENT_DIGESTS = 256
"""Digests kept by message identity: a message parsed from a request is digested again
when the event appending it is saved (`StoredDigests.saved`), and may be 1 MB of JSON."""
_recent: ByIdentity[str] = ByIdentity(RECENT_DIGESTS)


def chain(digests: Sequence[str]) -> str:
    """One digest for a sequence of message digests (a history prefix)."""
    return hashlib.sha256("".join(digests).encode()).hexdigest()
