"""Transcripts compressed with gzip: read as their content, whatever the file is named, and
refused with the file's name when the compression is broken."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from abridged.adapters import transcripts
from abridged.adapters.compressed import is_gzip
from abridged.adapters.transcripts import TranscriptError, load_transcript
from tests.unit.test_importers_real_shapes import RealLog, call, text
from tests.unit.test_transcripts import REAL_FILES, real


def gzipped(source: Path, target: Path) -> Path:
    target.write_bytes(gzip.compress(source.read_bytes()))
    return target


@real
@pytest.mark.parametrize("path", REAL_FILES[:4], ids=lambda p: p.stem)
def test_a_gzipped_transcript_reads_as_the_file_it_holds_with_its_meta_file(
    path: Path, tmp_path: Path
) -> None:
    plain = load_transcript(path)
    archived = gzipped(path, tmp_path / f"{path.stem}.jsonl.gz")
    meta = path.with_name(f"{path.stem}.meta.json")
    if meta.is_file():
        shutil.copy(meta, tmp_path / meta.name)  # beside it as X.meta.json, not X.jsonl.meta.json

    read = load_transcript(archived)

    assert (read.messages, read.system, read.model, read.tools) == (
        plain.messages,
        plain.system,
        plain.model,
        plain.tools,
    )


def test_a_gzipped_claude_code_log_is_detected_and_imported(tmp_path: Path) -> None:
    log = RealLog()
    log.user("list the files")
    called = log.block("msg_1", call("toolu_1", "ls"))
    log.result("toolu_1", "README.md\nsrc", called)
    log.block("msg_2", text("Two entries: README.md and src."))
    plain = log.write(tmp_path / "session.jsonl")
    # Named without .gz: the content says it is compressed.
    archived = gzipped(plain, tmp_path / "session-archived.log")

    assert load_transcript(archived).messages == load_transcript(plain).messages
    assert len(load_transcript(archived, format="claude-code").messages) == 4


@pytest.mark.parametrize("damage", ["cut short", "corrupt"])
def test_a_broken_gzip_file_is_a_transcript_error_naming_it(damage: str, tmp_path: Path) -> None:
    whole = gzip.compress(b'{"role": "user", "content": "hello there"}\n' * 2_000)
    broken = bytearray(whole[: len(whole) // 2] if damage == "cut short" else whole)
    if damage == "corrupt":
        # The content decompresses, but not to what was compressed: its checksum says so.
        broken[-8:-4] = bytes(b ^ 0xFF for b in broken[-8:-4])
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(bytes(broken))

    with pytest.raises(TranscriptError) as caught:
        load_transcript(path)

    assert caught.value.path == str(path)
    assert "not a readable gzip file" in str(caught.value)


def test_the_size_limit_counts_what_a_gzip_file_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small file that decompresses to far more is refused as a large file is.
    monkeypatch.setattr(transcripts, "MAX_TRANSCRIPT_BYTES", 50_000)
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"role": "user", "content": "hello"}\n' * 20_000))
    assert path.stat().st_size < 50_000

    with pytest.raises(TranscriptError, match="larger than 50,000 bytes"):
        load_transcript(path)


def test_a_gzip_file_is_told_by_its_first_bytes_not_its_name(tmp_path: Path) -> None:
    plain = tmp_path / "t.jsonl.gz"  # named .gz, but plain text
    plain.write_text('{"role": "user", "content": "hello"}\n', encoding="utf-8")
    archived = gzipped(plain, tmp_path / "t.jsonl")
    assert is_gzip(archived)
    assert not is_gzip(plain)
    assert not is_gzip(tmp_path / "missing.gz")
    assert load_transcript(plain).messages == load_transcript(archived).messages
