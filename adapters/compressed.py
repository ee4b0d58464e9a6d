"""Transcript files compressed with gzip, read as their content.

A log archived as `session.jsonl.gz` is read as `session.jsonl` would be: whether a file is
compressed is told by its first two bytes (gzip's magic), not its name. The size limits of
the readers count what the file holds once decompressed, so a small file that decompresses
without end is refused as a large one is.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import BinaryIO, cast

GZIP_MAGIC = b"\x1f\x8b"


class UnreadableGzipError(OSError):
    """A file that starts as gzip but cannot be decompressed (cut short, or corrupt)."""


def is_gzip(path: Path) -> bool:
    """Whether the file at `path` starts with gzip's magic bytes (False if it cannot be read:
    its reader says why)."""
    try:
        with path.open("rb") as stream:
            return stream.read(2) == GZIP_MAGIC
    except OSError:
        return False


def open_binary(path: Path) -> BinaryIO:
    """The file at `path` opened for reading bytes, decompressed when it is gzip. Reading a
    corrupt or cut-short gzip file raises `UnreadableGzipError`."""
    stream = path.open("rb")
    if stream.read(2) != GZIP_MAGIC:
        stream.seek(0)
        return stream
    stream.seek(0)
    return cast(BinaryIO, _CheckedGzip(stream))  # a buffered reader of bytes, as open() gives


def base_name(path: Path) -> str:
    """The file's name without a `.gz` suffix: the name its content would have."""
    return path.name.removesuffix(".gz") if path.name.endswith(".gz") else path.name


class _CheckedGzip(gzip.GzipFile):
    """A gzip reader whose decompression errors are `UnreadableGzipError`, and which closes
    the file it reads when it is closed."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def read(self, size: int | None = -1) -> bytes:
        try:
            return super().read(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise UnreadableGzipError(0, f"not a readable gzip file: {error}") from None

    def readline(self, size: int | None = -1) -> bytes:
        try:
            return super().readline(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise UnreadableGzipError(0, f"not a readable gzip file: {error}") from None

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()
