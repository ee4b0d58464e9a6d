"""Progress bars for long commands, shown only to a person watching a terminal.

Bars go to stderr so stdout stays the command's output; `tqdm` with `disable=None` turns
itself off when stderr is not a terminal (a pipe, a file, a CI log), so scripts never see one.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def progress(
    items: Iterable[T], *, total: int | None = None, description: str, unit: str = "it"
) -> Iterator[T]:
    """`items`, yielded one by one while a bar counts them on a terminal's stderr.

    `total` defaults to `len(items)` when it has one; without it the bar shows a count."""
    if total is None and isinstance(items, Sized):
        total = len(items)
    bar = tqdm(
        items,
        total=total,
        desc=description,
        unit=unit,
        file=sys.stderr,
        disable=None,  # None: off unless stderr is a terminal
        leave=False,
        dynamic_ncols=True,
    )
    try:
        yield from bar
    finally:
        bar.close()


@contextlib.contextmanager
def counting(
    *, total: int | None, description: str, unit: str = "it"
) -> Iterator[Callable[[int], None]]:
    """A bar advanced by the work itself: the context yields `advance(n)`, for work that
    reports progress through a callback rather than by being iterated."""
    bar = tqdm(
        total=total,
        desc=description,
        unit=unit,
        file=sys.stderr,
        disable=None,
        leave=False,
        dynamic_ncols=True,
    )
    try:

        def advance(n: int) -> None:
            bar.update(n)

        yield advance
    finally:
        bar.close()
