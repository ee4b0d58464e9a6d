"""Files the command line writes (a report, request dumps): readable by their owner only,
never through a symbolic link, and never over a session store.

What they hold is a session's content, as private as the store it comes from (0600, like the
store itself). A link at the output path could send the write anywhere the user may write;
an output path mistyped as the store's would destroy every session in it.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import click

__all__ = ["dump_folder", "private_folder", "write_private"]

SQLITE_HEADER = b"SQLite format 3\x00"


def write_private(path: Path, text: str, *, store: str | None = None) -> None:
    """Writes `text` (UTF-8) to `path`, created 0600; raises `click.ClickException`, writing
    nothing, when `path` is a symbolic link, not a regular file (a device, a pipe, a
    folder), a SQLite database or the store `store`."""
    _check_target(path, store)
    # Written beside it, then renamed over it: a run stopped part way (Ctrl-C, a full disk)
    # leaves the file as it was, never half of it.
    partial = path.with_name(f".{path.name}.partial")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(partial, flags, 0o600)
    except OSError as error:
        raise click.ClickException(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(partial, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            partial.unlink()
        if isinstance(error, OSError):
            raise click.ClickException(f"cannot write {path}: {error.strerror or error}") from None
        raise


def private_folder(path: Path) -> None:
    """Creates the folder `path` (0700) if it does not exist; refuses a symbolic link."""
    if path.is_symlink():
        raise click.ClickException(f"{path} is a symbolic link: give the folder itself")
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise click.ClickException(f"cannot create {path}: {error.strerror or error}") from None


DUMPED = re.compile(r"\d{4,}\.json")
"""The name of a request body `--dump-requests` writes."""


def dump_folder(path: Path) -> None:
    """The folder request bodies are dumped to (`private_folder`), refused when it holds
    bodies already: a shorter run would leave an earlier run's later requests among its own."""
    private_folder(path)
    try:
        earlier = sorted(f.name for f in path.iterdir() if DUMPED.fullmatch(f.name))
    except OSError as error:
        raise click.ClickException(f"cannot read {path}: {error.strerror or error}") from None
    if earlier:
        raise click.ClickException(
            f"{path} holds request bodies already ({', '.join(earlier[:2])}"
            f"{', …' if len(earlier) > 2 else ''}): empty it or give another folder"
        )


def _check_target(path: Path, store: str | None) -> None:
    if path.is_symlink():
        raise click.ClickException(
            f"{path} is a symbolic link; not followed: give the file's own path"
        )
    if not path.exists():
        return
    if not path.is_file():
        # A device or a pipe would be replaced by the rename (as root, /dev/null itself), or
        # hang the check below; a folder cannot be written as a file.
        raise click.ClickException(f"{path} is not a regular file; write the report to a file")
    if store is not None and not store.startswith(("postgresql://", "postgres://")):
        with contextlib.suppress(OSError):
            if path.samefile(Path(store).expanduser()):
                raise click.ClickException(f"{path} is the session store (--db); not overwritten")
    with contextlib.suppress(OSError), path.open("rb") as existing:
        if existing.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
            raise click.ClickException(
                f"{path} is a SQLite database (a session store?); not overwritten: remove it "
                "first or write elsewhere"
            )
