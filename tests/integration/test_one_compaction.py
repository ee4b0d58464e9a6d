"""One compaction at a time per session: concurrent requests that need the same compaction
get one summary between them, in one process (threads, asyncio tasks) on SQLite and across
processes on PostgreSQL; store conflicts surface as `ConcurrentWriteError`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from uuid import UUID

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError

from abridged.adapters.bootstrap import bootstrap, bootstrap_async, persistence_env
from abridged.adapters.postgres_locks import AdvisoryLocks, advisory_key
from abridged.application.locks import CommandLocks, ProcessLocks
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.errors import ConcurrentWriteError, StoreError
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.async_fakes import AsyncFakeSummarizer, SlowSummarizer
from tests.support.builders import TOOLS, turn, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.postgres import fresh_database

N = 8
ROOT = Path(__file__).resolve().parents[2]


def session_over_threshold(app: Sessions) -> UUID:
    """A session whose next request needs a compaction (appended without preparing)."""
    session_id = app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, tool_output_mode="keep_all"),
    )
    for i in range(12):
        for message in turn(f"Request {i}", [words(150)]):
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("And now?"))
    return session_id


def completed(app: Sessions, session_id: UUID) -> list[Session.CompactionCompleted]:
    return [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]


def test_concurrent_requests_in_one_process_share_one_compaction(tmp_path: Path) -> None:
    summarizer = SlowSummarizer(words(30, "fact"), delay=0.3)
    app = bootstrap(tmp_path / "s.sqlite3", counter=FakeTokenCounter(), summarizer=summarizer)
    session_id = session_over_threshold(app)
    barrier = threading.Barrier(N)
    results: list[PreparedRequest] = []

    def prepare() -> None:
        barrier.wait()
        results.append(app.prepare_request(session_id))

    threads = [threading.Thread(target=prepare) for _ in range(N)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(summarizer.calls) == 1
    assert len(completed(app, session_id)) == 1
    assert len(results) == N
    assert {r.compactions_so_far for r in results} == {1}
    assert len({r.context.messages for r in results}) == 1  # everyone got the same request
    assert len(app.locks) == 0  # type: ignore[arg-type]  # nothing left locked


def test_concurrent_awaited_requests_share_one_compaction(tmp_path: Path) -> None:
    inner = FakeSummarizer(words(30, "fact"))
    db = tmp_path / "s.sqlite3"
    session_id = session_over_threshold(bootstrap(db, counter=FakeTokenCounter()))

    async def race() -> list[PreparedRequest]:
        async with bootstrap_async(
            db, counter=FakeTokenCounter(), summarizer=AsyncFakeSummarizer(inner, delay=0.3)
        ) as sessions:
            return list(
                await asyncio.gather(*(sessions.prepare_request(session_id) for _ in range(N)))
            )

    results = asyncio.run(race())

    assert len(inner.calls) == 1
    assert {r.compactions_so_far for r in results} == {1}


def test_without_the_lock_each_request_would_summarize(tmp_path: Path) -> None:
    """The control: the race is real. With locks per call instead of per session (the
    compaction lock and the command lock), the concurrent requests all run the summarizer
    (and all but one lose their work)."""

    class NoLocks(ProcessLocks):
        def acquire(self, session_id: UUID):  # type: ignore[no-untyped-def]
            return super().acquire(UUID(int=threading.get_ident()))

    class NoCommandLocks(CommandLocks):
        def held(self, session_id: UUID):  # type: ignore[no-untyped-def]
            return super().held(UUID(int=threading.get_ident()))

    summarizer = SlowSummarizer(words(30, "fact"), delay=0.3)
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=summarizer,
        env=persistence_env(tmp_path / "s.sqlite3"),
        locks=NoLocks(),
    )
    app.command_locks = NoCommandLocks()
    session_id = session_over_threshold(app)
    barrier = threading.Barrier(4)

    def prepare() -> None:
        barrier.wait()
        app.prepare_request(session_id)

    threads = [threading.Thread(target=prepare) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(summarizer.calls) > 1
    assert len(completed(app, session_id)) == 1


@pytest.mark.parametrize("advisory", [True, False], ids=["advisory locks", "control"])
def test_processes_sharing_postgres_share_one_compaction(
    postgres_server: str, tmp_path: Path, advisory: bool
) -> None:
    """Four processes prepare at once. With the advisory locks (as `bootstrap` wires them),
    one summary in all; the control, with process-local locks only, shows the race is real."""
    db = fresh_database(postgres_server)
    flags = [] if advisory else ["--process-locks-only"]
    session_id = session_over_threshold(bootstrap(db, counter=FakeTokenCounter()))
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    racers = [
        subprocess.Popen(
            [
                sys.executable,
                *("-m", "tests.support.compaction_racer", db, str(session_id), str(go)),
                *flags,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        # Go once all four are warm: started at once, on a busy machine they would finish
        # starting seconds apart, and the control's race might not happen.
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob("ready-*"))) < len(racers):
            assert time.monotonic() < deadline, "the racers never got ready"
            assert all(r.poll() is None for r in racers), "a racer stopped before the race"
            time.sleep(0.01)
        go.touch()
        outputs = [racer.communicate(timeout=120) for racer in racers]
    finally:
        for racer in racers:
            racer.kill()
    results = []
    for (stdout, stderr), racer in zip(outputs, racers, strict=True):
        assert racer.returncode == 0, stderr
        results.append(json.loads(stdout.strip().splitlines()[-1]))

    calls = sum(r["calls"] for r in results)
    assert calls == 1 if advisory else calls > 1
    assert {r["generation"] for r in results} == {1}
    assert len(completed(bootstrap(db, counter=FakeTokenCounter()), session_id)) == 1


def test_an_advisory_lock_waits_for_another_connection(postgres_server: str) -> None:
    env = persistence_env(fresh_database(postgres_server))
    first, second = AdvisoryLocks(env), AdvisoryLocks(env)
    session_id = UUID(int=42)
    held = first.acquire(session_id)
    acquired = threading.Event()

    def other() -> None:
        second.acquire(session_id).release()
        acquired.set()

    thread = threading.Thread(target=other)
    thread.start()
    assert not acquired.wait(0.3)  # the other "process" waits while the lock is held
    held.release()
    assert acquired.wait(10)
    thread.join()
    assert advisory_key(session_id) == advisory_key(UUID(int=42))
    assert advisory_key(session_id) != advisory_key(UUID(int=43))


def test_a_lock_whose_connection_the_server_ended_is_released_and_a_dead_server_is_typed(
    postgres_server: str,
) -> None:
    """The server ends the lock's connection mid-compaction (a restart, an administrator):
    releasing it raised psycopg's `AdminShutdown`; the lock went with the connection, so the
    release is quiet and the next compaction can take the lock again. A server that cannot
    be reached is the store's typed error."""
    url = fresh_database(postgres_server)
    env = persistence_env(url)
    locks = AdvisoryLocks(env)
    session_id = UUID(int=7)
    held = locks.acquire(session_id)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks "
            "WHERE locktype = 'advisory' AND pid <> pg_backend_pid()"
        )
    held.release()  # no error
    locks.acquire(session_id).release()  # the lock is free again
    unreachable = AdvisoryLocks({**env, "POSTGRES_PORT": "1", "POSTGRES_HOST": "127.0.0.1"})
    with pytest.raises(StoreError, match="the session store failed"):
        unreachable.acquire(session_id)


def test_a_store_that_keeps_conflicting_raises_the_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = bootstrap(tmp_path / "s.sqlite3", counter=FakeTokenCounter())
    session_id = app.start_session(model="m", context_window=10_000, max_output_tokens=500)
    before = len(app.history(session_id))

    def conflict(*args: object, **kwargs: object) -> None:
        raise IntegrityError("another writer saved this version first")

    monkeypatch.setattr(app.recorder, "insert_events", conflict)
    with pytest.raises(ConcurrentWriteError):
        app.append_message(session_id, Message.user("Hello"))
    with pytest.raises(ConcurrentWriteError):
        app.reconfigure(session_id, system="A new prompt.")
    monkeypatch.undo()
    assert len(app.history(session_id)) == before


def test_a_session_id_taken_already_is_a_typed_error(tmp_path: Path) -> None:
    app = bootstrap(tmp_path / "s.sqlite3", counter=FakeTokenCounter())
    session_id = app.start_session(model="m", context_window=10_000, max_output_tokens=500)
    with pytest.raises(ConcurrentWriteError, match="exists already"):
        app.start_session(
            model="m", context_window=10_000, max_output_tokens=500, session_id=session_id
        )
