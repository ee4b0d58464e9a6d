"""`defer_compaction`: a compaction due at the threshold that the request does not need in
order to fit is put off to the background; the request goes as it stands and never waits
for a summary. One the request needs, or one asked for, runs at once as before."""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from uuid import UUID

import pytest

from abridged.application.async_service import AsyncSessions
from abridged.application.auditing import audit_events
from abridged.application.ledgering import Ledgers
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.async_fakes import AsyncFakeSummarizer
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import check_request
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.unit.test_background import GatedSummarizer

COUNTER = FakeTokenCounter()


def service(summarizer: FakeSummarizer, **options: object) -> Sessions:
    return Sessions(
        counter=COUNTER,
        summarizer=summarizer,
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        **{"defer_compaction": True, **options},  # type: ignore[arg-type]
    )


def start(app: Sessions) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=6_000,
        max_output_tokens=400,
        tools=TOOLS,
        settings=CompactionSettings(
            threshold_floor_tokens=0, keep_recent_turns=2, threshold_ratio=0.4
        ),
    )


def until_due(app: Sessions, session_id: UUID) -> int:
    """Feeds whole turns until the next request is past the threshold (a user message last);
    the turns fed."""
    for i in range(60):
        for message in turn(f"Request {i}", [words(100)]):
            if message.role is Role.ASSISTANT:
                app.prepare_request(session_id)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
        app.append_message(session_id, Message.user(f"Question {i}: " + words(10)))
        session = app.session(session_id)
        if session.estimate() >= session.limits.threshold:
            return i + 1
        app.record_reply(session_id, Message.assistant("Noted."))
    raise AssertionError("the session never reached its threshold")


def compactions(app: Sessions, session_id: UUID) -> list[Session.CompactionCompleted]:
    return [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]


def kinds(prepared: PreparedRequest) -> list[str]:
    return [notice.kind for notice in prepared.notices]


def test_a_request_that_fits_goes_as_it_stands_and_the_compaction_runs_in_the_background() -> None:
    summarizer = GatedSummarizer()
    app = service(summarizer)
    session_id = start(app)
    until_due(app, session_id)
    count = app.session(session_id).message_count

    prepared = app.prepare_request(session_id)

    assert prepared.compaction is None
    assert kinds(prepared) == ["compaction_deferred"]
    assert len(prepared.context.messages) == count  # every message, as it stands
    check_request(prepared, COUNTER)
    assert summarizer.entered.wait(10)
    # While the summary is written, the conversation goes on and no request waits for it.
    app.record_reply(session_id, Message.assistant("Done."))
    app.append_message(session_id, Message.user("And next?"))
    again = app.prepare_request(session_id)
    assert again.compaction is None
    assert app.background.started == 1

    summarizer.gate.set()
    app.background.wait()

    assert len(compactions(app, session_id)) == 1
    hit = next(e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit))
    assert hit.decision.trigger == "background"
    after = app.prepare_request(session_id)
    assert after.context_status == "summarized"
    assert after.context.estimate < prepared.context.estimate
    check_request(after, COUNTER)
    audited = audit_events(app.history(session_id))
    assert audited.ok, audited.mismatches
    app.close()


def test_without_background_compactions_the_threshold_compacts_at_once() -> None:
    app = service(FakeSummarizer(words(30, "fact")), background=False)
    session_id = start(app)
    until_due(app, session_id)

    prepared = app.prepare_request(session_id)

    assert prepared.compaction is not None
    assert prepared.compaction.trigger == "threshold"
    assert app.background.started == 0
    app.close()


def test_a_compaction_asked_for_runs_at_once() -> None:
    app = service(FakeSummarizer(words(30, "fact")))
    session_id = start(app)
    until_due(app, session_id)
    app.request_compaction(session_id)

    prepared = app.prepare_request(session_id)

    assert prepared.compaction is not None
    assert prepared.compaction.trigger == "requested"
    assert app.background.started == 0
    app.close()


def test_a_request_that_does_not_fit_compacts_before_it_is_sent() -> None:
    app = service(FakeSummarizer(words(30, "fact")))
    session_id = start(app)
    until_due(app, session_id)
    # Two long pastes take the request past its budget (each is shown in at most half of a
    # request's room): only a compaction makes it fit.
    budget = app.session(session_id).limits.budget
    for name in ("log", "trace"):
        app.record_reply(session_id, Message.assistant(f"Paste the {name}."))
        app.append_message(session_id, Message.user(words(budget, name)))
    assert app.session(session_id).estimate() > budget

    prepared = app.prepare_request(session_id)

    assert prepared.compaction is not None
    assert prepared.compaction.trigger == "threshold"
    assert prepared.context.estimate <= prepared.context.budget
    assert "compaction_deferred" not in kinds(prepared)
    app.close()


def test_the_async_service_puts_it_off_to_a_task() -> None:
    app = AsyncSessions(
        counter=COUNTER,
        summarizer=AsyncFakeSummarizer(FakeSummarizer(words(30, "fact"))),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        defer_compaction=True,
    )

    async def host() -> None:
        session_id = start(app.sync)
        until_due(app.sync, session_id)
        prepared = await app.prepare_request(session_id)
        assert prepared.compaction is None
        assert kinds(prepared) == ["compaction_deferred"]
        await app.wait_background()
        assert len(compactions(app.sync, session_id)) == 1
        after = await app.prepare_request(session_id)
        assert after.context_status == "summarized"
        await app.aclose()

    asyncio.run(host())


def test_the_facts_are_read_while_the_summary_is_written_and_recorded_as_on_the_users_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[str] = []
    extract = Ledgers._extract

    def counted(self: Ledgers, source: Any, decision: Any) -> Any:
        reads.append(threading.current_thread().name)
        return extract(self, source, decision)

    monkeypatch.setattr(Ledgers, "_extract", counted)
    deferring, at_once = (
        service(FakeSummarizer(words(30, "fact"))),
        service(FakeSummarizer(words(30, "fact")), defer_compaction=False),
    )
    ledgers = []
    for app in (deferring, at_once):
        session_id = start(app)
        until_due(app, session_id)
        app.prepare_request(session_id)
        app.background.wait()
        (update,) = [e for e in app.history(session_id) if isinstance(e, Session.LedgerUpdated)]
        # The builders number tool ids across sessions: compared without the text.
        ledgers.append([(e.kind, e.first_position, e.last_position) for e in update.changed])
        app.close()

    assert ledgers[0] == ledgers[1]
    # One read each: the background one on its worker thread, before the record needed it.
    assert len(reads) == 2
    assert reads[0].startswith("abridged-bg")
