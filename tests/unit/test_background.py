"""Compaction off the user's turn: started after a reply past the earlier mark, written while
the conversation goes on, applied only when what it covers is unchanged."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from uuid import UUID

import pytest

from abridged.adapters.bootstrap import persistence_env
from abridged.application.auditing import audit_events
from abridged.application.ports import SummarizerError, Summary
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain import planner
from abridged.domain.errors import InvalidSettingsError
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import check_request
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "session-v1.json"


class GatedSummarizer(FakeSummarizer):
    """Waits for `gate` before answering; `entered` is set once a summary was asked for."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(words(30, "fact"))
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.failing = fail

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        self.entered.set()
        assert self.gate.wait(10), "the test never opened the gate"
        if self.failing:
            raise SummarizerError("the summarizer is down")
        return super().summarize(messages, max_tokens=max_tokens, instructions=instructions)


def service(summarizer: FakeSummarizer, db: Path | None = None, **options: object) -> Sessions:
    env = persistence_env(db) if db else {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    return Sessions(counter=COUNTER, summarizer=summarizer, env=env, **options)  # type: ignore[arg-type]


def start(app: Sessions, **settings: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        tools=TOOLS,
        settings=CompactionSettings(
            **{  # type: ignore[arg-type]
                "threshold_floor_tokens": 0,
                "keep_recent_turns": 2,
                # The background mark comes before the hard threshold (defaults compact early).
                "threshold_ratio": 0.7,
                "background_threshold_ratio": 0.4,
                **settings,
            }
        ),
    )


def feed_turns(app: Sessions, session_id: UUID, turns: range) -> list[PreparedRequest]:
    prepared = []
    for i in turns:
        for message in turn(f"Request {i}", [words(100)]):
            if message.role is Role.ASSISTANT:
                prepared.append(app.prepare_request(session_id))
                check_request(prepared[-1], COUNTER)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    return prepared


def events(app: Sessions, session_id: UUID, kind: type[Session.Event]) -> list[Session.Event]:
    return [e for e in app.history(session_id) if isinstance(e, kind)]


def until_started(app: Sessions, session_id: UUID, summarizer: GatedSummarizer) -> int:
    """Feeds turns until a background compaction is writing its summary; the turn count."""
    for i in range(40):
        feed_turns(app, session_id, range(i, i + 1))
        if summarizer.entered.wait(0.05):
            return i + 1
    raise AssertionError("no background compaction started")


def test_a_reply_past_the_mark_compacts_in_the_background_and_keeps_new_messages() -> None:
    summarizer = GatedSummarizer()
    app = service(summarizer)
    session_id = start(app)
    done = until_started(app, session_id, summarizer)
    hit = events(app, session_id, Session.CompactionThresholdHit)[-1]
    assert isinstance(hit, Session.CompactionThresholdHit)
    assert hit.decision.trigger == "background"
    # The conversation goes on while the summary is written.
    prepared = feed_turns(app, session_id, range(done, done + 1))
    assert all(p.compaction is None for p in prepared)
    count_before = app.session(session_id).message_count

    summarizer.gate.set()
    app.background.wait()

    (completed,) = events(app, session_id, Session.CompactionCompleted)
    assert isinstance(completed, Session.CompactionCompleted)
    assert completed.retained_from == hit.decision.retained_from
    session = app.session(session_id)
    assert session.retained_from == hit.decision.retained_from
    assert session.entries[-1].position == count_before - 1  # appended meanwhile: in the tail
    app.append_message(session_id, Message.user("Next."))
    check_request(app.prepare_request(session_id), COUNTER)
    assert len(summarizer.calls) == 1


def test_a_request_at_the_threshold_waits_for_the_running_compaction() -> None:
    summarizer = GatedSummarizer()
    app = service(summarizer)
    session_id = start(app, threshold_ratio=0.5)
    until_started(app, session_id, summarizer)
    # Past the hard threshold before the background summary is done.
    for i in range(6):
        app.append_message(session_id, Message.user(f"More {i}: " + words(60)))
        app.record_reply(session_id, Message.assistant("Noted."))
    app.append_message(session_id, Message.user("Now?"))
    assert app.session(session_id).estimate() >= app.session(session_id).limits.threshold
    results: list[PreparedRequest] = []
    waiting = threading.Thread(target=lambda: results.append(app.prepare_request(session_id)))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive()  # it waits for the compaction already running

    summarizer.gate.set()
    waiting.join(10)

    assert results
    assert results[0].compactions_so_far >= 1
    check_request(results[0], COUNTER)
    completed = events(app, session_id, Session.CompactionCompleted)
    assert len(summarizer.calls) == len(completed)  # no summary was thrown away


def test_a_summary_overtaken_by_another_compaction_is_discarded(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    summarizer = GatedSummarizer()
    app = service(summarizer, db)
    session_id = start(app)
    until_started(app, session_id, summarizer)
    # Another process (its own locks) compacts the same session meanwhile.
    other = service(FakeSummarizer(words(20, "other")), db, background=False)
    other.compact(session_id)

    summarizer.gate.set()
    app.background.wait()

    (discarded,) = events(app, session_id, Session.CompactionDiscarded)
    assert isinstance(discarded, Session.CompactionDiscarded)
    assert "another compaction" in discarded.reason
    assert len(events(app, session_id, Session.CompactionCompleted)) == 1
    app.append_message(session_id, Message.user("Next."))
    check_request(app.prepare_request(session_id), COUNTER)


def test_a_failed_background_summary_is_recorded_and_changes_nothing_else() -> None:
    summarizer = GatedSummarizer(fail=True)
    app = service(summarizer)
    session_id = start(app)
    until_started(app, session_id, summarizer)
    before = app.session(session_id)

    summarizer.gate.set()
    app.background.wait()

    failed = events(app, session_id, Session.CompactionFailed)
    assert [(e.fallback, e.error) for e in failed] == [("dropped", "the summarizer is down")]  # type: ignore[attr-defined]
    after = app.session(session_id)
    assert (after.generation, after.entries, after.summaries) == (
        before.generation,
        before.entries,
        before.summaries,
    )
    # The audit knows a background failure falls back to nothing, and goes on past it.
    feed_turns(app, session_id, range(40, 42))
    audited = audit_events(app.history(session_id))
    assert audited.ok, audited.mismatches
    assert "a background summary failed" in [f.detail for f in audited.findings]


def test_without_automatic_background_the_host_starts_it() -> None:
    summarizer = FakeSummarizer(words(30, "fact"))
    app = service(summarizer, background=False)
    session_id = start(app)
    turns = 0
    while not planner.background_due(app.session(session_id)):
        feed_turns(app, session_id, range(turns, turns + 1))
        turns += 1
    assert app.background.started == 0

    report = app.compact_soon(session_id).result(10)

    assert report is not None
    assert report.trigger == "background"
    assert app.compact_soon(session_id).result(10) is None  # nothing is due any more


def test_a_background_cut_keeps_the_exchange_a_reply_answers() -> None:
    app = service(FakeSummarizer(words(30, "fact")), background=False)
    session_id = start(
        app, keep_recent_turns=1, retained_share=0.05, background_threshold_ratio=0.1
    )
    feed_turns(app, session_id, range(3))
    app.append_message(session_id, Message.user("One more thing."))
    # A reply too long to keep with its prompt under the soft limit.
    app.record_reply(session_id, Message.assistant("Sure, " + words(200)))
    session = app.session(session_id)
    decision = planner.decide(session, "background")
    assert decision is not None
    # The prompt the reply answers stays with it: a tail that starts at the reply would
    # leave the next request's summary speaking for a question the model then answers.
    assert decision.retained_from <= session.entries[-2].position


def test_the_mark_is_a_validated_setting_and_old_fingerprints_stay() -> None:
    with pytest.raises(InvalidSettingsError, match="background_threshold_ratio"):
        CompactionSettings(background_threshold_ratio=1.5)
    with pytest.raises(InvalidSettingsError, match="background_threshold_ratio"):
        CompactionSettings(background_threshold_ratio="half")  # type: ignore[arg-type]
    stored = json.loads(json.loads(FIXTURE.read_text())["events"][0]["state"])
    settings = CompactionSettings.from_stored(stored["settings"]["_data_"])
    assert settings.fingerprint == stored["settings_fingerprint"]
    assert CompactionSettings(background_threshold_ratio=0.5).fingerprint != settings.fingerprint
