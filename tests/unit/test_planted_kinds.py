"""The planted-kinds sessions (`tests.support.planted_kinds`): the same bytes on every run,
every planted fact stated in its session, and every session read without refusal, so the
check over them measures what it claims to on anyone's machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from abridged.adapters.transcripts import check_conversation, load_transcript
from tests.support.planted_kinds import write_all
from tests.support.planted_kinds.session import TOOLS

pytestmark = pytest.mark.xdist_group("planted-kinds")

SESSIONS = 12


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("planted")
    write_all(out)
    return out


def sessions(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl"))


def said(path: Path) -> list[tuple[str, str]]:
    """(role, text) of each message of a session: the user's prompts, the agent's text."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        message = json.loads(line)
        content = message["content"]
        if isinstance(content, str):
            out.append((message["role"], content))
        else:
            texts = [b["text"] for b in content if b["type"] == "text"]
            out.append((message["role"], "\n".join(texts)))
    return out


def first_at(
    messages: list[tuple[str, str]], text: str, start: int = 0, role: str | None = None
) -> int | None:
    """The first message from `start` on (by `role`, when given) whose text holds `text`."""
    return next(
        (
            k
            for k in range(start, len(messages))
            if text in messages[k][1] and role in (None, messages[k][0])
        ),
        None,
    )


def test_two_runs_write_the_same_bytes(written: Path, tmp_path: Path) -> None:
    again = write_all(tmp_path)
    names = sorted(p.name for p in written.iterdir())
    assert names == sorted(p.name for p in again)
    assert len(sessions(written)) == SESSIONS
    for name in names:
        assert (written / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_every_planted_fact_is_stated_verbatim_in_its_session(written: Path) -> None:
    for path in sessions(written):
        messages = said(path)
        facts: list[dict[str, Any]] = json.loads(
            path.with_name(path.name.replace(".jsonl", ".facts.json")).read_text(encoding="utf-8")
        )
        assert facts, path.name
        for fact in facts:
            where = f"{path.name}: {fact}"
            speaker = {"user": "user", "agent": "assistant"}[fact["speaker"]]
            if fact["kind"] == "reversal":
                old = first_at(messages, fact["old"])
                assert old is not None, where
                # The speaker states the new value after the old one.
                assert first_at(messages, fact["new"], old + 1, speaker) is not None, where
                continue
            assert first_at(messages, fact["text"], role=speaker) is not None, where
            if "with" in fact:
                assert first_at(messages, fact["with"]) is not None, where


def test_every_session_is_read_without_refusal(written: Path) -> None:
    for path in sessions(written):
        transcript = load_transcript(path)
        check_conversation(transcript)
        assert transcript.system, path.name
        assert [t["name"] for t in transcript.tools] == [t["name"] for t in TOOLS], path.name
        assert transcript.notes == (), path.name
