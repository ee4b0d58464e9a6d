"""What a worker keeps from one request to the next stays within its stated size, however
many distinct sessions and messages go by (`tests/reliability/soak.py` runs a worker for
minutes; these check each structure alone, in a second)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http.history import Parser, StoredDigests
from abridged.domain.messages import Message


@contextmanager
def held() -> Iterator[Callable[[], int]]:
    """The bytes allocated inside the block and still held (`held()()` after the work)."""
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]

        def measure() -> int:
            gc.collect()
            return int(tracemalloc.get_traced_memory()[0] - start)

        yield measure
    finally:
        tracemalloc.stop()


def test_the_parsed_messages_kept_stay_within_their_memory_budget() -> None:
    # Thousands of short messages (each new turn of each session is one): weighed by their
    # text alone, they held eight times the budget.
    budget = 2_000_000
    turns = [
        [{"role": "user", "content": f"session {k}, turn {t}: go on"}] for k in range(2_000)
        for t in range(10)
    ]  # fmt: skip
    with held() as memory:
        parser = Parser(bytes_kept=budget)
        for turn in turns:
            parser.parse(turn)
        assert memory() <= budget
    assert parser.parse(turns[-1]).messages[0].text == "session 1999, turn 9: go on"


def test_the_stored_digests_kept_stay_within_their_memory_budget() -> None:
    # Sessions as an agent harness makes them: a long system prompt and tools, and many
    # messages. Kept by their number alone (4,096), such sessions held gigabytes.
    app = bootstrap(None)
    system = "You are a careful coding agent. " * 600
    tools = [{"name": f"tool_{k}", "description": "Does a thing. " * 40,
              "input_schema": {"type": "object"}} for k in range(20)]  # fmt: skip
    turns = [Message.user(f"turn {t}") if t % 2 == 0 else Message.assistant(f"done {t}")
             for t in range(199)]  # fmt: skip
    sessions = [
        app.start_session(
            model="claude-sonnet-4-6", max_output_tokens=1_000, system=system, tools=tools,
            messages=turns,
        )
        for _ in range(60)
    ]  # fmt: skip
    budget = 1_000_000
    with held() as memory:
        stored = StoredDigests(app, bytes_kept=budget)
        for session_id in sessions:
            assert stored.get(session_id) is not None
        assert memory() <= budget
    assert len(stored.get(sessions[0]).digests) == len(turns)  # type: ignore[union-attr]
    app.close()
