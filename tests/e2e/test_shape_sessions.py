"""The seventh outside check's sessions (`tests.support.shape_sessions`) replayed at 16k:
every request valid, recounted and within the budget, and the screenshots a capped prompt
has room for sent (docs/evaluation.md, "A seventh outside check")."""

from __future__ import annotations

from pathlib import Path

import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.domain.messages import ImageBlock
from abridged.domain.session import Session
from tests.e2e.test_replay_transcripts import COUNTER
from tests.support.replays import checked_into, replay
from tests.support.shape_sessions import SESSIONS, write

WINDOW = 16_000
QUICK = sorted(set(SESSIONS) - {"tiny-turns-607"})  # 2,500 requests: replayed by hand


@pytest.mark.parametrize("name", QUICK)
def test_every_request_is_valid_and_within_the_budget(name: str, tmp_path: Path) -> None:
    path = write(tmp_path, name)
    problems: list[str] = []
    app = bootstrap(counter=COUNTER)
    try:
        replay(app, path, WINDOW, checked_into(problems, WINDOW))
    finally:
        app.close()
    assert problems == []


def test_a_prompt_of_screenshots_larger_than_its_cap_keeps_those_that_fit(
    tmp_path: Path,
) -> None:
    # Turn 10 of documents-603 asks about four screenshots of 14,278 tokens in all, more
    # than the 16k window's cap for one message: the smaller are sent, not one placeholder
    # for each.
    path = write(tmp_path, "documents-603")
    app = bootstrap(counter=COUNTER)
    try:
        session_id = replay(app, path, WINDOW)
        appended = [
            e
            for e in app.repository.event_store.get(session_id)
            if isinstance(e, Session.MessageAppended)
            and sum(isinstance(b, ImageBlock) for b in e.message.content) == 4
        ]
    finally:
        app.close()
    assert appended
    for event in appended:
        shown_whole = [
            i
            for i, block in enumerate(event.message.content)
            if isinstance(block, ImageBlock) and i not in {t.block_index for t in event.truncations}
        ]
        assert shown_whole
