"""A session's request lock passes between one worker's requests without going back to
PostgreSQL, and still reaches the other workers' requests in turn."""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import uuid4

import pytest

from abridged.adapters.bootstrap import persistence_env
from abridged.adapters.http import locks as locks_module
from abridged.adapters.http.locks import RequestLocks
from tests.support.postgres import fresh_database


def counting_lock_statements(locks: RequestLocks) -> list[int]:
    """Counts the connections `locks` takes from its pool to lock at the server."""
    taken: list[int] = []
    pool: Any = locks._pool
    getconn = pool.getconn

    def counted(*args: Any, **kwargs: Any) -> Any:
        taken.append(1)
        return getconn(*args, **kwargs)

    pool.getconn = counted
    return taken


def test_requests_waiting_in_one_worker_take_the_lock_in_turn_one_at_a_time(
    postgres_server: str,
) -> None:
    env = persistence_env(fresh_database(postgres_server))
    locks, other = RequestLocks(env), RequestLocks(env)
    taken = counting_lock_statements(locks)
    session_id = uuid4()
    inside, most, entered = [0], [0], []
    guard = threading.Lock()

    def request(n: int) -> None:
        with locks.held(session_id):
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.005)
            entered.append(n)
            with guard:
                inside[0] -= 1

    try:
        threads = [threading.Thread(target=request, args=(n,)) for n in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

        assert sorted(entered) == list(range(12))
        assert most[0] == 1
        assert len(taken) < 12  # handed on while others waited, not locked again each time
        with other.held(session_id):  # nothing is left held at the server
            pass
    finally:
        locks.close()
        other.close()


@pytest.mark.parametrize("handoffs", [locks_module.HANDOFFS, 2])
def test_a_worker_whose_requests_keep_coming_still_lets_another_worker_in(
    postgres_server: str, monkeypatch: pytest.MonkeyPatch, handoffs: int
) -> None:
    monkeypatch.setattr(locks_module, "HANDOFFS", handoffs)
    env = persistence_env(fresh_database(postgres_server))
    busy, other = RequestLocks(env), RequestLocks(env)
    session_id = uuid4()
    stop = threading.Event()
    got_in = threading.Event()

    def keep_requesting() -> None:
        while not stop.is_set():
            with busy.held(session_id):
                time.sleep(0.002)

    def come_in() -> None:
        with other.held(session_id):
            got_in.set()

    threads = [threading.Thread(target=keep_requesting) for _ in range(6)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(0.2)
        threading.Thread(target=come_in, daemon=True).start()

        assert got_in.wait(timeout=10)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        busy.close()
        other.close()
