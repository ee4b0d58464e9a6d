"""A stand-in for `tqdm` that records what a command's bar was told, on any output.

The real bar shows only when stderr is a terminal, which a test's never is; this one takes
its place in `abridged.adapters.cli.progress` and keeps every update instead of drawing it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import pytest


class RecordingBar:
    made: ClassVar[list[RecordingBar]] = []

    def __init__(
        self, iterable: Iterable[Any] | None = None, *, total: int | None = None, **options: Any
    ) -> None:
        self.iterable = iterable
        self.total = total
        self.description: str = options["desc"]
        self.descriptions: list[str] = []
        self.updates: list[int] = []
        self.to_stderr = options["file"] is sys.stderr and sys.stderr is not sys.stdout
        self.closed = False
        RecordingBar.made.append(self)

    def __iter__(self) -> Iterator[Any]:
        assert self.iterable is not None
        for item in self.iterable:
            yield item
            self.updates.append(1)

    def update(self, n: int) -> None:
        self.updates.append(n)

    def set_description_str(self, text: str, refresh: bool = True) -> None:
        self.descriptions.append(text)

    def close(self) -> None:
        self.closed = True


def recording_bars(monkeypatch: pytest.MonkeyPatch) -> list[RecordingBar]:
    """Every bar the command makes from now on, in order."""
    made: list[RecordingBar] = []
    monkeypatch.setattr(RecordingBar, "made", made)
    monkeypatch.setattr("abridged.adapters.cli.progress.tqdm", RecordingBar)
    return made
