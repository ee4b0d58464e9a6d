"""A transcript read from standard input: `-` in place of a file, as Unix tools take it.

The readers go over a file more than once (the format is detected from the records, then the
messages are read), so standard input is first copied to a private temporary file (0600, in
a folder of its own, removed afterwards), in pieces, whatever its size.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

__all__ = ["STDIN", "STDIN_NAME", "check_one_stdin", "transcript_file"]

STDIN = "-"
STDIN_NAME = "<stdin>"
"""How a transcript read from standard input is named in errors, notes and reports."""
_PIECE = 1 << 20


@contextlib.contextmanager
def transcript_file(path: Path) -> Iterator[tuple[Path, str]]:
    """`path` and its name; for `-`, a private copy of standard input and `<stdin>`."""
    if str(path) != STDIN:
        yield path, str(path)
        return
    if sys.stdin is None or sys.stdin.isatty():
        raise click.UsageError("'-' reads a transcript from standard input: pipe one in")
    with tempfile.TemporaryDirectory(prefix="abridged-stdin-") as folder:
        copy = Path(folder) / "stdin.jsonl"
        with copy.open("xb") as out:  # the folder is 0700: only its owner reads the copy
            shutil.copyfileobj(sys.stdin.buffer, out, _PIECE)
        yield copy, STDIN_NAME


def check_one_stdin(paths: tuple[Path, ...]) -> None:
    """Standard input can be read once: `-` given twice is a usage error."""
    if sum(str(p) == STDIN for p in paths) > 1:
        raise click.UsageError("'-' (standard input) can be given once")
