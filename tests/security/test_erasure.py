"""An erase that holds: nothing of an erased session is saved after it (a compaction whose
summarizer was slow included), its derived sessions go with it, and its bytes leave the
SQLite file and its write-ahead log. Every race runs on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.bootstrap import bootstrap, persistence_env
from abridged.adapters.erasure import erase_stored_events
from abridged.application.ports import Summary
from abridged.application.service import Sessions
from abridged.domain.errors import SessionErasedError, UnknownSessionError
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from tests.support.builders import words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.postgres import fresh_database

SECRET = "hunter2-erase-me-7f3a9c"


class SlowSummarizer:
    """Copies the conversation's text into its summary (the secret with it), once told to go."""

    def __init__(self) -> None:
        self.called = threading.Event()
        self.go = threading.Event()

    @property
    def name(self) -> str:
        return "slow"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        self.called.set()
        assert self.go.wait(30), "the test never let the summarizer finish"
        text = " ".join(" ".join(m.text.split()[:5]) for m in messages)
        return Summary(text=text, model="slow-v1", input_tokens=10, output_tokens=10)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    return fresh_database(request.getfixturevalue("postgres_server"))


def service(db: str, summarizer: object, *, shared_locks: bool = True) -> Sessions:
    """A service on `db` as another process would open it; without `shared_locks`, one that
    takes no lock another process would see (as on SQLite)."""
    if shared_locks:
        return bootstrap(db, counter=FakeTokenCounter(), summarizer=summarizer)  # type: ignore[arg-type]
    return Sessions(
        counter=FakeTokenCounter(),
        summarizer=summarizer,  # type: ignore[arg-type]
        env=persistence_env(db),
        erase_events=erase_stored_events,
        background=False,
    )


def secret_session(app: Sessions, turns: int = 6) -> UUID:
    session_id = app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        settings=CompactionSettings(threshold_floor_tokens=0, keep_recent_turns=1),
    )
    for i in range(turns):
        app.append_message(session_id, Message.user(f"{SECRET} is my password, turn {i}"))
        app.record_reply(session_id, Message.assistant(f"Noted {i}. {words(30)}"))
    return session_id


def stored_rows(db: str, session_id: UUID) -> int:
    """Rows of the session in every table of the store, read without the service."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            return sum(
                conn.execute(
                    f"SELECT count(*) FROM {table} WHERE originator_id = %s", (session_id,)
                ).fetchone()[0]  # type: ignore[index]
                for table in ("sessions_events", "sessions_snapshots")
            )
    with sqlite3.connect(db) as conn:
        return sum(
            conn.execute(
                f"SELECT count(*) FROM {table} WHERE originator_id = ?", (session_id.hex,)
            ).fetchone()[0]
            for table in ("stored_events", "stored_snapshots")
        )


def run(target: Any, *args: Any, **kwargs: Any) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def body() -> None:
        try:
            outcome.append(target(*args, **kwargs))
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=body)
    thread.start()
    return thread, outcome


def test_a_compaction_slower_than_the_erase_saves_nothing_of_the_erased_session(db: str) -> None:
    # Two processes, with no lock in common: the store's tombstone alone must refuse.
    slow = SlowSummarizer()
    compacting = service(db, slow, shared_locks=False)
    session_id = secret_session(compacting)
    erasing = service(db, SlowSummarizer(), shared_locks=False)

    thread, outcome = run(compacting.compact, session_id)
    assert slow.called.wait(10)
    assert erasing.delete_session(str(session_id), "user request", erase=True) == (session_id,)
    slow.go.set()
    thread.join(30)

    assert isinstance(outcome[0], SessionErasedError)
    assert stored_rows(db, session_id) == 0
    with pytest.raises(UnknownSessionError):
        service(db, SlowSummarizer()).history(session_id)
    with pytest.raises(SessionErasedError):  # nor can the id be started again
        compacting.start_session(model="m", max_output_tokens=10, session_id=session_id)


def test_an_erase_waits_for_the_compaction_under_way_then_erases_it_all(db: str) -> None:
    # One service (threads), or PostgreSQL's advisory lock between processes.
    slow = SlowSummarizer()
    compacting = service(db, slow)
    session_id = secret_session(compacting)
    erasing = compacting if db.endswith("sqlite3") else service(db, SlowSummarizer())

    compaction, _ = run(compacting.compact, session_id)
    assert slow.called.wait(10)
    erase, erased = run(erasing.delete_session, session_id, "user request", erase=True)
    time.sleep(0.3)
    assert erase.is_alive()  # held back by the compaction's lock
    slow.go.set()
    compaction.join(30)
    erase.join(30)

    assert erased == [(session_id,)]
    assert stored_rows(db, session_id) == 0
    with pytest.raises(UnknownSessionError):
        compacting.history(session_id)


def test_erasing_takes_the_sessions_derived_from_it(db: str) -> None:
    app = service(db, SlowSummarizer())
    app.summarizer.inner.go.set()  # type: ignore[attr-defined]
    parent = secret_session(app, turns=3)
    resumed = app.resume_session(parent)
    cleared = app.clear_session(resumed)
    unrelated = secret_session(app, turns=1)

    assert app.derived_sessions(str(parent)) == (resumed, cleared)
    erased = app.delete_session(parent, "user request", erase=True)

    assert set(erased) == {parent, resumed, cleared}
    for session_id in erased:
        assert stored_rows(db, session_id) == 0
    assert [s.id for s in app.list_sessions().sessions] == [unrelated]


def test_erasing_a_deleted_session_takes_its_deleted_derived_sessions(db: str) -> None:
    # Deleted first (the session and a session started from it), erased later: a deleted
    # session still holds its events, so the erase finds and removes it as well.
    app = service(db, SlowSummarizer())
    app.summarizer.inner.go.set()  # type: ignore[attr-defined]
    parent = secret_session(app, turns=3)
    resumed = app.resume_session(parent)
    cleared = app.clear_session(resumed)
    app.delete_session(resumed, "user request")
    app.delete_session(parent, "user request")

    erased = app.delete_session(parent, "user request", erase=True)

    assert set(erased) == {parent, resumed, cleared}
    for session_id in erased:
        assert stored_rows(db, session_id) == 0


def test_erasing_without_cascade_keeps_the_derived_sessions(db: str) -> None:
    app = service(db, SlowSummarizer())
    app.summarizer.inner.go.set()  # type: ignore[attr-defined]
    parent = secret_session(app, turns=3)
    resumed = app.resume_session(parent)

    assert app.delete_session(parent, "user request", erase=True, cascade=False) == (parent,)
    assert app.history(resumed)[0].parent_id == parent  # type: ignore[attr-defined]


def test_another_process_that_held_the_session_cannot_read_or_send_it_after_the_erase(
    db: str,
) -> None:
    # The second service loaded the session (it is in its cache, up to date); the first
    # erases it. A load that finds nothing new must not hand out the cached content.
    first, second = service(db, FakeSummarizer()), service(db, FakeSummarizer())
    try:
        session_id = secret_session(first, turns=2)
        first.append_message(session_id, Message.user(f"{SECRET}, once more"))
        assert SECRET in str(second.prepare_request(session_id).context.messages)
        first.delete_session(session_id, "the user asked", erase=True)

        for read in (second.session, second.prepare_request, second.stats):
            with pytest.raises(UnknownSessionError):
                read(session_id)
        with pytest.raises(UnknownSessionError):
            second.record_reply(session_id, Message.assistant("An answer to nothing."))
        assert stored_rows(db, session_id) == 0
    finally:
        first.close()
        second.close()


@pytest.fixture
def upstream_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite connections as upstream SQLite builds open them: `secure_delete` off (some
    distributions turn it on at build time)."""
    connect = sqlite3.connect

    def upstream(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = connect(*args, **kwargs)
        connection.execute("PRAGMA secure_delete=OFF")
        return connection

    monkeypatch.setattr(sqlite3, "connect", upstream)


@pytest.mark.usefixtures("upstream_sqlite")
def test_the_erased_secret_leaves_the_sqlite_file_and_its_log(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    app = service(str(path), SlowSummarizer())
    app.summarizer.inner.go.set()  # type: ignore[attr-defined]
    kept = app.start_session(model="claude-test", max_output_tokens=100, context_window=3_000)
    app.append_message(kept, Message.user("nothing secret here"))
    session_id = secret_session(app)
    app.compact(session_id)  # the secret in a summary and ledger too
    assert SECRET.encode() in path.read_bytes() + _wal(path)

    app.delete_session(session_id, "user request", erase=True)
    app.append_message(kept, Message.assistant("still here"))

    assert SECRET.encode() not in path.read_bytes()
    assert SECRET.encode() not in _wal(path)
    app.close()
    assert SECRET.encode() not in path.read_bytes() + _wal(path)


def _wal(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


def test_the_compactions_read_model_rows_go_with_the_session(tmp_path: Path) -> None:
    from abridged.adapters.read_model import CompactionsReadModel, read_model_url

    path = tmp_path / "sessions.sqlite3"
    app = service(str(path), SlowSummarizer())
    app.summarizer.inner.go.set()  # type: ignore[attr-defined]
    session_id = secret_session(app)
    app.compact(session_id)
    model = CompactionsReadModel(read_model_url(path))
    model.update(app)
    assert model.rows(session_id)

    app.delete_session(session_id, "user request", erase=True)

    assert model.rows(session_id) == []


def test_an_encrypted_store_holds_no_clear_text_and_erases_alike(tmp_path: Path) -> None:
    pytest.importorskip("Crypto", reason="encryption at rest needs abridged[encryption]")
    from eventsourcing.cipher import AESCipher

    path = tmp_path / "sessions.sqlite3"
    env = {"CIPHER_TOPIC": "eventsourcing.cipher:AESCipher", "CIPHER_KEY": AESCipher.create_key(32)}
    app = bootstrap(path, counter=FakeTokenCounter(), env=env)
    session_id = secret_session(app, turns=30)  # past a snapshot
    app.close()
    assert SECRET.encode() not in path.read_bytes() + _wal(path)

    again = bootstrap(path, counter=FakeTokenCounter(), env=env)
    assert again.session(session_id).message_count == 60
    assert again.delete_session(session_id, "user request", erase=True) == (session_id,)
    assert stored_rows(str(path), session_id) == 0
