"""Speed of listing sessions: `list_sessions` on a SQLite file of many sessions.

Run with `python -m tests.benchmarks.management [SESSIONS]`; prints the best of five runs of
the first page (50 sessions, no filter) and of a page filtered by metadata, in milliseconds.
A filter decodes every session's `Started` event, so it grows with the number of sessions.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from abridged.adapters.bootstrap import bootstrap

RUNS = 5


def best_ms(run: Callable[[], object]) -> float:
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings) * 1000


def main(sessions: int = 2_000) -> None:
    with tempfile.TemporaryDirectory() as folder:
        app = bootstrap(Path(folder) / "sessions.sqlite3")
        for i in range(sessions):
            app.start_session(
                model="claude-test",
                max_output_tokens=1_000,
                metadata={"user": f"user-{i % 50}"},
                tags=["bench"],
            )
        first = best_ms(lambda: app.list_sessions(limit=50))
        filtered = best_ms(lambda: app.list_sessions(metadata={"user": "user-7"}, limit=50))
        print(f"list_sessions over {sessions:,} sessions (SQLite), best of {RUNS}:")
        print(f"  first page of 50, no filter:   {first:8.1f} ms")
        print(f"  first page, metadata filter:   {filtered:8.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000)
