"""One test per finding of the reliability probe that the catalogues do not already cover:
stores, counting, the system prompt's overflow, the summarizer's breaker."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from uuid import UUID

import psycopg
import pytest

from abridged.adapters import token_counters
from abridged.adapters.bootstrap import bootstrap, persistence_env
from abridged.adapters.stores import CREATE_TABLES_LOCK
from abridged.adapters.token_counters import (
    EXACT_COUNT_CHARS,
    SAMPLE_WINDOW_CHARS,
    TiktokenCounter,
)
from abridged.adapters.transcripts import TranscriptError, load_transcript
from abridged.application.guard import BreakerSettings, GuardedSummarizer
from abridged.application.ports import SummarizerError
from abridged.application.service import Sessions
from abridged.domain.errors import ContextOverflowError
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.postgres import fresh_database

RUN = {"name": "run", "input_schema": {"type": "object"}}


def test_a_string_session_id_works_on_sqlite(tmp_path: Path) -> None:
    app = bootstrap(tmp_path / "s.sqlite3")
    session_id = app.start_session(model="claude-sonnet-4-5", max_output_tokens=1_000)
    text = str(session_id)

    app.append_message(text, Message.user("hello"))

    assert app.session(text).message_count == 1
    assert len(app.history(text)) == 2
    assert app.prepare_request(text).session_id == session_id
    assert isinstance(
        app.start_session(model="m", max_output_tokens=10, session_id=str(UUID(int=7))), UUID
    )


def test_a_system_prompt_over_the_window_is_blamed_and_not_a_message(app: Sessions) -> None:
    # Refused when the session starts, before any message could be blamed for it.
    with pytest.raises(ContextOverflowError, match="system prompt") as raised:
        app.start_session(
            model="claude-test",
            context_window=2_000,
            max_output_tokens=500,
            system=" ".join(["rule"] * 3_000),
        )

    assert "message 1" not in str(raised.value)
    assert raised.value.position is None


def test_counting_text_far_longer_than_any_request_reads_a_bounded_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = TiktokenCounter()
    read: list[int] = []
    exact = TiktokenCounter._exact

    def recording(text: str) -> int:
        read.append(len(text))
        return exact(text)

    monkeypatch.setattr(TiktokenCounter, "_exact", staticmethod(recording))
    huge = "QUJDRA" * 2_000_000  # 12 MB without white space, like a base64 dump

    tokens = counter.count(huge)

    assert max(read) <= SAMPLE_WINDOW_CHARS
    assert sum(read) <= token_counters.SAMPLE_WINDOWS * SAMPLE_WINDOW_CHARS
    assert tokens >= exact(huge[:100_000]) * (len(huge) // 100_000)


def test_a_sampled_count_errs_on_the_side_of_too_many() -> None:
    text = "\n".join(f"{k:06d} ERROR worker crashed: {'x' * (k % 50)}" for k in range(12_000))
    assert len(text) > EXACT_COUNT_CHARS

    sampled = TiktokenCounter().count(text)
    exact = TiktokenCounter._exact(text)

    assert exact <= sampled <= exact * 1.3


def test_a_transcript_line_longer_than_the_limit_is_refused_without_reading_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("abridged.adapters.transcripts.MAX_LINE_BYTES", 1_000)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"role": "user", "content": "' + b"x" * 5_000 + b'"}\n')

    with pytest.raises(TranscriptError, match="longer than"):
        load_transcript(path)
    with pytest.raises(TranscriptError, match="line 1"):
        load_transcript("/dev/zero")


# The summarizer's breaker.


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_breaker_opens_after_repeated_failures_and_closes_after_a_good_trial() -> None:
    inner = FakeSummarizer(fail=3)
    clock = Clock()
    guard = GuardedSummarizer(inner, BreakerSettings(failures=3, cooldown=60), clock=clock)
    messages = (Message.user("hello there"),)
    for _ in range(3):
        with pytest.raises(SummarizerError):
            guard.summarize(messages, max_tokens=50)

    with pytest.raises(SummarizerError, match="circuit breaker"):
        guard.summarize(messages, max_tokens=50)
    assert len(inner.calls) == 3
    assert guard.is_open

    clock.now = 61
    assert guard.summarize(messages, max_tokens=50).text
    assert not guard.is_open


def test_an_untyped_summarizer_failure_becomes_a_summarizer_error() -> None:
    class Broken(FakeSummarizer):
        def summarize(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
            raise KeyError("choices")

    guard = GuardedSummarizer(Broken())  # type: ignore[arg-type]

    with pytest.raises(SummarizerError, match="KeyError"):
        guard.summarize((Message.user("x"),), max_tokens=50)


def test_breaker_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="budget"):
        BreakerSettings(budget=0)
    with pytest.raises(ValueError, match="failures"):
        BreakerSettings(failures=-1)


# PostgreSQL.


def pg_app(db: str) -> Sessions:
    return Sessions(
        counter=FakeTokenCounter(), summarizer=FakeSummarizer(), env=persistence_env(db)
    )


def test_store_connections_carry_a_statement_timeout(postgres_server: str) -> None:
    app = pg_app(fresh_database(postgres_server))
    datastore = app.recorder.datastore  # type: ignore[attr-defined]

    with datastore.get_connection() as connection:
        row = connection.execute("SHOW statement_timeout").fetchone()

    assert row is not None
    assert next(iter(row.values())) == "30s"


def test_tables_are_created_under_an_advisory_lock(postgres_server: str) -> None:
    db = fresh_database(postgres_server)
    opened = threading.Event()

    def open_store() -> None:
        pg_app(db).close()
        opened.set()

    with psycopg.connect(db, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (CREATE_TABLES_LOCK,))
        thread = threading.Thread(target=open_store, daemon=True)
        thread.start()
        time.sleep(0.5)
        assert not opened.is_set(), "tables were created without waiting for the lock"
        holder.execute("SELECT pg_advisory_unlock(%s)", (CREATE_TABLES_LOCK,))
    thread.join(timeout=30)
    assert opened.is_set()


def test_many_processes_bootstrapping_one_existing_store_all_succeed(postgres_server: str) -> None:
    from tests.reliability.stress import bootstrap_run

    db = fresh_database(postgres_server)
    pg_app(db).close()

    failures = bootstrap_run(db, processes=12)

    assert failures == []


def test_an_existing_store_opens_without_waiting_for_the_creation_lock(
    postgres_server: str,
) -> None:
    db = fresh_database(postgres_server)
    pg_app(db).close()
    with psycopg.connect(db, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (CREATE_TABLES_LOCK,))
        app = pg_app(db)  # would wait for the lock if it tried to create the tables
        session_id = app.start_session(model="m", context_window=20_000, max_output_tokens=100)
        assert app.session(session_id).message_count == 0


def test_an_unreachable_server_is_a_typed_error_in_bounded_time() -> None:
    from abridged.domain.errors import StoreError

    with pytest.raises(StoreError, match="cannot open the session store"):
        bootstrap("postgresql://u:secret@127.0.0.1:1/db")


def test_the_password_stays_out_of_store_errors() -> None:
    from abridged.domain.errors import StoreError

    with pytest.raises(StoreError) as raised:
        bootstrap("postgresql://u:secret@127.0.0.1:1/db")

    assert "secret" not in str(raised.value)


def test_a_large_tool_output_is_stored_on_postgresql(postgres_server: str) -> None:
    app = pg_app(fresh_database(postgres_server))
    session_id = app.start_session(
        model="m", context_window=200_000, max_output_tokens=1_000, tools=[RUN]
    )
    app.append_message(session_id, Message.user("go"))
    app.record_reply(session_id, Message.assistant(ToolUseBlock("t1", "run", {})))

    app.append_message(session_id, Message.user(ToolResultBlock("t1", "y " * 2_500_000)))

    assert app.session(session_id).message_count == 3


def test_a_message_of_nine_megabytes_is_stored_on_postgresql_when_allowed(
    postgres_server: str,
) -> None:
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(),
        env=persistence_env(fresh_database(postgres_server)),
        max_message_bytes=20_000_000,
    )
    session_id = app.start_session(
        model="m", context_window=200_000, max_output_tokens=1_000, tools=[RUN]
    )
    app.append_message(session_id, Message.user("go"))
    app.record_reply(session_id, Message.assistant(ToolUseBlock("t1", "run", {})))

    big = Message.user(ToolResultBlock("t1", "y" * 9_000_000))
    # In a thread, so that a regression (the insert never returning) fails instead of hanging.
    worker = threading.Thread(target=app.append_message, args=(session_id, big), daemon=True)
    worker.start()
    worker.join(timeout=120)

    assert not worker.is_alive(), "storing the message did not return"
    stored = app.history(session_id)[-1]
    assert len(stored.message.content[0].content) == 9_000_000  # type: ignore[attr-defined]
