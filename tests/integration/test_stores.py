"""Sessions in real stores, a SQLite file and a PostgreSQL server: reopened, snapshotted,
bounded, and safe with two writers. Every scenario runs against each store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from uuid import UUID

import pytest

from abridged.adapters.bootstrap import persistence_env
from abridged.application.ports import Summary
from abridged.application.service import Sessions
from abridged.application.snapshots import READS_THE_TAIL
from abridged.domain.errors import RoleOrderError
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.postgres import fresh_database


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store location: a SQLite file, or a new database on the test server."""
    if request.param == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    return fresh_database(request.getfixturevalue("postgres_server"))


def store_app(db: str, summarizer: object | None = None, counter: object | None = None) -> Sessions:
    """A service on the store `db`, as a separate process would open it."""
    return Sessions(
        counter=counter or FakeTokenCounter(),  # type: ignore[arg-type]
        summarizer=summarizer or FakeSummarizer(words(40, "fact")),  # type: ignore[arg-type]
        env=persistence_env(db),
    )


def long_session(app: Sessions, turns: int = 60) -> UUID:
    session_id = app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        system="system prompt",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, keep_recent_turns=2),
    )
    for i in range(turns):
        for message in turn(f"Request {i} ✓ 日本語", [words(120), words(80)]):
            if message.role is Role.ASSISTANT:
                app.prepare_request(session_id)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    return session_id


def state(session: Session) -> tuple[object, ...]:
    return (
        session.version,
        session.entries,
        session.summaries,
        session.generation,
        session.message_count,
        session.calibration,
        session.tail_tokens,
        session.tools,
        session.settings,
    )


def test_a_reopened_session_is_the_session_that_was_saved(db: str) -> None:
    writer = store_app(db)
    session_id = long_session(writer)
    live = writer.session(session_id)

    reopened = store_app(db).session(session_id)

    assert state(reopened) == state(live)


def test_snapshots_keep_loading_flat_and_state_bounded(db: str) -> None:
    app = store_app(db)
    session_id = long_session(app, turns=80)
    session = app.session(session_id)

    assert session.version > 300
    assert app.snapshots is not None
    snapshots = list(app.snapshots.get(session_id))
    every = Sessions.snapshotting_intervals[Session]
    # One snapshot per interval (a command saving several events may cross it a few
    # versions past it), and one at each compaction, so cold loads replay none.
    intervals = {s.originator_version // every for s in snapshots}
    assert {1, 2, 3} <= intervals
    history = app.history(session_id)
    taken = sorted(s.originator_version for s in snapshots)
    for event in history:
        if isinstance(event, Session.CompactionCompleted):
            # Snapshotted with the compaction (its command's last event), before any later
            # event that reads the retained tail on replay.
            after = next(v for v in taken if v >= event.originator_version)
            between = history[event.originator_version : after]
            assert not any(isinstance(e, READS_THE_TAIL) for e in between)
    # The aggregate holds the retained tail and the summaries, not the whole history.
    assert session.generation > 5
    assert len(session.entries) < session.message_count / 5
    # A replay without snapshots reaches the same state.
    events = app.history(session_id)
    replayed = None
    for event in events:
        replayed = event.mutate(replayed)
    assert replayed is not None
    assert state(replayed) == state(session)


class InterleavingSummarizer:
    """Lets another service compact the same session while this one is summarizing."""

    def __init__(self, other: Sessions, session_id: UUID) -> None:
        self.other = other
        self.session_id = session_id
        self.inner = FakeSummarizer(words(30, "fact"))
        self.interleaved = False

    @property
    def name(self) -> str:
        return "interleaving"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        if not self.interleaved:
            self.interleaved = True
            self.other.prepare_request(self.session_id)
        return self.inner.summarize(messages, max_tokens=max_tokens, instructions=instructions)


def test_a_concurrent_compaction_loses_nothing_and_the_loser_retries(db: str) -> None:
    setup = store_app(db, FakeSummarizer(words(30, "fact")))
    session_id = setup.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    for i in range(12):
        messages = list(turn(f"Request {i}", [words(150)]))
        for message in messages:
            setup.session(session_id).check_append(message)
            # Append without preparing, so the session is over its threshold, uncompacted.
            if message.role is Role.ASSISTANT:
                setup.record_reply(session_id, message)
            else:
                setup.append_message(session_id, message)
    setup.append_message(session_id, Message.user("And now?"))
    other = store_app(db, FakeSummarizer(words(30, "fact")))
    racing = InterleavingSummarizer(other, session_id)
    loser = store_app(db, racing)

    prepared = loser.prepare_request(session_id)

    history = loser.history(session_id)
    completed = [e for e in history if isinstance(e, Session.CompactionCompleted)]
    assert racing.interleaved
    assert [e.generation for e in completed] == [1]  # the winner's; the loser saw it and re-decided
    assert prepared.compactions_so_far == 1
    versions = [e.originator_version for e in history]
    assert versions == list(range(1, len(versions) + 1))


def test_a_conflicting_append_is_re_validated_against_what_won(db: str) -> None:
    first = store_app(db)
    session_id = first.start_session(model="m", context_window=10_000, max_output_tokens=500)
    first.append_message(session_id, Message.user("Hello"))
    first.record_reply(session_id, Message.assistant("Hi! What shall we do?"))
    second = store_app(db)

    class RacingCounter(FakeTokenCounter):
        raced = False

        def count(self, text: str) -> int:
            if not RacingCounter.raced:
                RacingCounter.raced = True
                second.append_message(session_id, Message.user("Fix the parser."))
            return super().count(text)

    racer = store_app(db, FakeSummarizer(), RacingCounter())

    with pytest.raises(RoleOrderError):
        racer.append_message(session_id, Message.user("Write the docs."))

    messages = [
        e.message.text for e in racer.history(session_id) if isinstance(e, Session.MessageAppended)
    ]
    assert messages == ["Hello", "Hi! What shall we do?", "Fix the parser."]


@pytest.mark.parametrize(("size", "cached"), [("0", False), ("", False), ("8", True)])
def test_the_session_cache_size_setting(tmp_path: Path, size: str, cached: bool) -> None:
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(),
        env={
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "s.sqlite3"),
            "AGGREGATE_CACHE_MAXSIZE": size,
        },
    )
    assert bool(app.repository.cache) is cached
