"""The Messages API's rules for a `role: "system"` message itself: its own fields
(`clear_at`, `output_config`) and where it may stand. `abridged.domain.validation` applies
them with the rest."""

from __future__ import annotations

import json

from abridged.domain.errors import (
    EmptyContentError,
    MalformedBlockError,
    MisplacedSystemMessageError,
)
from abridged.domain.messages import Message, Role

__all__ = ["CLEAR_AT", "check_system_fields", "check_system_placement"]

CLEAR_AT = (None, "next_user_message", "never")
"""What a system message's `clear_at` may be (SDK `BetaSystemMessageParam`): `never` (the
default) shows it on every request that holds it; `next_user_message` only for the user turn
it follows (the message stays in `messages`, sent unchanged)."""


def check_system_fields(message: Message) -> None:
    """A system message's own fields: `clear_at` one of `CLEAR_AT`, `output_config` an
    object; without content, an `output_config` with a field (SDK `BetaSystemMessageParam`:
    "a message with neither content nor output_config fields is rejected")."""
    fields = json.loads(message.extra) if message.extra else {}
    if fields.get("clear_at") not in CLEAR_AT:
        raise MalformedBlockError(
            f"a system message's clear_at is 'next_user_message' or 'never', got "
            f"{fields.get('clear_at')!r:.80}"
        )
    config = fields.get("output_config")
    if config is not None and not isinstance(config, dict):
        raise MalformedBlockError("a system message's output_config must be an object")
    if not message.content and not config:
        raise EmptyContentError(
            "a system message needs at least one block, or an output_config with a field"
        )


def check_system_placement(previous: Message | None, message: Message) -> None:
    """The Messages API's placement rules for `role: "system"` messages: after a user turn
    (or another system message), never first, and followed by an assistant turn."""
    if message.role is Role.SYSTEM:
        if previous is None:
            raise MisplacedSystemMessageError(
                "a system message cannot be the first message: put the instructions in the "
                "system prompt, or send them after the first user message",
                rule="first",
            )
        if previous.role is Role.ASSISTANT:
            raise MisplacedSystemMessageError(
                "a system message must follow a user turn, not an assistant reply: append it "
                "after the next user message",
                rule="after-assistant",
            )
    elif message.role is Role.USER:
        raise MisplacedSystemMessageError(
            "a system message must be followed by an assistant turn (or be the last message): "
            "a user message cannot come right after it; put the system message after this one",
            rule="before-user",
        )
