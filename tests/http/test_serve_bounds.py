"""What a worker keeps from one request to the next stays within its stated size, however
many distinct sessions and messages go by (`tests/reliability/soak.py` runs a worker for
minutes; these check each structure alone, in a second)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from abridged.adapters.http.history import Parser


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
