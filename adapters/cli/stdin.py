"""A transcript read from standard input: `-` in place of a file, as Unix tools take it.

The readers go over a file more than once (the format is detected from the records, then the
messages are read), so standard input is first copied to a private temporary file (0600, in
a folder of its own, removed afterwards), in pieces, whatever its size. So is a pipe named
as a file (`abridged replay <(zcat log.jsonl.gz)`, `/dev/stdin`).
"""

from __future__ import annotations

import contextlib
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import click

__all__ = ["STDIN", "STDIN_NAME", "check_one_stdin", "transcript_file"]

STDIN = "-"
STDIN_NAME = "<stdin>"
"""How a transcript read from standard input is named in errors, notes and reports."""
_PIECE = 1 << 20


@contextlib.contextmanager
def transcript_file(path: Path) -> Iterator[tuple[Path, str]]:
    """`path` and its name; for `-`, a private copy of standard input and `<stdin>`; for a
    pipe named as a file (`<(zcat log.gz)`, `/dev/stdin`), a private copy of what it gives,
    under its own name (a pipe can be read once, the readers go over a file twice)."""
    if str(path) != STDIN:
        if not _is_pipe(path):
            yield path, str(path)
            return
        with path.open("rb") as given, _private_copy(given) as copy:
            yield copy, str(path)
        return
    if sys.stdin is None or sys.stdin.isatty():
        raise click.UsageError("'-' reads a transcript from standard input: pipe one in")
    with _private_copy(sys.stdin.buffer) as copy:
        yield copy, STDIN_NAME


def _is_pipe(path: Path) -> bool:
    """Whether `path` is something other than a regular file or a folder that can be read
    (a FIFO, a character device): what is read from it once is gone."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False  # the reader says why it cannot open it
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def _private_copy(source: BinaryIO) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="abridged-stdin-") as folder:
        copy = Path(folder) / "stdin.jsonl"
        with copy.open("xb") as out:  # the folder is 0700: only its owner reads the copy
            shutil.copyfileobj(source, out, _PIECE)
        yield copy


def check_one_stdin(paths: tuple[Path, ...]) -> None:
    """Standard input can be read once: `-` given twice is a usage error."""
    if sum(str(p) == STDIN for p in paths) > 1:
        raise click.UsageError("'-' (standard input) can be given once")
