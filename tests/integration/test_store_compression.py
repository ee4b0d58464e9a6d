"""PostgreSQL stores a large event with lz4 where the server has it, and it loads back."""

from __future__ import annotations

import psycopg
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.domain.events import MessageAppended
from abridged.domain.messages import Message
from tests.support.postgres import fresh_database

LOG = "".join(f"{k:06d} INFO worker processed item, all fine\n" for k in range(20_000))


def test_a_large_event_is_stored_with_lz4_and_loads_back(postgres_server: str) -> None:
    db = fresh_database(postgres_server)
    with psycopg.connect(db, autocommit=True) as probe:
        try:
            probe.execute("SET default_toast_compression = lz4")
        except psycopg.Error:
            pytest.skip("this PostgreSQL server is built without lz4")
    sessions = bootstrap(db)
    session_id = sessions.start_session(
        model="claude-sonnet-4-6", context_window=200_000, max_output_tokens=1_000
    )
    sessions.append_message(session_id, {"role": "user", "content": LOG})
    sessions.close()

    with psycopg.connect(db) as connection:
        methods = connection.execute(
            "SELECT DISTINCT pg_column_compression(state) FROM sessions_events "
            "WHERE pg_column_compression(state) IS NOT NULL"
        ).fetchall()
    reopened = bootstrap(db)
    try:
        assert methods == [("lz4",)]
        appended = [e for e in reopened.history(session_id) if isinstance(e, MessageAppended)]
        assert [e.message for e in appended] == [Message.user(LOG)]
    finally:
        reopened.close()
