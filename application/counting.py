"""The token counter as the service uses it: held to its contract at the boundary.

Every stored count, estimate and budget is a sum of what the `TokenCounter` port returns, and
those counts are recorded in the session's events. A host's counter that returns a negative
number, a string or `None`, or that raises, would otherwise fail deep inside a command (or,
worse, be recorded and break every later estimate). `CheckedCounter` raises
`TokenCounterError` instead, before anything is written; the command can simply be run again
once the counter works. Two near misses are common in hand-written counters and are taken as
meant: a finite, non-negative float is rounded up (`len(text) / 4`), and 0 for non-empty text
counts 1, so no text is ever free in a budget. Each is logged once per counter.
"""

from __future__ import annotations

import logging
import math

from abridged.application.ports import TokenCounter, TokenCounterError, approximates

__all__ = ["CheckedCounter"]

logger = logging.getLogger(__name__)


class CheckedCounter:
    """Wraps a `TokenCounter`: the same name and counts, held to the port's contract."""

    def __init__(self, counter: TokenCounter) -> None:
        self.inner = counter
        self._warned: set[str] = set()

    @property
    def name(self) -> str:
        """The wrapped counter's name."""
        return self.inner.name

    @property
    def approximate(self) -> bool:
        """Whether the wrapped counter approximates the model's tokenizer (`approximates`)."""
        return approximates(self.inner)

    def count(self, text: str) -> int:
        """The wrapped counter's count of `text`, a whole number, at least 1 for non-empty
        text; raises `TokenCounterError` when the counter raises or returns no count."""
        try:
            value: object = self.inner.count(text)
        except TokenCounterError:
            raise
        except Exception as error:
            raise TokenCounterError(
                f"token counter {self._name()} failed: {type(error).__name__}: {error}"
            ) from error
        if isinstance(value, float) and math.isfinite(value) and value >= 0:
            self._warn("float", "returned a float; rounding it up")
            value = math.ceil(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TokenCounterError(
                f"token counter {self._name()} returned {value!r:.40} "
                f"({type(value).__name__}): a count is a whole number, 0 or more"
            )
        if value == 0 and text:
            self._warn("zero", "counted 0 tokens for non-empty text; counting 1")
            return 1
        return value

    def _name(self) -> str:
        try:
            return repr(self.inner.name)
        except Exception:  # a counter broken enough to fail here still gets its error
            return type(self.inner).__name__

    def _warn(self, kind: str, what: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            logger.warning("token counter %s %s", self._name(), what)
