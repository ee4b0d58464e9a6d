"""Ports: what the application needs from the outside world.

Each port has a fake (in `tests/support/fakes.py`) and one contract test suite that runs
against the fake and every real adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from domain.messages import Message


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text, offline and deterministically."""

    @property
    def name(self) -> str:
        """A stable name for the counting scheme, recorded with each session."""
        ...

    def count(self, text: str) -> int:
        """The number of tokens in `text`; 0 for the empty string, never negative."""
        ...


class SummarizerError(Exception):
    """The summarizer could not produce a summary (down, refused, timed out)."""


@attrs.frozen
class Summary:
    """What a summarizer wrote, and what writing it cost."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0


class Summarizer(Protocol):
    """Writes the text that stands for a range of messages in later requests."""

    @property
    def name(self) -> str:
        """Which summarizer this is (recorded in `CompactionCompleted`)."""
        ...

    def summarize(
        self, messages: Sequence[Message], *, max_tokens: int, instructions: str | None = None
    ) -> Summary:
        """A summary of `messages` of at most `max_tokens` tokens; raises `SummarizerError`."""
        ...
