"""Session management on real stores: a SQLite file and a PostgreSQL server, listed and
totalled from a second service as another process would, deletions included."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.erasure import ErasureNotSupportedError, erase_stored_events
from abridged.application.service import Sessions
from abridged.domain.errors import SessionDeletedError, SessionError, UnknownSessionError
from abridged.domain.messages import Message, Role
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
from tests.integration.test_stored_sessions import open_store as open_old_store
from tests.integration.test_stores import db, store_app
from tests.support.builders import TOOLS, turn, words

__all__ = ["db"]  # the store fixture, one run per store


def started(app: Sessions, user: str, tags: list[str]) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, keep_recent_turns=2),
        metadata={"user": user},
        tags=tags,
    )


def test_listing_totals_and_deletion_on_each_store(db: str) -> None:
    app = store_app(db)
    ids = [started(app, "ada" if i % 2 else "bob", ["agent"]) for i in range(5)]
    busy = ids[0]
    for i in range(8):
        for message in turn(f"Request {i}: {words(120)}", [words(120)]):
            if message.role is Role.ASSISTANT:
                prepared = app.prepare_request(busy)
                usage = Usage(input_tokens=10, cache_read_input_tokens=prepared.context.estimate)
                app.record_reply(busy, message, usage, prepared.context.raw_estimate)
            else:
                app.append_message(busy, message)
    app.delete_session(ids[4])

    other = store_app(db)
    everyone = other.list_sessions()
    adas = other.list_sessions(metadata={"user": "ada"}, limit=1)
    more = other.list_sessions(metadata={"user": "ada"}, limit=1, cursor=adas.next_cursor)
    stats = other.stats(busy)

    assert [s.id for s in everyone.sessions] == ids[3::-1]
    assert everyone.sessions[-1].last_activity > everyone.sessions[-1].created_at
    assert everyone.sessions[-1].version == len(other.history(busy))
    assert [s.id for s in adas.sessions + more.sessions] == [ids[3], ids[1]]
    assert more.next_cursor is None
    assert stats.requests == 16
    assert stats.compactions == len(other.compactions(busy)) >= 1
    assert stats.cache_read_input_tokens > 0
    with pytest.raises(SessionDeletedError):
        other.session(ids[4])
    other.append_message(ids[1], Message.user("Still here."))


def test_erasing_removes_every_stored_row_of_one_session_only(db: str) -> None:
    app = store_app(db)
    app.erase_events = erase_stored_events
    keep, erase = started(app, "ada", ["x"]), started(app, "bob", ["x"])
    for session_id in (keep, erase):
        for i in range(60):  # past the snapshot interval, so a snapshot is stored too
            app.append_message(session_id, Message.user(f"Question {i}"))
            app.record_reply(session_id, Message.assistant(f"Answer {i}"))
    app.delete_session(erase, reason="tombstone first")  # a deleted session may be erased
    assert app.snapshots is not None
    assert list(app.snapshots.recorder.select_events(erase))
    kept_rows = len(app.history(keep))

    app.delete_session(erase, reason="the user asked for erasure", erase=True)

    other = store_app(db)
    with pytest.raises(UnknownSessionError):
        other.history(erase)
    with pytest.raises(UnknownSessionError):
        app.session(erase)  # not even from the service's own cache
    assert other.snapshots is not None
    assert list(other.snapshots.recorder.select_events(erase)) == []
    assert [s.id for s in other.list_sessions().sessions] == [keep]
    assert len(other.history(keep)) == kept_rows
    other.append_message(keep, Message.user("Still here."))
    later = started(other, "carol", [])
    assert [s.id for s in other.list_sessions().sessions] == [later, keep]


def test_a_store_that_cannot_erase_changes_nothing() -> None:
    app = bootstrap(None)
    session_id = started(app, "ada", [])

    with pytest.raises(ErasureNotSupportedError):
        app.delete_session(session_id, erase=True)

    assert app.session(session_id).deleted is None
    with pytest.raises(SessionError, match="cannot erase"):
        store_app(":memory:").delete_session(session_id, erase=True)


def test_a_session_stored_by_an_earlier_version_is_listed_and_totalled(tmp_path: Path) -> None:
    app, session_id, data = open_old_store(tmp_path / "old.sqlite3")

    (info,) = app.list_sessions().sessions
    stats = app.stats(session_id)

    assert info.id == session_id
    assert (info.metadata, info.tags) == ({}, ())
    assert app.session(session_id).metadata == {}
    assert stats.messages == data["message_count"]
    assert stats.compactions == len(app.compactions(session_id)) == data["generation"]
