"""Session management on real stores: a SQLite file and a PostgreSQL server, listed and
totalled from a second service as another process would, deletions included."""

from __future__ import annotations

from uuid import UUID

import pytest

from abridged.application.service import Sessions
from abridged.domain.errors import SessionDeletedError
from abridged.domain.messages import Message, Role
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
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
