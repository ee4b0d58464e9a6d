"""Per-turn content recorded for a model that binds thinking, and the writer of each reply,
come back from a SQLite store and its snapshots: a new service shows the very request the
live one showed."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from abridged.adapters.bootstrap import persistence_env
from abridged.application.service import Sessions
from abridged.domain.context import build_context
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, thinking_exchange, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def content(self, session_id: UUID) -> str | None:
        self.calls += 1
        return f"Reminder {self.calls}: run the tests."


def service(path: Path) -> Sessions:
    return Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(words(40, "fact")),
        env=persistence_env(str(path)),
        context_provider=Counting(),
    )


def test_a_new_service_shows_what_the_live_one_showed(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    app = service(path)
    session_id = app.start_session(
        model="claude-fable-5-1",
        context_window=100_000,
        max_output_tokens=500,
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    every = Sessions.snapshotting_intervals[Session]
    while app.session(session_id).version < every + 5:  # past a snapshot
        app.append_message(session_id, Message.user("Next step."))
        app.prepare_request(session_id)
        call, result = thinking_exchange(words(10))
        app.record_reply(session_id, call)
        app.append_message(session_id, result)
        app.prepare_request(session_id)
        app.record_reply(session_id, Message.assistant("Done."))
    app.append_message(session_id, Message.user("And now?"))
    live = app.session(session_id)
    assert app.snapshots is not None
    assert list(app.snapshots.get(session_id))

    loaded = Sessions(
        counter=FakeTokenCounter(), summarizer=FakeSummarizer("x"), env=app.env
    ).session(session_id)

    assert build_context(loaded) == build_context(live)
    assert loaded.turn_context_tokens == live.turn_context_tokens > 0
    assert [tuple(p) for p in loaded.thinking_producers] == [
        tuple(p) for p in live.thinking_producers
    ]
    assert loaded.producer_of(live.thinking_positions[-1]) == "claude-fable-5-1"
