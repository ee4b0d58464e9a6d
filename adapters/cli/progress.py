"""Progress bars for long commands, shown only to a person watching a terminal.

Bars go to stderr so stdout stays the command's output; `tqdm` with `disable=None` turns
itself off when stderr is not a terminal (a pipe, a file, a CI log), so scripts never see one.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from pathlib import Path
from typing import Protocol, TypeVar

from tqdm import tqdm

from abridged.adapters.cli.terminal import printable
from abridged.adapters.compressed import is_gzip

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


class Advance(Protocol):
    """Moves a `counting` bar on by `n`; `now`, when given, names the work under way."""

    def __call__(self, n: int, /, *, now: str | None = None) -> None: ...


@contextlib.contextmanager
def counting(
    *, total: int | None, description: str, unit: str = "it", unit_scale: bool = False
) -> Iterator[Advance]:
    """A bar advanced by the work itself: the context yields `advance(n)`, for work that
    reports progress through a callback rather than by being iterated. `unit_scale` shows
    large counts as 1.2M (for bytes)."""
    bar = tqdm(
        total=total,
        desc=description,
        unit=unit,
        unit_scale=unit_scale,
        file=sys.stderr,
        disable=None,
        leave=False,
        dynamic_ncols=True,
    )
    try:

        def advance(n: int, /, *, now: str | None = None) -> None:
            if now is not None:
                bar.set_description_str(f"{description} {now}", refresh=False)
            bar.update(n)

        yield advance
    finally:
        bar.close()


@contextlib.contextmanager
def reading(path: Path, name: str | None = None) -> Iterator[Callable[[int], None]]:
    """A bar for reading the file at `path` (shown as `name`, by default its file name), in
    bytes of its size (a count when it has none, as a pipe has not): the context yields
    `advance(n)`."""
    try:
        # A gzip file is counted as it decompresses: its own size is no total then.
        size = None if is_gzip(path) else path.stat().st_size or None
    except OSError:
        size = None  # the reader says what is wrong with the file
    shown = printable(name or path.name, one_line=True)
    with counting(total=size, description=f"reading {shown}", unit="B", unit_scale=True) as advance:
        yield advance
