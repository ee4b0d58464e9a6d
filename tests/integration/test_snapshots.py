"""Snapshots point at the stored messages: their size does not follow the retained tail's,
and a new service loads the session they describe, from a SQLite file and from PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.application import snapshots
from abridged.application.service import Sessions
from abridged.application.snapshot_columns import bodiless
from abridged.application.snapshots import snapshot_interval
from abridged.domain.messages import Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.integration.test_session_cache import fresh
from tests.integration.test_stored_sessions import FIXTURE, stored
from tests.integration.test_stores import db, state, store_app
from tests.support.builders import TOOLS, turn, words

__all__ = ["db"]  # the store fixture, used by name


def test_snapshots_stay_small_while_the_retained_tail_grows(db: str) -> None:
    app = store_app(db)
    session_id = app.start_session(
        model="claude-test",
        context_window=2_000_000,  # nothing is compacted: every message stays retained
        max_output_tokens=4_000,
        tools=TOOLS,
        settings=CompactionSettings(tool_output_mode="keep_all"),
    )
    for i in range(55):
        for message in turn(f"Request {i}", [words(600, "output"), words(400, "log")]):
            if message.role is Role.ASSISTANT:
                app.prepare_request(session_id)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    live = app.session(session_id)
    assert live.generation == 0
    assert app.snapshots is not None
    rows = app.snapshots.recorder.select_events(session_id)
    every = Sessions.snapshotting_intervals[Session]
    assert [r.originator_version for r in rows] == list(range(every, 331, every))
    stored_text = sum(len(json.dumps(e.message.to_wire())) for e in live.entries)
    for row in rows:
        body = row.state.decode()
        assert "output output" not in body
        assert "log log" not in body
    # 300 retained messages, a third with 600 words of output: 10 times what the snapshot is.
    assert len(rows[-1].state) * 10 < stored_text
    snapshot = next(iter(app.snapshots.get(session_id, desc=True, limit=1)))
    entries = snapshot.state["entries"]  # type: ignore[attr-defined]
    assert bodiless(entries) == len(entries) > 250

    reloaded = fresh(app, session_id)
    assert state(reloaded) == state(live)
    assert reloaded.entries[-1].message == live.entries[-1].message


def test_a_session_snapshotted_by_an_earlier_version_snapshots_and_loads_again(
    tmp_path: Path,
) -> None:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    session_id = UUID(data["session_id"])
    app = bootstrap(tmp_path / "old.sqlite3")
    app.recorder.insert_events(stored(data["events"], session_id))
    assert app.snapshots is not None
    app.snapshots.recorder.insert_events(stored(data["snapshots"], session_id))
    for message in turn("One more request", [words(50)]):
        if message.role is Role.ASSISTANT:
            app.prepare_request(session_id)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    live = app.session(session_id)

    app.take_snapshot(session_id)

    snapshot = next(iter(app.snapshots.get(session_id, desc=True, limit=1)))
    entries = snapshot.state["entries"]  # type: ignore[attr-defined]
    # The messages the old snapshot held whole stay whole; those appended since point.
    assert 0 < bodiless(entries) < len(entries)
    reloaded = Sessions(counter=app.counter, summarizer=app.summarizer, env=app.env).session(
        session_id
    )
    assert isinstance(reloaded, Session)
    assert state(reloaded) == state(live)


def test_the_snapshot_interval_grows_with_the_retained_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One retained message per event of interval (instead of 20) makes the tail long enough
    # for the interval to grow within a short session: 50 events, then 100, then 200.
    monkeypatch.setattr(snapshots, "TAIL_PER_INTERVAL", 1)
    app = bootstrap(tmp_path / "s.sqlite3")
    session_id = app.start_session(
        model="claude-test",
        context_window=2_000_000,
        max_output_tokens=4_000,
        tools=TOOLS,
        settings=CompactionSettings(tool_output_mode="keep_all"),
    )
    retained_at: dict[int, int] = {}
    for i in range(40):
        for message in turn(f"Request {i}", [words(30, "output")]):
            if message.role is Role.ASSISTANT:
                app.prepare_request(session_id)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
            live = app.session(session_id)
            retained_at[live.version] = len(live.entries)
    assert app.snapshots is not None
    taken = [r.originator_version for r in app.snapshots.recorder.select_events(session_id)]
    # Every version at which the interval for the tail then in view came due, and no other.
    due = [v for v, n in retained_at.items() if v % snapshot_interval(50, n) == 0]
    assert taken == due
    assert 50 in taken
    assert 100 in taken
    assert any(v % 50 == 0 and v not in taken for v in retained_at)  # some were skipped
    reloaded = fresh(app, session_id)
    assert state(reloaded) == state(live)
