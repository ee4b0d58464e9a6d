"""Benchmark: where a new 1 MB message's time goes in the proxy, span by span.

Drives the proxy's own path in one process over a temporary PostgreSQL (the request's
JSON parsed and checked, `MessagesProxy._prepare`, the body sent upstream encoded, the fake
Messages API's answer, `_record`) with the serve benchmark's 1 MB first message, and times
each part with `perf_counter`: the parse of the messages, the two counts (the sampled count
of the whole message and the exact count of the part shown), the event's write, and the
whole. Prints the medians of N new messages (5 by default) after one warm-up.

Run with `python -m tests.benchmarks.new_message [--real] [N]` (`--real`: the serve
benchmark's stretches of real transcripts instead of its repeated log line).
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx2

from abridged.adapters import token_counters
from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import ServeConfig
from abridged.adapters.http import proxy as proxy_module
from abridged.adapters.http.history import Parser
from abridged.adapters.http.locks import RequestLocks
from abridged.adapters.http.metrics import ServeMetrics
from abridged.adapters.http.wire import check_messages_request
from abridged.domain import degradation
from tests.benchmarks.serve import MAX_TOKENS, MODEL, text
from tests.benchmarks.spans import print_medians, runs_from_argv, spans, timed
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.postgres import fresh_database, temporary_server


def instrument(sessions: Any) -> None:
    parse = timed("messages parsed (the parse cache's key, the digest)", Parser.parse)
    Parser.parse = parse  # type: ignore[method-assign]
    token_counters.sampled_count = timed(
        "counting: the whole message, sampled", token_counters.sampled_count
    )
    degradation.plan_degradations = timed(
        "counting: the part shown, exactly", degradation.plan_degradations
    )
    sessions.uow.save = timed("storing the events", sessions.uow.save)
    sessions.uow.save_new = timed("storing the events", sessions.uow.save_new)
    sessions.start_session = timed(
        "starting the session with its message, all", sessions.start_session
    )
    sessions.prepare_request = timed("preparing the request", sessions.prepare_request)


def main(runs: int) -> None:
    with FakeAnthropic() as fake, temporary_server() as server:
        fake.context_window = 10_000_000
        sessions = bootstrap(fresh_database(server))
        instrument(sessions)
        config = ServeConfig(db=":memory:", upstream=fake.base_url)
        proxy = proxy_module.MessagesProxy(
            sessions, config, httpx2.AsyncClient(), RequestLocks({}), ServeMetrics()
        )
        headers = {"x-api-key": TEST_API_KEY, "content-type": "application/json"}
        results: list[dict[str, float]] = []
        with httpx2.Client(base_url=fake.base_url) as upstream:
            for run in range(runs + 1):
                spans.clear()
                name = f"new-{run}"
                raw = json.dumps(
                    {
                        "model": MODEL,
                        "max_tokens": MAX_TOKENS,
                        "messages": [{"role": "user", "content": text(1_000_000, name)}],
                    }
                ).encode()
                started, cpu = time.perf_counter(), time.process_time()
                body = timed("the body's JSON parsed, checked", json.loads)(raw)
                check_messages_request(body)
                ready = proxy._prepare("default", name, body)
                content = json.dumps(ready.body, ensure_ascii=False).encode()
                answer = timed("the fake API's answer", upstream.post)(
                    "/v1/messages", content=content, headers=headers
                )
                timed("the reply recorded", proxy._record)(ready, answer.json())
                spans["the whole path, wall-clock"] = time.perf_counter() - started
                spans["the whole path, CPU"] = time.process_time() - cpu
                if run:  # the first warms the tokenizer and the connections
                    results.append(dict(spans))
        sessions.close()
    print_medians(results)


if __name__ == "__main__":
    main(runs_from_argv())
