"""Benchmark: the whole loop a host runs for each request, as the history grows.

For each store (a SQLite file; a PostgreSQL server started for the run, as the tests start
one), each regime and each size (100, 1,000 and 10,000 messages), a session is built through
the real service and adapters (tiktoken counter, extractive summarizer) from the generated
coding-agent conversation of `tests.benchmarks.prepare`, by the loop itself. Then more requests
are measured, each one what a host does:

- append the user's message (`append_message`), prepare the request (`prepare_request`),
  record the model's reply with its usage (`record_reply`): the three calls, timed together
  and apart; every other request uses `append_and_prepare` instead of the first two;
- a cold load after some of them: a new service on the store, `session(id)`; a cold load
  reads no message body (`abridged.domain.tail`), so after the loop a few requests are made
  by new services, each the first after a cold load: the first `prepare_request` reads
  every retained body, the cost a cold load no longer has (reported apart, "first request");
- the memory one loaded session holds (`tracemalloc`, the session as the cache keeps it),
  as loaded and once its bodies are read.

The regimes: `compacting`, a 32,000-token window, where sessions compact again and again and
the retained tail stays bounded; and `growing`, a window whose compaction threshold is above
the whole history at its end (`growing_window`), where nothing is ever compacted or pruned
and the retained tail is every message.

The measured requests are the same at every size: the build ends at the end of a turn, and
the requests after it come from a second generated conversation (seed + 1, its tool ids
renamed), so the sizes differ by the history only, not by the messages timed.

The loop is measured first, with nothing else running in the process between its requests;
the cold loads come after, each after one more request. (A cold load of a long session
builds and frees tens of megabytes of objects, and the requests right after one ran up to
0.5 ms slower at 10,000 messages: a cost of the load, not of the loop.)

In the same run, the reference: the same loop with a naive estimator that re-tokenizes the
request (system prompt, tools and every message it sends) before each call, the way a host
without stored counts estimates.

Run with `make bench` or `python -m tests.benchmarks.loop --help`. It reports figures and
whether the targets hold; it never fails on them.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import math
import platform
import signal
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from uuid import UUID

import attrs
import structlog

from abridged.adapters.bootstrap import bootstrap
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.messages import JSON
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.tokens import REQUEST_OVERHEAD, block_tokens, system_tokens, tools_tokens
from abridged.domain.usage import Usage
from tests.benchmarks.prepare import MODEL, SYSTEM_PROMPT, TOOLS, Conversation

TARGET_MS = 1.0
TARGET_RATIO = 1.2
NAIVE_FACTOR = 40
COMPACTING_WINDOW = 32_000
MAX_OUTPUT_TOKENS = 4_096
TOKENS_PER_MESSAGE = 700
"""More than the generated conversation's mean (about 530), to size a window that never fills."""
LOAD_EVERY_LARGE = 5
"""At sizes over 1,000 messages, a cold load after every fifth request of the load phase."""
MAX_TURN_MESSAGES = 18
"""The most messages one generated turn holds (a prompt, eight exchanges, an answer): the
build ends at the end of a turn, at most this many messages past the size."""
STORE_ENV: dict[str, str] = {}
"""Settings every service of the run is opened with (`--synchronous`)."""


@attrs.frozen
class Timing:
    wall: float
    cpu: float


class Watch:
    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> Timing:
        wall, cpu = time.perf_counter(), time.process_time()
        timing = Timing(wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return timing


@attrs.frozen
class Request:
    total: Timing
    append: Timing | None
    prepare: Timing | None
    combined: Timing | None
    """`append_and_prepare`, when this request used it."""
    record: Timing
    compacted: bool


@attrs.frozen
class Result:
    store: str
    regime: str
    size: int
    window: int
    build_seconds: float
    requests: tuple[Request, ...]
    naive: tuple[Timing, ...]
    """The loop with the re-tokenizing estimator."""
    cold_loads: tuple[Timing, ...]
    first_requests: tuple[Request, ...]
    """Requests made by a new service right after its cold load (`session(id)`)."""
    memory_bytes: int
    memory_read_bytes: int
    """`memory_bytes` once the session's message bodies are read (as a request needs)."""
    messages: int
    """After the measured and the naive requests (the load phase adds more)."""
    events: int
    retained: int
    """Also after the measured and the naive requests."""
    generation: int
    """Compactions over the whole run."""
    snapshot_bytes: int

    def loop(
        self, *, compacting: bool | None = False, combined: bool | None = None, cpu: bool = False
    ) -> list[float]:
        return [
            r.total.cpu if cpu else r.total.wall
            for r in self.requests
            if (compacting is None or r.compacted is compacting)
            and (combined is None or (r.combined is not None) is combined)
        ]


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Host:
    """Runs the loop on one session: a user message, a request, the model's reply."""

    def __init__(self, app: Sessions, session_id: UUID, seed: int) -> None:
        self.app = app
        self.session_id = session_id
        self.conversation: Iterator[dict[str, JSON]] = iter(Conversation(seed))
        self.count = 0
        self.turn_ended = True
        """Whether the last reply ended its turn (it called no tool)."""

    def switch(self, seed: int) -> None:
        """Goes on with another conversation (at the end of a turn), its tool ids renamed so
        they never meet the first one's: the requests measured at every size are the same."""
        assert self.turn_ended
        self.conversation = _renamed(iter(Conversation(seed)), "toolu_m")

    def request(self, *, combined: bool = False, naive: bool = False) -> Request:
        app, sid = self.app, self.session_id
        user, reply = next(self.conversation), next(self.conversation)
        assert user["role"] == "user"
        assert reply["role"] == "assistant"
        self.count += 2
        recount = Timing(0.0, 0.0)
        watch = Watch()
        append = prepare = joint = None
        if combined:
            prepared = app.append_and_prepare(sid, user)
            joint = watch.lap()
        else:
            app.append_message(sid, user)
            append = watch.lap()
            prepared = app.prepare_request(sid)
            prepare = watch.lap()
        estimate = prepared.context.estimate
        if naive:
            watch.lap()
            estimate = naive_estimate(app, prepared)
            recount = watch.lap()
        usage = Usage(input_tokens=estimate, output_tokens=200)
        app.record_reply(sid, reply, usage, request_estimate=prepared.context.raw_estimate)
        record = watch.lap()
        content = reply["content"]
        self.turn_ended = not (
            isinstance(content, list) and any(b.get("type") == "tool_use" for b in content)
        )
        parts = [t for t in (append, prepare, joint, record) if t is not None]
        total = Timing(
            sum(t.wall for t in parts) + recount.wall, sum(t.cpu for t in parts) + recount.cpu
        )
        return Request(total, append, prepare, joint, record, prepared.compaction is not None)


def _renamed(messages: Iterator[dict[str, JSON]], prefix: str) -> Iterator[dict[str, JSON]]:
    """`messages` with each tool id's "toolu_" replaced by `prefix`."""
    for message in messages:
        content = message["content"]
        if not isinstance(content, list):
            yield message
            continue
        blocks = []
        for block in content:
            renamed = dict(block)
            for key in ("id", "tool_use_id"):
                if block.get("type") in ("tool_use", "tool_result") and key in block:
                    renamed[key] = block[key].replace("toolu_", prefix, 1)
            blocks.append(renamed)
        yield {**message, "content": blocks}


def naive_estimate(app: Sessions, prepared: PreparedRequest) -> int:
    """The request's tokens counted from its text, every time: what stored counts replace."""
    count = app.counter.count
    context = prepared.context
    tokens = REQUEST_OVERHEAD + system_tokens(context.system, count)
    tokens += tools_tokens(tuple(dict(t) for t in context.tools), count)
    for message in context.messages:
        tokens += sum(block_tokens(b, count) for b in message.content)
    return tokens


def _cold_load(location: str, session_id: UUID) -> Timing:
    fresh = bootstrap(location, env=STORE_ENV)
    watch = Watch()
    fresh.session(session_id)
    timing = watch.lap()
    fresh.close()
    return timing


def _first_request(host: Host, location: str) -> tuple[Timing, Request]:
    """A cold load by a new service, then the host's next request through it: the first
    prepare reads the bodies the load left in the store."""
    fresh = bootstrap(location, env=STORE_ENV)
    watch = Watch()
    fresh.session(host.session_id)
    load = watch.lap()
    app, host.app = host.app, fresh
    try:
        request = host.request()
    finally:
        host.app = app
        fresh.close()
    return load, request


def _memory(location: str, session_id: UUID) -> tuple[int, int]:
    """Bytes one loaded session holds, as the service's cache keeps it: as loaded, and once
    its message bodies are read."""
    fresh = bootstrap(location, env=STORE_ENV)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    session: object = fresh.repository.get(session_id)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    assert isinstance(session, Session)
    len(session.shown_messages[1:])  # reads every body
    len(session.entries[1:])
    gc.collect()
    read = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    fresh.close()
    return held, read


def growing_window(messages: int) -> int:
    """A window whose compaction threshold (`threshold_ratio` of it, on the default settings)
    stays above `messages` of the generated conversation: nothing compacts, and since pruning
    waits for `prune_min_share` of the budget to save (as large a share), nothing is pruned."""
    settings = CompactionSettings()
    share = min(settings.threshold_ratio, settings.prune_min_share)
    return max(COMPACTING_WINDOW, math.ceil(TOKENS_PER_MESSAGE * messages / share))


def _snapshot_bytes(app: Sessions, session_id: UUID) -> int:
    assert app.snapshots is not None
    rows = app.snapshots.recorder.select_events(session_id, desc=True, limit=1)
    return len(rows[0].state) if rows else 0


def bench(
    store: str, location: str, regime: str, size: int, measured: int, naive: int, seed: int
) -> Result:
    load_every = 1 if size <= 1_000 else LOAD_EVERY_LARGE
    loads_requests = -(-measured // load_every)
    first_count = max(2, loads_requests // 2)
    final = size + MAX_TURN_MESSAGES + 2 * (measured + loads_requests + first_count + naive)
    window = COMPACTING_WINDOW if regime == "compacting" else growing_window(final)
    app = bootstrap(location, env=STORE_ENV)
    sid = app.start_session(
        model=MODEL,
        context_window=window,
        max_output_tokens=MAX_OUTPUT_TOKENS,
        system=SYSTEM_PROMPT,
        tools=TOOLS,
    )
    host = Host(app, sid, seed)
    _progress(f"{store} {regime}: building {size:,} messages…")
    start = time.perf_counter()
    while host.count < size or not host.turn_ended:
        host.request()
    build = time.perf_counter() - start
    host.switch(seed + 1)
    _progress(f"{store} {regime}: measuring at {size:,} messages…")
    requests: list[Request] = []
    loads: list[Timing] = []
    gc.collect()
    for k in range(measured):
        requests.append(host.request(combined=k % 2 == 1))
    naive_times = [host.request(naive=True).total for _ in range(naive)]
    measured_session = app.session(sid)
    for k in range(loads_requests):
        host.request(combined=k % 2 == 1)
        loads.append(_cold_load(location, sid))
    firsts = [_first_request(host, location) for _ in range(first_count)]
    loads.extend(load for load, _ in firsts)
    memory, memory_read = _memory(location, sid)
    session = app.session(sid)
    events = len(app.history(sid))
    result = Result(
        store=store,
        regime=regime,
        size=size,
        window=window,
        build_seconds=build,
        requests=tuple(requests),
        naive=tuple(naive_times),
        cold_loads=tuple(loads),
        first_requests=tuple(request for _, request in firsts),
        memory_bytes=memory,
        memory_read_bytes=memory_read,
        messages=measured_session.message_count,
        events=events,
        retained=len(measured_session.entries),
        generation=session.generation,
        snapshot_bytes=_snapshot_bytes(app, sid),
    )
    app.close()
    return result


def _ms(values: Sequence[float], share: float = 0.5) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000:.2f}"


def _mean_ms(values: Sequence[float]) -> str:
    return f"{statistics.mean(values) * 1000:.2f}" if values else "-"


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
    return "\n".join(lines)


def _ratio(slow: Sequence[float], fast: Sequence[float]) -> float:
    return _median(slow) / _median(fast) if slow and fast else float("nan")


def report(results: Sequence[Result]) -> str:
    rows = []
    for r in results:
        plain = r.loop()
        parts = [q for q in r.requests if not q.compacted and q.combined is None]
        loads = [t.wall for t in r.cold_loads]
        firsts = [q.prepare.cpu for q in r.first_requests if q.prepare]
        rows.append(
            (
                r.store,
                r.regime,
                f"{r.messages:,}",
                f"{r.retained:,}",
                str(r.generation),
                f"{_ms(plain)} / {_ms(plain, 0.9)}",
                _ms(r.loop(cpu=True)),
                _mean_ms(r.loop(compacting=None, cpu=True)),
                _ms(r.loop(combined=False)),
                _ms(r.loop(combined=True)),
                _ms([q.append.cpu for q in parts if q.append]),
                _ms([q.prepare.cpu for q in parts if q.prepare]),
                _ms([q.record.cpu for q in parts]),
                _ms(r.loop(compacting=True)),
                f"{_ms(loads)} / {_ms(loads, 1)}",
                _ms([t.cpu for t in r.cold_loads]),
                _ms([q.append.cpu for q in r.first_requests if q.append]),
                f"{_ms(firsts)} / {_ms(firsts, 1)}",
                f"{r.memory_bytes / 1024:,.0f} / {r.memory_read_bytes / 1024:,.0f}",
                f"{r.snapshot_bytes / 1024:,.1f}",
                _ms([t.wall for t in r.naive]),
                f"{_ratio([t.wall for t in r.naive], plain):,.0f}x",
                f"{_ratio([t.cpu for t in r.naive], r.loop(cpu=True)):,.0f}x",
            )
        )
    table = _table(
        (
            "store",
            "regime",
            "messages",
            "retained",
            "compactions",
            "loop median / p90",
            "CPU",
            "CPU mean, all",
            "3 calls",
            "2 calls",
            "append CPU",
            "prepare CPU",
            "record CPU",
            "compacting",
            "cold load median / max",
            "CPU",
            "1st append CPU",
            "1st prepare CPU med / max",
            "KiB/session loaded / read",
            "snapshot KiB",
            "naive",
            "naive/loop",
            "CPU",
        ),
        rows,
    )
    lines = [
        "Per request, in ms of wall-clock time (CPU where it says so), over the requests that",
        "did not compact unless the column says so. '3 calls' = append_message +",
        "prepare_request + record_reply; '2 calls' = append_and_prepare + record_reply.",
        "'CPU mean, all': the mean over every measured request, compactions, prunes and",
        "snapshots included.",
        "'cold load': `session(id)` on a new service, which reads no message body; '1st':",
        "the append and prepare of the first request after a cold load, the prepare reading",
        "every retained body. 'KiB/session': held by one session as loaded, and once read.",
        "",
        table,
        "",
    ]
    for store in sorted({r.store for r in results}):
        for regime in sorted({r.regime for r in results}):
            group = sorted(
                (r for r in results if r.store == store and r.regime == regime),
                key=lambda r: r.size,
            )
            if not group:
                continue
            for cpu in (False, True):
                small, large = _median(group[0].loop(cpu=cpu)), _median(group[-1].loop(cpu=cpu))
                ratio = large / small
                naives = [
                    _ratio([t.cpu if cpu else t.wall for t in r.naive], r.loop(cpu=cpu))
                    for r in group
                ]
                # Like the 1 ms target, at the largest size: what re-counting the history
                # costs grows with it, and the design exists for long histories.
                naive = naives[-1]
                slowest = max(max(t.cpu if cpu else t.wall for t in r.cold_loads) for r in group)
                lines.append(
                    f"{store} {regime} ({'CPU' if cpu else 'wall'}): "
                    f"{group[-1].messages:,} messages {large * 1000:.2f} ms per request "
                    f"(<= {TARGET_MS} ms: {_yes(large * 1000 <= TARGET_MS)}); "
                    f"{ratio:.2f}x the {group[0].messages:,}-message figure "
                    f"(<= {TARGET_RATIO}x: {_yes(ratio <= TARGET_RATIO)}); "
                    f"naive reference {naive:,.0f}x slower at {group[-1].messages:,} "
                    f"messages (>= {NAIVE_FACTOR}x: {_yes(naive >= NAIVE_FACTOR)}; by size: "
                    + ", ".join(
                        f"{r.messages:,} {n:,.0f}x" for r, n in zip(group, naives, strict=True)
                    )
                    + "); "
                    f"slowest cold load {slowest * 1000:.1f} ms "
                    f"(<= 10 ms: {_yes(slowest <= 0.010)})"
                )
    lines.append("")
    lines.append(
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"{platform.system()}; SQLite synchronous="
        f"{STORE_ENV.get('ABRIDGED_SQLITE_SYNCHRONOUS', 'normal')}; build seconds: "
        + ", ".join(f"{r.store} {r.regime} {r.size:,}: {r.build_seconds:.1f}" for r in results)
    )
    return "\n".join(lines)


def _yes(holds: bool) -> str:
    return "yes" if holds else "no"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--regimes", default="compacting,growing")
    parser.add_argument("--requests", type=int, default=60, help="measured requests per session")
    parser.add_argument("--naive", type=int, default=3, help="naive reference requests")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--synchronous",
        choices=("normal", "full"),
        default="normal",
        help="how SQLite commits wait for the disk (ABRIDGED_SQLITE_SYNCHRONOUS)",
    )
    args = parser.parse_args(argv)
    STORE_ENV["ABRIDGED_SQLITE_SYNCHRONOUS"] = args.synchronous
    # Stopped from outside, the run still stops the PostgreSQL server it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    sizes = [int(s) for s in args.sizes.split(",")]
    stores = args.stores.split(",")
    regimes = args.regimes.split(",")
    results: list[Result] = []
    with (
        tempfile.TemporaryDirectory(prefix="abridged-bench-") as folder,
        contextlib.ExitStack() as stack,
    ):
        server = None
        if "postgres" in stores:
            from tests.support.postgres import fresh_database, temporary_server

            server = stack.enter_context(temporary_server())
        for store in stores:
            for regime in regimes:
                for size in sizes:
                    if store == "sqlite":
                        location = str(Path(folder) / f"{regime}-{size}.sqlite3")
                    else:
                        assert server is not None
                        location = fresh_database(server)
                    results.append(
                        bench(store, location, regime, size, args.requests, args.naive, args.seed)
                    )
                    _progress(report(results[-1:]).split("\n\n")[1].splitlines()[-1])
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
