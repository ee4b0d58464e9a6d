"""What a worker keeps of the sessions it writes, and its request locks on PostgreSQL.

A worker fast-forwards its view of a session's stored messages with the events it saves
instead of reading them back; that view must be the one a worker reading the store builds,
or requests would be routed to a branch. The request lock of one process must reach a
waiting process once released, although the release is sent off the request's path.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import uuid4

from abridged.adapters.bootstrap import bootstrap, persistence_env
from abridged.adapters.http.history import StoredDigests
from abridged.adapters.http.locks import RequestLocks
from abridged.domain.events import MessageAppended
from tests.support.postgres import fresh_database

MODEL = "claude-sonnet-4-6"
TOOLS = [{"name": "read", "description": "reads a file", "input_schema": {"type": "object"}}]

MESSAGES = [
    {"role": "user", "content": "read the log"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "look at it", "signature": "c2lnbmF0dXJl"},
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "a.log"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "line\n" * 40_000},
            {"type": "text", "text": "and? é ✓"},
        ],
    },
]


def test_a_workers_own_saves_give_the_digests_the_store_gives(postgres_server: str) -> None:
    db = fresh_database(postgres_server)
    worker, other = bootstrap(db), bootstrap(db)
    try:
        live, read = StoredDigests(worker), StoredDigests(other)
        session_id = uuid4()
        worker.start_session(
            session_id=session_id,
            model=MODEL,
            max_output_tokens=1_000,
            system="be brief",
            tools=TOOLS,
        )
        assert live.get(session_id) is not None
        for message in MESSAGES:
            worker.append_message(session_id, message)
        worker.reconfigure(session_id, system="be briefer")

        # Nothing read back: the worker's view moved with its own saves, and its one query
        # (for what other workers wrote since) finds nothing.
        events = worker.events
        read_back: list[int] = []
        select = events.get

        def counted(*args: Any, **kwargs: Any) -> Any:
            found = list(select(*args, **kwargs))
            read_back.append(len(found))
            return found

        events.get = counted  # type: ignore[method-assign]
        known = live.get(session_id)
        assert read_back == [0]
        stored = read.get(session_id)
        assert stored is not None
        assert known == stored
        assert len(known.digests) == len(MESSAGES)
        assert known.shape is not None
        assert known.shape.system == "be briefer"
        appended = [e for e in other.history(session_id) if isinstance(e, MessageAppended)]
        assert list(known.versions) == [e.originator_version for e in appended]
    finally:
        worker.close()
        other.close()


def test_a_released_request_lock_reaches_a_process_waiting_for_it(postgres_server: str) -> None:
    env = persistence_env(fresh_database(postgres_server))
    first, second = RequestLocks(env), RequestLocks(env)
    session_id = uuid4()
    order: list[str] = []
    try:
        with first.held(session_id):

            def wait() -> None:
                with second.held(session_id):
                    order.append("second")

            waiter = threading.Thread(target=wait)
            waiter.start()
            time.sleep(0.3)
            assert order == []  # the other process waits at the server
            order.append("first")
        waiter.join(timeout=30)
        assert order == ["first", "second"]
        # Taken again at once by both, one after the other: no lock is left held.
        for locks in (first, second, first):
            with locks.held(session_id):
                pass
    finally:
        first.close()
        second.close()
