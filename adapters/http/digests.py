"""Digests of messages and of history prefixes, by which `abridged serve` finds where a
client's history and a stored session part (`abridged.adapters.http.history`).

A message's digest is of the message as abridged stores and sends it, less what a client
cannot be told apart by: fields set to null, a reply's whitespace-only text blocks, and,
for a block kept as JSON and a tool call's input, the order of the keys of every object.
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


def message_digest(message: Message) -> str:
    """The digest of a message as abridged stores and sends it. A field set to null counts
    as absent: an SDK writes back a reply's optional fields as nulls the API left out. A
    reply's whitespace-only text blocks do not count: the API streams them (Claude Code's
    replies often start with one) and refuses them in a request, so a client sends the reply
    back without them, as abridged's own requests show it (`abridged.domain.replies`)."""
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
    if _kept_as_sent(message):
        # A block kept as JSON, or a field abridged does not model, keeps its keys in the
        # order they came: a client sends a reply back in its SDK's order, not the API's.
        text = json.dumps(present, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    elif present == wire:
        # Without nulls, the text is the one its event stores: encoded once for both.
        text = message_json(message)
    else:
        text = json.dumps(present, ensure_ascii=False, separators=(",", ":"))
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
