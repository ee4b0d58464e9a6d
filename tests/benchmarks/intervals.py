"""Benchmark: what the snapshot interval costs and buys, to choose it by measurement.

For each interval, a session of `--size` messages is built on a SQLite file by the host's
loop (as in `tests.benchmarks.loop`), in the compacting regime (32,000 tokens) and in the
growing one (nothing compacted). Then a new service loads the session at every version of the
last whole interval: the cold load's CPU time, median and maximum, and the build's CPU time
per request, which includes taking the snapshots.

Run with `python -m tests.benchmarks.intervals --help`.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import structlog

from abridged.adapters.bootstrap import persistence_env
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.service import Sessions
from abridged.domain.session import Session
from tests.benchmarks.loop import COMPACTING_WINDOW, MAX_OUTPUT_TOKENS, Host, growing_window
from tests.benchmarks.prepare import MODEL, SYSTEM_PROMPT, TOOLS


def service(db: Path, interval: int) -> Sessions:
    class Interval(Sessions):
        snapshotting_intervals = {Session: interval}  # noqa: RUF012 (read by the library)

    counter = TiktokenCounter()
    return Interval(
        counter=counter, summarizer=ExtractiveSummarizer(counter), env=persistence_env(db)
    )


def measure(folder: Path, regime: str, size: int, interval: int) -> str:
    db = folder / f"{regime}-{interval}.sqlite3"
    app = service(db, interval)
    window = COMPACTING_WINDOW if regime == "compacting" else growing_window(2 * size)
    sid = app.start_session(
        model=MODEL,
        context_window=window,
        max_output_tokens=MAX_OUTPUT_TOKENS,
        system=SYSTEM_PROMPT,
        tools=TOOLS,
    )
    host = Host(app, sid, 1)
    cpu = time.process_time()
    requests = 0
    while host.count < size:
        host.request()
        requests += 1
    build = (time.process_time() - cpu) / requests
    last = app.session(sid).version
    first = max(1, (last // interval - 1) * interval)
    loads = []
    for version in range(first, first + interval):
        fresh = service(db, interval)
        start = time.process_time()
        fresh.session(sid, version)
        loads.append(time.process_time() - start)
        fresh.close()
    assert app.snapshots is not None
    rows = app.snapshots.recorder.select_events(sid, desc=True, limit=1)
    app.close()
    return (
        f"{regime:>10}  {interval:>8}  {build * 1000:>13.2f}  "
        f"{statistics.median(loads) * 1000:>16.2f}  {max(loads) * 1000:>13.2f}  "
        f"{len(rows[0].state) / 1024 if rows else 0:>12.1f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000)
    parser.add_argument("--intervals", default="25,50,100,200")
    parser.add_argument("--regimes", default="compacting,growing")
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    print("    regime  interval  build CPU/req  cold load median  cold load max  snapshot KiB")
    with tempfile.TemporaryDirectory(prefix="abridged-intervals-") as folder:
        for regime in args.regimes.split(","):
            for interval in (int(i) for i in args.intervals.split(",")):
                print(measure(Path(folder), regime, args.size, interval), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
