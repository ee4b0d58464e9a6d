"""Benchmark: one hot session through the proxy's path, in one process over PostgreSQL.

Eight copies of each of eight requests of one conversation at once, as the serve
benchmark's hot session sends them, through `MessagesProxy._prepare` and `_record` (the
upstream stands in as a 3 ms pause). With `--services 2`, requests alternate between two
services, each with its own caches and lock connections, as two workers would; with
`--local-locks`, the request lock is the process's alone (no PostgreSQL lock), to show what
the server's lock costs. Prints requests/s, how long the request lock was waited for and
held, and how many events a read of what other services wrote returned.

Run with `python -m tests.benchmarks.hot_session [--services N] [--local-locks]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import httpx2

from abridged.adapters.bootstrap import bootstrap, persistence_env
from abridged.adapters.http import ServeConfig
from abridged.adapters.http.locks import RequestLocks
from abridged.adapters.http.metrics import ServeMetrics
from abridged.adapters.http.proxy import MessagesProxy
from tests.benchmarks.serve import MAX_TOKENS, MODEL, text
from tests.support.postgres import fresh_database, temporary_server

COPIES = 8
TURNS = 8
REPLY = {
    "id": "msg_hot",
    "type": "message",
    "role": "assistant",
    "model": MODEL,
    "content": [{"type": "text", "text": "done " * 20}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 100, "output_tokens": 10},
}

figures: dict[str, list[float]] = defaultdict(list)
figures_lock = threading.Lock()


def note(name: str, value: float) -> None:
    with figures_lock:
        figures[name].append(value)


def instrumented(proxy: MessagesProxy) -> MessagesProxy:
    held = proxy.locks.held

    @contextmanager
    def timed_held(session_id: UUID) -> Iterator[None]:
        asked = time.perf_counter()
        with held(session_id):
            got = time.perf_counter()
            try:
                yield
            finally:
                note("request lock waited for, ms", 1000 * (got - asked))
                note("request lock held, ms", 1000 * (time.perf_counter() - got))

    proxy.locks.held = timed_held  # type: ignore[method-assign]
    events: Any = proxy.sessions.events
    get = events.get

    def counted_get(*args: Any, **kwargs: Any) -> Any:
        read = list(get(*args, **kwargs))
        note("events read per store read", len(read))
        return iter(read)

    events.get = counted_get
    return proxy


def main(services: int, local_locks: bool) -> None:
    with temporary_server() as server:
        db = fresh_database(server)
        bootstrap(db).close()
        proxies = [
            instrumented(
                MessagesProxy(
                    bootstrap(db),
                    ServeConfig(db=db),
                    httpx2.AsyncClient(),
                    RequestLocks({} if local_locks else persistence_env(db)),
                    ServeMetrics(),
                )
            )
            for _ in range(services)
        ]

        def send(copy: int, history: list[Any]) -> None:
            proxy = proxies[copy % services]
            body = {"model": MODEL, "max_tokens": MAX_TOKENS, "messages": history}
            ready = proxy._prepare("default", "hot", json.loads(json.dumps(body)))
            time.sleep(0.003)  # the upstream answering
            proxy._record(ready, dict(REPLY))

        history: list[Any] = []
        started = time.perf_counter()
        with ThreadPoolExecutor(COPIES) as pool:
            for turn in range(TURNS):
                history.append({"role": "user", "content": text(2_000, f"hot turn {turn}")})
                list(pool.map(send, range(COPIES), [list(history)] * COPIES))
                history.append({"role": "assistant", "content": REPLY["content"]})
        elapsed = time.perf_counter() - started
        for proxy in proxies:
            proxy.locks.close()
            proxy.sessions.close()
    requests = COPIES * TURNS
    print(
        f"{services} service(s): {requests} requests in {elapsed:.2f} s, {requests / elapsed:.1f}/s"
    )
    for name, values in figures.items():
        median, mean = statistics.median(values), statistics.mean(values)
        print(f"  {name:<32} median {median:6.2f}  mean {mean:6.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=1)
    parser.add_argument("--local-locks", action="store_true")
    arguments = parser.parse_args()
    main(arguments.services, arguments.local_locks)
