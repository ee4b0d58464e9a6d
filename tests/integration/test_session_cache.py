"""The session cache with commands that change the cached session itself: several services
on one store, failed commands, threads, copies handed to readers, and `append_and_prepare`.
Every scenario with two services runs against a SQLite file and a PostgreSQL server."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from uuid import UUID

import pytest

from abridged.application.ports import Summary
from abridged.application.service import Sessions
from abridged.domain.errors import ContextTooSmallError, RoleOrderError
from abridged.domain.messages import Message, Role, WireBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.integration.test_stores import db, state, store_app
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import play
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

__all__ = ["db"]  # the store fixture, used by name


def started(app: Sessions, window: int = 3_000, **knobs: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=window,
        max_output_tokens=400,
        system="system prompt",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, **knobs),  # type: ignore[arg-type]
    )


def fresh(app: Sessions, session_id: UUID) -> Session:
    """The session rebuilt from the store alone, as a new process would load it."""
    return Sessions(counter=app.counter, summarizer=app.summarizer, env=app.env).session(session_id)


def test_two_services_on_one_store_each_see_the_others_writes(db: str) -> None:
    first, second = store_app(db), store_app(db)
    session_id = started(first)
    for i in range(25):
        writer, reader = (first, second) if i % 2 else (second, first)
        play(writer, session_id, list(turn(f"Request {i}", [words(90), words(60)])))
        # The reader's cached session is behind by a whole turn; it catches up on load.
        assert reader.session(session_id).message_count == writer.session(session_id).message_count
    assert first.session(session_id).generation >= 3
    assert state(first.session(session_id)) == state(fresh(first, session_id))
    assert state(second.session(session_id)) == state(fresh(first, session_id))


class BrokenSummarizer(FakeSummarizer):
    """Raises what no summarizer should: a bug, mid-command, after events were recorded."""

    def summarize(self, *args: object, **kwargs: object) -> Summary:
        raise RuntimeError("the summarizer has a bug")


def test_a_command_that_fails_half_way_leaves_nothing_unsaved_in_memory(tmp_path: Path) -> None:
    app = store_app(str(tmp_path / "s.sqlite3"))
    session_id = started(app)
    for i in range(12):
        messages = list(turn(f"Request {i}", [words(150)]))
        for message in messages:  # no prepares: the session passes its threshold
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("Next?"))
    before = state(app.session(session_id))
    working = app.summarizer
    # Past the guard, which would turn the bug into a failed compaction.
    app.summarizer = app.writer.summarizer = BrokenSummarizer()  # type: ignore[assignment]

    with pytest.raises(RuntimeError, match="has a bug"):
        app.prepare_request(session_id)  # records the decision in memory, then fails

    assert state(app.session(session_id)) == before == state(fresh(app, session_id))
    app.summarizer = app.writer.summarizer = working
    prepared = app.prepare_request(session_id)
    assert prepared.compaction is not None
    assert state(app.session(session_id)) == state(fresh(app, session_id))


def test_a_session_handed_to_a_reader_is_a_copy(tmp_path: Path) -> None:
    app = store_app(str(tmp_path / "s.sqlite3"))
    session_id = started(app)
    app.append_message(session_id, Message.user("Hello"))
    copy = app.session(session_id)
    copy.append(Message.assistant("Changed by a reader"), (5,), FakeTokenCounter().count)

    assert app.session(session_id).message_count == 1
    app.record_reply(session_id, Message.assistant("Hi"))
    assert [e.message.text for e in app.session(session_id).entries] == ["Hello", "Hi"]


def test_threads_running_commands_on_one_session_lose_nothing(tmp_path: Path) -> None:
    app = store_app(str(tmp_path / "s.sqlite3"))
    session_ids = [started(app, window=50_000) for _ in range(2)]
    errors: list[BaseException] = []

    positions: dict[UUID, list[int]] = {session_id: [] for session_id in session_ids}

    def worker(session_id: UUID, n: int) -> None:
        # Racing threads break the role order now and then: those are the typed errors a
        # host would see; anything else, or a lost or doubled write, is a bug.
        try:
            for i in range(n):
                with contextlib.suppress(RoleOrderError):
                    positions[session_id].append(
                        app.append_message(session_id, Message.user(f"thread request {i}"))
                    )
                with contextlib.suppress(RoleOrderError):
                    app.prepare_request(session_id)
                with contextlib.suppress(RoleOrderError):
                    positions[session_id].append(
                        app.record_reply(session_id, Message.assistant(f"answer {i}"))
                    )
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=worker, args=(session_id, 15))
        for session_id in session_ids
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(app.command_locks) == 0  # nothing left locked
    for session_id in session_ids:
        history = app.history(session_id)
        versions = [e.originator_version for e in history]
        assert versions == list(range(1, len(versions) + 1))
        appended = [e for e in history if isinstance(e, Session.MessageAppended)]
        assert sorted(positions[session_id]) == list(range(len(appended)))
        assert len(appended) >= 15
        assert state(app.session(session_id)) == state(fresh(app, session_id))


def test_append_and_prepare_is_the_two_calls_in_one_transaction(db: str) -> None:
    combined, separate = store_app(db), store_app(db)
    ids = [started(combined), started(separate)]
    for i in range(20):
        prompt, *rest = list(turn(f"Request {i}", [words(120), words(80)]))
        writes = combined.recorder.max_notification_id()
        prepared = combined.append_and_prepare(ids[0], prompt)
        after = combined.recorder.max_notification_id()
        separate.append_message(ids[1], prompt)
        expected = separate.prepare_request(ids[1])
        assert prepared.context.messages == expected.context.messages
        assert prepared.compaction == expected.compaction
        assert after is not None
        assert after > (writes or 0)
        for message in rest:
            for app, session_id in ((combined, ids[0]), (separate, ids[1])):
                if message.role is Role.ASSISTANT:
                    app.prepare_request(session_id)
                    app.record_reply(session_id, message)
                else:
                    app.append_message(session_id, message)
    assert combined.session(ids[0]).generation == separate.session(ids[1]).generation > 2


def test_append_and_prepare_saves_the_message_and_its_compaction_together(
    tmp_path: Path,
) -> None:
    app = store_app(str(tmp_path / "s.sqlite3"))
    session_id = started(app)
    for i in range(12):
        messages = list(turn(f"Request {i}", [words(150)]))
        for message in messages:  # no prepares: the session passes its threshold
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    notifications = app.recorder.max_notification_id() or 0

    prepared = app.append_and_prepare(session_id, Message.user("And now?"))

    assert prepared.compaction is not None
    stored = app.recorder.select_notifications(start=notifications + 1, limit=100)
    assert {n.topic.rsplit(".", 1)[-1] for n in stored} >= {
        "MessageAppended",
        "CompactionCompleted",
    }
    assert state(app.session(session_id)) == state(fresh(app, session_id))


class MarkedCounter(FakeTokenCounter):
    """Counts, besides tokens, how often a text holding `marker` was tokenized."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.times = 0

    def count(self, text: str) -> int:
        if self.marker in text:
            self.times += 1
        return super().count(text)


def test_a_compacting_append_and_prepare_counts_the_message_once_in_two_transactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = MarkedCounter("zebra-quartz")
    app = store_app(str(tmp_path / "s.sqlite3"), counter=counter)
    session_id = started(app)
    for i in range(12):
        for message in turn(f"Request {i}", [words(150)]):  # past the threshold, unprepared
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    transactions = []
    insert = app.recorder.insert_events

    def counted_insert(*args: object, **kwargs: object) -> object:
        transactions.append(args)
        return insert(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(app.recorder, "insert_events", counted_insert)

    prepared = app.append_and_prepare(session_id, Message.user("And now, zebra-quartz?"))

    assert prepared.compaction is not None
    assert counter.times == 1
    assert 1 <= len(transactions) <= 2
    last = app.session(session_id).entries[-1].message
    assert last == Message.user("And now, zebra-quartz?")
    assert state(app.session(session_id)) == state(fresh(app, session_id))


def test_append_and_prepare_rejects_bad_input_and_saves_nothing(tmp_path: Path) -> None:
    app = store_app(str(tmp_path / "s.sqlite3"))
    session_id = started(app)
    app.append_message(session_id, Message.user("Hello"))
    version = app.session(session_id).version

    with pytest.raises(RoleOrderError):
        app.append_and_prepare(session_id, Message.assistant("not a user message"))
    with pytest.raises(RoleOrderError):
        app.append_and_prepare(session_id, Message.user("two user messages in a row"))

    assert app.session(session_id).version == version


def test_append_and_prepare_shows_an_oversize_message_reduced_and_keeps_it_whole(
    tmp_path: Path,
) -> None:
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "s")},
    )
    session_id = started(app, window=1_000)

    huge = Message.user(words(2_000))
    prepared = app.append_and_prepare(session_id, huge)

    # Larger than the window, the message is shown reduced; the history keeps it whole.
    assert prepared.context.estimate <= prepared.context.budget
    session = app.session(session_id)
    assert session.message_count == 1
    assert session.entries[0].message == huge


def test_append_and_prepare_writes_nothing_for_a_message_that_can_never_be_sent(
    tmp_path: Path,
) -> None:
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "s")},
    )
    session_id = started(app, window=1_000)
    # A block type not known yet is sent unchanged, so it cannot be reduced to fit.
    future = WireBlock.of({"type": "hologram", "frames": words(2_000)})

    with pytest.raises(ContextTooSmallError):
        app.append_and_prepare(session_id, Message.user("Look.", future))

    assert app.session(session_id).message_count == 0


def test_threads_of_two_services_on_one_session_lose_nothing(db: str) -> None:
    """Two services on one store stand for two processes: their writes to one session race
    in the store, and each loser re-reads and runs again (pausing at random between tries)."""
    apps = [store_app(db), store_app(db)]
    session_id = started(apps[0], window=50_000)
    errors: list[BaseException] = []
    positions: list[int] = []

    def worker(app: Sessions, n: int) -> None:
        try:
            for i in range(n):
                with contextlib.suppress(RoleOrderError):
                    positions.append(app.append_message(session_id, Message.user(f"ask {i}")))
                with contextlib.suppress(RoleOrderError):
                    positions.append(app.record_reply(session_id, Message.assistant(f"say {i}")))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(app, 12)) for app in apps for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    appended = [e for e in apps[1].history(session_id) if isinstance(e, Session.MessageAppended)]
    assert sorted(positions) == list(range(len(appended)))
    assert len(appended) >= 12
    assert state(apps[0].session(session_id)) == state(fresh(apps[0], session_id))
    assert state(apps[1].session(session_id)) == state(fresh(apps[0], session_id))
