"""A summarizer that breaks its contract in what it writes (text no UTF-8 encodes, a
`compaction` block the API would not take back, an error quoting a lone surrogate): the
compaction fails open, every later request is valid, and the stored session loads to the
same request."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.application.ports import Summary
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import check_request
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()


class Broken:
    """Returns `summary`, or raises `error`."""

    name = "broken"

    def __init__(self, summary: Summary | None = None, error: Exception | None = None) -> None:
        self.summary, self.error = summary, error

    def summarize(self, messages: Any, **_: Any) -> Summary:
        if self.error is not None:
            raise self.error
        assert self.summary is not None
        return self.summary


CASES = {
    "text with a lone surrogate": Broken(Summary("the summary \ud800 so far", "m")),
    "an error quoting a lone surrogate": Broken(error=RuntimeError("upstream said: \udfff")),
    "a block that is not JSON": Broken(Summary("the summary", "m", block="{not json")),
    "a block that is a list": Broken(Summary("the summary", "m", block="[]")),
    "a block of another type": Broken(
        Summary("the summary", "m", block='{"type": "text", "text": "x"}')
    ),
    "an unsealed compaction block": Broken(
        Summary("the summary", "m", block='{"type": "compaction", "content": "x"}')
    ),
}


@pytest.mark.parametrize("summarizer", CASES.values(), ids=CASES.keys())
def test_a_summary_no_request_could_carry_fails_the_compaction_open(
    tmp_path: Path, summarizer: Broken, caplog: pytest.LogCaptureFixture
) -> None:
    # The guard logs the summarizer's error as it came; a report holding a lone surrogate
    # cannot travel between the test run's processes.
    caplog.set_level(logging.CRITICAL, logger="abridged")
    db = tmp_path / "s.sqlite3"
    app = bootstrap(db, counter=COUNTER, summarizer=summarizer)
    session_id = app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    for i in range(8):
        for message in turn(f"Request {i}", [words(100)]):
            if message.role is Role.ASSISTANT:
                check_request(app.prepare_request(session_id), COUNTER)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("Where are we?"))
    live = check_request(app.prepare_request(session_id), COUNTER)

    failed = [e for e in app.history(session_id) if isinstance(e, Session.CompactionFailed)]
    assert failed, "the summarizer's result was taken"
    assert all(e.fallback == "truncate" for e in failed)
    app.close()
    again = bootstrap(db, counter=COUNTER, summarizer=summarizer)
    assert check_request(again.prepare_request(session_id), COUNTER) == live
