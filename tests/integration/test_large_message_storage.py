"""A large message is stored as its JSON itself, not escaped again inside its event's
JSON, and reads back byte for byte: through a cold load (a snapshot, and the rows of the
messages it points at), the event history and a second service, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psycopg
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.application.transcodings import message_json
from abridged.domain.events import MessageAppended
from tests.support.postgres import fresh_database

LINES = [
    json.dumps({"path": f"src/módulo_{k}.py", "say": 'a "quoted" \\ word', "k": k}) + "\n"
    for k in range(2_000)
]
TOOL_OUTPUT = "".join(LINES) + "日本語のテキスト\t\u2028🧑‍💻"
"""About 150 KB of JSON lines: quotes, backslashes, tabs, non-ASCII, as agents read them."""


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "large.sqlite3")
    server: str = request.getfixturevalue("postgres_server")
    return fresh_database(server)


def stored_states(db: str) -> list[bytes]:
    if db.startswith("postgresql"):
        with psycopg.connect(db) as connection:
            rows = connection.execute("SELECT state FROM sessions_events").fetchall()
            return [bytes(row[0]) for row in rows]
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT state FROM stored_events").fetchall()
        return [bytes(row[0]) for row in rows]


def test_a_large_message_is_stored_as_json_and_reads_back_exactly(db: str) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.jsonl"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": TOOL_OUTPUT}
    with bootstrap(db) as writer:
        session_id = writer.start_session(
            model="claude-sonnet-4-6",
            context_window=200_000,
            max_output_tokens=1_000,
            tools=[{"name": "Read", "input_schema": {"type": "object"}}],
        )
        writer.append_message(session_id, {"role": "user", "content": "Read a.jsonl"})
        writer.record_reply(session_id, {"role": "assistant", "content": [call]})
        writer.append_message(session_id, {"role": "user", "content": [result]})
        writer.record_reply(session_id, {"role": "assistant", "content": "Read."})
        # A cold load then reads the snapshot, and the messages it points at from their rows.
        writer.take_snapshot(session_id)
        writer.append_message(session_id, {"role": "user", "content": "Go on."})
        written = [message_json(e.message) for e in writer.session(session_id).entries]

    large = [state for state in stored_states(db) if b"toolu_1" in state and len(state) > 100_000]
    assert len(large) == 1
    assert b'"_type_":"message_wire"' in large[0]
    assert json.dumps(TOOL_OUTPUT, ensure_ascii=False).encode() in large[0]

    with bootstrap(db) as reader:
        assert [message_json(e.message) for e in reader.session(session_id).entries] == written
        appended = [e for e in reader.history(session_id) if isinstance(e, MessageAppended)]
        assert [message_json(e.message) for e in appended] == written
