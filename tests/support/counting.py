"""A token counter that remembers what it counted, for tests that replay the same text often.

Counting is deterministic, so remembering changes no count; it only saves the work of
re-tokenizing the same transcripts for every window and preset.
"""

from __future__ import annotations

from abridged.application.ports import TokenCounter


class MemoCounter:
    """Wraps a counter; each distinct text is counted once."""

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner
        self.counts: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def approximate(self) -> bool:
        return bool(getattr(self.inner, "approximate", True))

    def count(self, text: str) -> int:
        found = self.counts.get(text)
        if found is None:
            found = self.counts[text] = self.inner.count(text)
        return found
