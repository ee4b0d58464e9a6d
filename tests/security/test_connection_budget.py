"""Many processes on one PostgreSQL server: under the documented pool defaults, 64 processes
that bootstrap together on a server allowing 200 connections all get in, and each holds at
most two connections at rest (docs/security.md, "Connections")."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from abridged.adapters.bootstrap import bootstrap
from tests.support.postgres import fresh_database, server_binaries, temporary_server

PROCESSES = 64
MAX_CONNECTIONS = 200
DEADLINE = 120.0
"""Seconds the whole test may take: every process must be in and out by then."""


@pytest.fixture(scope="module")
def crowded_server() -> Iterator[str]:
    if server_binaries() is None:
        pytest.skip("PostgreSQL server binaries are not installed")
    with temporary_server(f"max_connections={MAX_CONNECTIONS}") as url:
        yield url


def one_process(db: str, started: Any, done: Any, results: Any) -> None:
    try:
        started.wait(DEADLINE)  # all bootstrap at once
        app = bootstrap(db)
        session_id = app.start_session(model="claude-test", max_output_tokens=100)
        app.append_message(session_id, {"role": "user", "content": "hello"})
        results.put(("ok", os.getpid()))
        with contextlib.suppress(threading.BrokenBarrierError):
            done.wait(DEADLINE)  # and hold their connections until every one is in
        app.close()
    except Exception as error:
        results.put(("failed", f"{type(error).__name__}: {error}"))
    finally:
        os._exit(0)


def client_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_64_processes_bootstrap_together_on_200_connections(crowded_server: str) -> None:
    db = fresh_database(crowded_server)
    bootstrap(db).close()  # the tables exist, as in a deployment
    forked = multiprocessing.get_context("fork")
    started, done = forked.Barrier(PROCESSES + 1), forked.Barrier(PROCESSES + 1)
    results = forked.Queue()
    begin = time.monotonic()
    processes = [
        forked.Process(target=one_process, args=(db, started, done, results))
        for _ in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    started.wait(DEADLINE)
    outcomes: list[tuple[str, object]] = []
    for _ in range(PROCESSES):
        try:
            outcomes.append(results.get(timeout=max(0.1, begin + DEADLINE - time.monotonic())))
        except queue.Empty:
            outcomes.append(("failed", "no answer before the deadline"))
            break
    held = client_connections(crowded_server)
    done.abort() if len(outcomes) < PROCESSES else done.wait(DEADLINE)
    for process in processes:
        process.join(10)
        if process.is_alive():
            process.kill()

    failures = [detail for status, detail in outcomes if status != "ok"]
    assert failures == []
    assert held <= 2 * PROCESSES, held
    assert time.monotonic() - begin < DEADLINE
