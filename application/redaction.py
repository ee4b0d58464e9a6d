"""The redactors a host chooses from: the default patterns, its own added, or none.

The pattern matching is `abridged.domain.redaction`; these are the `Redactor` port's
implementations the service and the command line apply to derived text.
"""

from __future__ import annotations

from collections.abc import Iterable

from abridged.application.ports import Redactor
from abridged.domain.messages import Message
from abridged.domain.redaction import (
    DEFAULT_PATTERNS,
    SecretPattern,
    redact_message,
    redact_message_with,
    redact_text,
)

__all__ = [
    "DefaultRedactor",
    "NoRedaction",
    "SecretPattern",
    "redact_each",
    "redact_messages",
    "redact_value",
]


class DefaultRedactor:
    """Redacts the secret formats of `DEFAULT_PATTERNS`, then the host's `extra` patterns
    (`SecretPattern(kind, regex, group=0)`), or only `patterns` when given."""

    def __init__(
        self,
        extra: Iterable[SecretPattern] = (),
        *,
        patterns: Iterable[SecretPattern] | None = None,
    ) -> None:
        base = DEFAULT_PATTERNS if patterns is None else tuple(patterns)
        self.patterns: tuple[SecretPattern, ...] = (*base, *extra)

    def redact(self, text: str) -> str:
        """`text` with every secret the patterns find replaced by `[redacted <kind>]`."""
        return redact_text(text, self.patterns)


class NoRedaction:
    """Redacts nothing: for a host that redacts its messages before they are appended."""

    def redact(self, text: str) -> str:
        """`text`, unchanged."""
        return text


def redact_messages(redactor: Redactor, messages: Iterable[Message]) -> tuple[Message, ...]:
    """Each message with the redactor applied to every text it holds (`redact_each`)."""
    return tuple(redact_each(redactor, m) for m in messages)


def redact_each(redactor: Redactor, message: Message) -> Message:
    """`message` with the redactor applied to every text it holds (`redact_message`). A
    `DefaultRedactor` first narrows its patterns to those that may match one of the message's
    strings (`redact_message_with`: the same message, faster when it holds thousands); any
    other redactor is applied to each string."""
    if isinstance(redactor, NoRedaction):
        return message
    # A subclass that redacts otherwise is applied as any other redactor.
    if isinstance(redactor, DefaultRedactor) and type(redactor).redact is DefaultRedactor.redact:
        return redact_message_with(message, redactor.patterns)
    return redact_message(message, redactor.redact)


def redact_value(redactor: Redactor, value: object) -> object:
    """`value` with every string in it redacted, through dicts, lists and tuples (for
    records printed as JSON or text); other values unchanged."""
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, dict):
        return {k: redact_value(redactor, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(redactor, v) for v in value]
    return value


def storable(text: str) -> str:
    """`text` with what UTF-8 cannot encode (a lone surrogate an error quoted) written as its
    escape (`\\ud800`): text the session stores and sends as it was given."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error_text(redactor: Redactor, error: BaseException) -> str:
    """An error's text as the session stores it: secrets redacted, `storable`."""
    return storable(redactor.redact(str(error)))
