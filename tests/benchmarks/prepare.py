"""Benchmark: preparing the next request, and loading a session, as the history grows.

Builds sessions of 100, 1,000 and 10,000 messages through the real service and adapters
(SQLite file, tiktoken counter, extractive summarizer), then measures on each:

- prepare: `prepare_request` + `render_request` for the next request, over turns that
  continue the session (the user message before each is appended untimed): at least
  `--repeat` of them, and enough to span one snapshot interval;
- load: `bootstrap(db).session(id)` on a new service object after each of those turns (no
  in-memory cache), at the costliest version of a snapshot interval, and the peak memory
  `tracemalloc` sees while loading.

Run with `make bench` or `python -m tests.benchmarks.prepare --help`. It always exits 0: it
reports whether the flatness target holds, it does not enforce it.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import logging
import math
import os
import platform
import pstats
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from uuid import UUID

import attrs
import structlog

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.application.service import Sessions
from abridged.domain.messages import JSON
from abridged.domain.session import Session
from abridged.domain.usage import Usage

TARGET_RATIO = 1.5
SNAPSHOT_INTERVAL = Sessions.snapshotting_intervals[Session]
MODEL = "claude-sonnet-4-5"
MAX_OUTPUT_TOKENS = 4_096
CHARS_PER_TOKEN = 4.2
"""Characters per cl100k token of the generated code and logs, to size texts by tokens."""

# Tool output sizes in tokens: most between 100 and 2,000 around a median of 400, and now and
# then a huge one (a whole log or file), which the session shows head and tail.
RESULT_MEDIAN_TOKENS = 400
RESULT_SIGMA = 0.8
RESULT_RANGE = (100, 2_000)
HUGE_RESULT_SHARE = 0.015
HUGE_RESULT_RANGE = (8_000, 12_000)


# --- the generated conversation ------------------------------------------------------------

SYSTEM_PROMPT = """\
You are a coding agent working in a checked-out git repository on the user's machine. You fix
bugs, add features, refactor, run tests and explain code.

# Environment
- Working directory: /home/dev/ledger (a Python 3.12 service with a PostgreSQL database).
- Platform: linux. Shell: bash.

# How to work
- Read before you edit. Never guess file contents: read the file or search the code first.
- Keep changes minimal and in the style of the surrounding code.
- After each change, run the relevant tests. Before you say a task is done, run the whole
  suite, the linter and the type checker.
- When several calls do not depend on each other, make them in the same message.
- If a command fails, read the error and fix the cause; do not retry the same command blindly.
- Never commit unless the user asks. Never push.

# Tone
- Be concise. Say what you changed and why in a few sentences at the end of each task.
- Refer to code as `path:line` so the user can jump to it.
"""


def _tool(name: str, description: str, properties: dict[str, JSON]) -> dict[str, JSON]:
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": properties, "required": [*properties]},
    }


TOOLS: tuple[dict[str, JSON], ...] = (
    _tool(
        "run_command",
        "Runs a shell command in the repository and returns its output and exit code.",
        {"command": {"type": "string", "description": "The bash command line."}},
    ),
    _tool(
        "read_file",
        "Reads a file of the repository, with line numbers.",
        {"path": {"type": "string", "description": "Path relative to the repository root."}},
    ),
    _tool(
        "search_code",
        "Searches the repository for a regular expression, like grep -rn.",
        {"pattern": {"type": "string", "description": "A Python regular expression."}},
    ),
    _tool(
        "edit_file",
        "Replaces one exact occurrence of old_text by new_text in a file.",
        {
            "path": {"type": "string", "description": "The file to edit."},
            "old_text": {"type": "string", "description": "The text to replace, exactly."},
            "new_text": {"type": "string", "description": "The replacement."},
        },
    ),
    _tool(
        "list_dir",
        "Lists a directory of the repository, recursively to the given depth.",
        {"path": {"type": "string"}, "depth": {"type": "integer"}},
    ),
)

_PACKAGES = ("ledger", "ledger/api", "ledger/db", "ledger/billing", "ledger/auth", "tests")
_MODULES = (
    "models", "views", "invoices", "accounts", "payments", "schema", "migrations", "tasks",
    "serializers", "currency", "reports", "webhooks", "settings", "utils", "cache", "audit",
)  # fmt: skip
_NAMES = (
    "invoice", "account", "amount", "currency", "customer", "ledger_id", "balance", "entry",
    "payment", "refund", "status", "created_at", "total", "line_items", "tax_rate", "session",
    "request", "response", "payload", "result", "rows", "cursor", "config", "user", "token",
)  # fmt: skip
_WORDS = (
    "the", "invoice", "total", "is", "rounded", "before", "tax", "which", "breaks", "when",
    "currency", "has", "three", "decimals", "so", "I", "will", "move", "rounding", "into",
    "serializer", "and", "add", "a", "test", "for", "refunds", "that", "span", "two",
    "periods", "because", "migration", "drops", "index", "on", "ledger", "entries", "query",
    "plan", "shows", "sequential", "scan", "fix", "keeps", "API", "unchanged", "callers",
    "still", "pass", "cents", "webhook", "retries", "are", "idempotent", "now",
)  # fmt: skip
_ERRORS = (
    "AssertionError: assert Decimal('10.01') == Decimal('10.00')",
    "KeyError: 'currency'",
    "TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'",
    "psycopg.errors.UniqueViolation: duplicate key value violates unique constraint",
    "AttributeError: 'NoneType' object has no attribute 'account_id'",
    "ValueError: invalid literal for int() with base 10: 'N/A'",
)
_PROMPTS = (
    "The invoice totals are off by a cent for some currencies. Find out why and fix it.",
    "Add a refund endpoint to the billing API, with tests.",
    "The nightly report job got slow since last week; see what changed and speed it up.",
    "Webhook deliveries are sometimes sent twice. Make them idempotent.",
    "Rename `ledger_id` to `book_id` everywhere, including the migrations.",
    "Why does `tests/test_payments.py` fail on CI but pass locally?",
    "Explain how authentication tokens are refreshed, then add an expiry check.",
    "Move the currency rounding into one helper and use it in every serializer.",
)


def _path(rng: random.Random) -> str:
    return f"{rng.choice(_PACKAGES)}/{rng.choice(_MODULES)}.py"


def _sentence(rng: random.Random, low: int = 8, high: int = 22) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def _prose(rng: random.Random, tokens: int) -> str:
    sentences: list[str] = []
    size = 0
    while size < tokens * 4.5:  # prose runs about 4.5 characters per token
        sentence = _sentence(rng)
        if rng.random() < 0.15:
            sentence = f"- `{_path(rng)}`: {sentence}"
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences)


def _code_line(rng: random.Random, number: int) -> str:
    a, b, c = rng.choice(_NAMES), rng.choice(_NAMES), rng.choice(_NAMES)
    shapes = (
        f"    {a} = {b}.get({c!r}, 0)",
        f"    if {a} is None or {b} < {rng.randint(0, 999)}:",
        f"        return {a}.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)",
        f"def {a}_{b}(self, {c}: int) -> dict[str, Any]:",
        f"    for {a} in self.{b}.filter({c}={c}).order_by('-created_at'):",
        f"        raise ValueError(f'bad {a}: {{{b}!r}}')",
        f"    # {_sentence(rng, 4, 10)}",
        "",
    )
    return f"{number:>5}\t{rng.choice(shapes)}"


def _log_line(rng: random.Random, number: int) -> str:
    shapes = (
        f"{_path(rng)}::test_{rng.choice(_NAMES)}_{rng.choice(_NAMES)} PASSED"
        f"{' ' * rng.randint(1, 20)}[{number % 100:>3}%]",
        f"{_path(rng)}:{rng.randint(1, 900)}: in {rng.choice(_NAMES)}",
        f"2025-03-04T10:{number % 60:02d}:{rng.randint(0, 59):02d} INFO {rng.choice(_NAMES)} "
        f"id={rng.getrandbits(48):x} took {rng.randint(1, 900)}ms",
        f"E       {rng.choice(_ERRORS)}",
        f"{_path(rng)}:{rng.randint(1, 900)}:{rng.randint(1, 80)}: "
        f"{rng.choice(_NAMES)} = {rng.choice(_NAMES)}({rng.choice(_NAMES)})",
    )
    return rng.choice(shapes)


def _output(rng: random.Random, tokens: int, line: Callable[[random.Random, int], str]) -> str:
    lines: list[str] = []
    size = 0
    limit = tokens * CHARS_PER_TOKEN
    while size < limit:
        text = line(rng, len(lines) + 1)
        lines.append(text)
        size += len(text) + 1
    return "\n".join(lines)


def _result_tokens(rng: random.Random) -> int:
    if rng.random() < HUGE_RESULT_SHARE:
        return rng.randint(*HUGE_RESULT_RANGE)
    low, high = RESULT_RANGE
    drawn = rng.lognormvariate(math.log(RESULT_MEDIAN_TOKENS), RESULT_SIGMA)
    return int(min(high, max(low, drawn)))


class Conversation:
    """An endless, deterministic coding-agent conversation, one wire message at a time.

    A turn is a user request, one to eight tool exchanges (an assistant message with one to
    three tool calls, then a user message with their results) and a final answer.
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._ids = 0

    def __iter__(self) -> Iterator[dict[str, JSON]]:
        while True:
            yield from self._turn()

    def _tool_id(self) -> str:
        self._ids += 1
        return f"toolu_{self._ids:08d}"

    def _turn(self) -> Iterator[dict[str, JSON]]:
        rng = self._rng
        prompt = rng.choice(_PROMPTS)
        if rng.random() < 0.5:
            prompt += "\n\n" + _prose(rng, rng.randint(20, 200))
        yield {"role": "user", "content": prompt}
        for _ in range(rng.choice((1, 2, 2, 3, 3, 4, 4, 5, 6, 8))):
            calls = [self._call() for _ in range(rng.choice((1, 1, 1, 1, 2, 3)))]
            content: list[dict[str, JSON]] = []
            if rng.random() < 0.2:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": _prose(rng, rng.randint(40, 300)),
                        "signature": f"sig{rng.getrandbits(256):064x}",
                    }
                )
            content.append({"type": "text", "text": _prose(rng, rng.randint(15, 80))})
            content.extend(use for use, _ in calls)
            yield {"role": "assistant", "content": content}
            yield {"role": "user", "content": [result for _, result in calls]}
        yield {"role": "assistant", "content": _prose(rng, rng.randint(80, 500))}

    def _call(self) -> tuple[dict[str, JSON], dict[str, JSON]]:
        rng = self._rng
        tool_id = self._tool_id()
        name = rng.choice(("run_command", "run_command", "read_file", "search_code", "edit_file"))
        tokens = _result_tokens(rng)
        tool_input: dict[str, JSON]
        if name == "run_command":
            tool_input = {"command": f".venv/bin/pytest -x -q {_path(rng)}"}
            output = _output(rng, tokens, _log_line)
        elif name == "read_file":
            tool_input = {"path": _path(rng)}
            output = _output(rng, tokens, _code_line)
        elif name == "search_code":
            tool_input = {"pattern": rf"\b{rng.choice(_NAMES)}\b"}
            output = _output(rng, tokens, _log_line)
        else:
            old = _output(rng, rng.randint(20, 120), _code_line)
            new = _output(rng, rng.randint(20, 120), _code_line)
            tool_input = {"path": _path(rng), "old_text": old, "new_text": new}
            output = f"Edited {tool_input['path']}.\n" + _output(rng, tokens // 4, _code_line)
        use = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        result: dict[str, JSON] = {"type": "tool_result", "tool_use_id": tool_id}
        result["content"] = output
        if rng.random() < 0.08:
            result["is_error"] = True
        return use, result


# --- driving the service -------------------------------------------------------------------


@attrs.frozen
class Timing:
    """Seconds of wall-clock time, and of this process's CPU time (immune to other load)."""

    wall: float
    cpu: float


class Stopwatch:
    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    def lap(self) -> Timing:
        """The time since the last lap (or the start), and starts the next one."""
        wall, cpu = time.perf_counter(), time.process_time()
        timing = Timing(wall - self._wall, cpu - self._cpu)
        self._wall, self._cpu = wall, cpu
        return timing


@attrs.frozen
class Step:
    service: Timing
    """Every service call of the step (append; or prepare, render and record the reply)."""
    prepare: Timing | None = None
    """`prepare_request` + `render_request`, when the step was a reply."""
    compacted: bool = False
    pruned: bool = False
    """Whether that prepare pruned old tool outputs (without compacting)."""


class Host:
    """Feeds a conversation to a session the way a host app does, timing the service calls."""

    def __init__(
        self, app: Sessions, session_id: UUID, conversation: Iterator[dict[str, JSON]]
    ) -> None:
        self.app = app
        self.session_id = session_id
        self.conversation = conversation
        self.messages = 0

    def step(self) -> Step:
        """Feeds the next message; before a reply, prepares and renders the request for it."""
        message = next(self.conversation)
        app, sid = self.app, self.session_id
        self.messages += 1
        if message["role"] == "user":
            watch = Stopwatch()
            app.append_message(sid, message)
            return Step(watch.lap())
        watch = Stopwatch()
        prepared = app.prepare_request(sid)
        render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
        prepare = watch.lap()
        # The provider agrees with the estimate, so calibration stays at 1.0 and where the
        # session compacts depends only on the generated sizes.
        usage = Usage(input_tokens=prepared.context.estimate, output_tokens=200)
        app.record_reply(sid, message, usage)
        reply = watch.lap()
        service = Timing(prepare.wall + reply.wall, prepare.cpu + reply.cpu)
        return Step(service, prepare, prepared.compaction is not None, prepared.pruned_outputs > 0)


@attrs.frozen
class Load:
    open: Timing
    """`bootstrap(db)`: a new service object on the SQLite file."""
    load: Timing
    """`session(id)` on that new service: snapshot plus the events after it."""
    version: int
    replayed: int
    """Events applied after the snapshot."""


def _latest_snapshot(app: Sessions, session_id: UUID, version: int | None = None) -> int:
    """The version of the latest snapshot at or before `version` (0 when there is none)."""
    assert app.snapshots is not None
    found = list(app.snapshots.get(session_id, desc=True, limit=1, lte=version))
    return int(found[0].originator_version) if found else 0


def _load(db: Path, session_id: UUID, version: int | None = None) -> Load:
    watch = Stopwatch()
    fresh = bootstrap(db)
    opened = watch.lap()
    session = fresh.session(session_id, version)
    loaded = watch.lap()
    replayed = session.version - _latest_snapshot(fresh, session_id, version)
    fresh.close()
    return Load(opened, loaded, session.version, replayed)


def _load_peak(db: Path, session_id: UUID, version: int | None = None) -> int:
    """Peak bytes `tracemalloc` sees while a new service loads the session."""
    fresh = bootstrap(db)
    gc.collect()
    tracemalloc.start()
    fresh.session(session_id, version)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    fresh.close()
    return peak


@attrs.frozen
class Result:
    size: int
    session_id: UUID
    build: Timing
    turn_message: Timing
    """Service time per message in the measured turns, by the default service."""
    compactions_built: int
    events: int
    mean_message_tokens: float
    retained_entries: int
    summaries: int
    tail_tokens: int
    estimate: int
    prepares: tuple[Timing, ...]
    compacted: tuple[bool, ...]
    pruned: tuple[bool, ...]
    loads: tuple[Load, ...]
    worst_version: int
    worst_loads: tuple[Load, ...]
    peak_bytes: int
    worst_peak_bytes: int

    def prepare(self, compacting: bool | None = None) -> list[Timing]:
        """The measured prepares: all of them, or only those that did (not) compact."""
        return [
            t
            for t, c in zip(self.prepares, self.compacted, strict=True)
            if compacting is None or c is compacting
        ]

    def pruning(self) -> list[Timing]:
        """The measured prepares that pruned old tool outputs but did not compact."""
        return [t for t, p in zip(self.prepares, self.pruned, strict=True) if p]


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _bench_size(size: int, window: int, repeat: int, db: Path, seed: int) -> Result:
    db.unlink(missing_ok=True)
    app = bootstrap(db)
    sid = app.start_session(
        model=MODEL,
        context_window=window,
        max_output_tokens=min(MAX_OUTPUT_TOKENS, window // 4),
        system=SYSTEM_PROMPT,
        tools=TOOLS,
    )
    host = Host(app, sid, iter(Conversation(seed)))
    every = max(size // 4, 1)
    _progress(f"building {size:,} messages…")
    wall = cpu = 0.0
    while host.messages < size:
        spent = host.step().service
        wall, cpu = wall + spent.wall, cpu + spent.cpu
        if host.messages % every == 0 and host.messages < size:
            _progress(f"building {size:,} messages… {host.messages:,}/{size:,}")
    compactions_built = app.session(sid).generation

    # Each measured turn: the user's next message (untimed), prepare + render (timed), the
    # reply (untimed), then a load by a new service. A load costs a snapshot plus the events
    # after it, so it depends on where the version falls in the snapshot interval: the turns
    # go on until they span a whole interval, and every size sees every position once.
    _progress(f"measuring {size:,} messages…")
    start_version = _load(db, sid).version
    prepares: list[Timing] = []
    compacted: list[bool] = []
    pruned: list[bool] = []
    loads: list[Load] = []
    turns = Timing(0.0, 0.0)
    messages_before = host.messages
    gc.collect()
    while len(prepares) < repeat or loads[-1].version - start_version < SNAPSHOT_INTERVAL:
        step = host.step()
        turns = Timing(turns.wall + step.service.wall, turns.cpu + step.service.cpu)
        if step.prepare is not None:
            prepares.append(step.prepare)
            compacted.append(step.compacted)
            pruned.append(step.pruned and not step.compacted)
            loads.append(_load(db, sid))

    turn_messages = host.messages - messages_before
    session = app.session(sid)
    history = app.history(sid)
    app.close()
    tokens = [e.tokens for e in history if isinstance(e, Session.MessageAppended)]
    # The costliest load: a snapshot and a whole interval but one of events after it.
    last = SNAPSHOT_INTERVAL - 1
    worst = (session.version - last) // SNAPSHOT_INTERVAL * SNAPSHOT_INTERVAL + last
    worst_loads = [_load(db, sid, worst) for _ in range(repeat)]

    return Result(
        size=size,
        session_id=sid,
        build=Timing(wall, cpu),
        turn_message=Timing(turns.wall / turn_messages, turns.cpu / turn_messages),
        compactions_built=compactions_built,
        events=len(history),
        mean_message_tokens=statistics.fmean(tokens),
        retained_entries=len(session.entries),
        summaries=len(session.summaries),
        tail_tokens=session.tail_tokens,
        estimate=session.estimate(),
        prepares=tuple(prepares),
        compacted=tuple(compacted),
        pruned=tuple(pruned),
        loads=tuple(loads),
        worst_version=worst,
        worst_loads=tuple(worst_loads),
        peak_bytes=_load_peak(db, sid),
        worst_peak_bytes=_load_peak(db, sid, worst),
    )


# --- reporting -----------------------------------------------------------------------------


def _percentile(values: Sequence[float], share: float) -> float:
    """The median, or the nearest-rank percentile; `nan` for no values."""
    if not values:
        return math.nan
    if share == 0.5:
        return statistics.median(values)
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def _median_wall(timings: Sequence[Timing]) -> float:
    return _percentile([t.wall for t in timings], 0.5)


def _ms(timings: Sequence[Timing], share: float = 0.5, *, cpu: bool = False) -> str:
    if not timings:
        return "–"
    return f"{_percentile([t.cpu if cpu else t.wall for t in timings], share) * 1000:.2f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
    return "\n".join(lines)


def _cache_setting() -> str:
    """How the default service keeps sessions in memory between commands."""
    probe = bootstrap(None)
    repository = probe.repository
    probe.close()
    if repository.cache is None:
        return "no aggregate cache (each command loads the session from the store)"
    size = getattr(repository.cache, "maxsize", "?")
    return (
        f"aggregate cache of {size} sessions"
        + (", fast-forwarded from the store" if repository.fastforward else "")
        + (", copied for each command" if repository.deepcopy_from_cache else "")
    )


def report(results: Sequence[Result], window: int, repeat: int) -> str:
    state = _table(
        (
            "messages",
            "events",
            "compactions",
            "tokens/msg",
            "retained msgs",
            "summaries",
            "tail tokens",
            "estimate",
            "replayed/load (min–max)",
        ),
        [
            (
                f"{r.size:,}",
                f"{r.events:,}",
                f"{r.compactions_built}",
                f"{r.mean_message_tokens:.0f}",
                f"{r.retained_entries}",
                f"{r.summaries}",
                f"{r.tail_tokens:,}",
                f"{r.estimate:,}",
                f"{min(x.replayed for x in r.loads)}–{max(x.replayed for x in r.loads)}",
            )
            for r in results
        ],
    )
    build = _table(
        ("messages", "build s", "build ms/msg", "build cpu s", "measured turns: ms/msg"),
        [
            (
                f"{r.size:,}",
                f"{r.build.wall:.1f}",
                f"{r.build.wall / r.size * 1000:.2f}",
                f"{r.build.cpu:.1f}",
                f"{r.turn_message.wall * 1000:.2f}",
            )
            for r in results
        ],
    )
    prepare = _table(
        (
            "messages",
            "turns",
            "median ms",
            "p90 ms",
            "cpu median ms",
            "no compaction: median ms (n)",
            "of which pruning (n)",
            "compacting: median ms (n)",
        ),
        [
            (
                f"{r.size:,}",
                f"{len(r.prepares)}",
                _ms(r.prepares),
                _ms(r.prepares, 0.9),
                _ms(r.prepares, cpu=True),
                f"{_ms(r.prepare(False))} ({len(r.prepare(False))})",
                f"{_ms(r.pruning())} ({len(r.pruning())})",
                f"{_ms(r.prepare(True))} ({len(r.prepare(True))})",
            )
            for r in results
        ],
    )
    load = _table(
        (
            "messages",
            "median ms",
            "p90 ms",
            "cpu median ms",
            f"{SNAPSHOT_INTERVAL - 1} events: median ms",
            "open: median ms",
            "peak KiB",
            f"peak KiB ({SNAPSHOT_INTERVAL - 1} events)",
        ),
        [
            (
                f"{r.size:,}",
                _ms([x.load for x in r.loads]),
                _ms([x.load for x in r.loads], 0.9),
                _ms([x.load for x in r.loads], cpu=True),
                _ms([x.load for x in r.worst_loads]),
                _ms([x.open for x in r.loads]),
                f"{r.peak_bytes / 1024:,.0f}",
                f"{r.worst_peak_bytes / 1024:,.0f}",
            )
            for r in results
        ],
    )
    lines = [
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"{os.cpu_count()} CPUs, {platform.machine()} {platform.system()}",
        f"window {window:,} tokens ({min(MAX_OUTPUT_TOKENS, window // 4):,} reserved for "
        f"output); at least {repeat} measured turns per size, spanning a snapshot interval "
        f"({SNAPSHOT_INTERVAL} events); SQLite file, tiktoken cl100k, extractive summarizer",
        f"service: {_cache_setting()}, a snapshot every {SNAPSHOT_INTERVAL} events",
        "",
        "Sessions (after the measured turns; compactions counted at the end of the build):",
        state,
        "",
        "Build (every service call while feeding the messages; measured turns: the same, per "
        "message, during the measured turns):",
        build,
        "",
        "Prepare the next request (prepare_request + render_request):",
        prepare,
        "",
        "Load (session(id) on a new service after each measured turn; "
        f"'{SNAPSHOT_INTERVAL - 1} events': the costliest version, a snapshot and "
        f"{SNAPSHOT_INTERVAL - 1} events after it, loaded {repeat} times):",
        load,
    ]
    if len(results) > 1:
        small, large = results[0], results[-1]

        def ratio(figure: Callable[[Result], Sequence[Timing]]) -> float:
            return _median_wall(figure(large)) / _median_wall(figure(small))

        prepare_ratio = ratio(lambda r: r.prepares)
        load_ratio = ratio(lambda r: [x.load for x in r.loads])
        flat = prepare_ratio <= TARGET_RATIO and load_ratio <= TARGET_RATIO
        lines += [
            "",
            f"ratio {large.size:,}/{small.size:,} of the medians: prepare {prepare_ratio:.2f}× "
            f"(without compaction {ratio(lambda r: r.prepare(False)):.2f}×), "
            f"load {load_ratio:.2f}× ({SNAPSHOT_INTERVAL - 1} events "
            f"{ratio(lambda r: [x.load for x in r.worst_loads]):.2f}×)",
            f"flat (prepare and load within {TARGET_RATIO}×): {'yes' if flat else 'no'}",
        ]
    return "\n".join(lines)


def _profile_prepare(db: Path, session_id: UUID, seed: int, turns: int) -> str:
    """Where prepare's time goes on a stored session, by cProfile."""
    app = bootstrap(db)
    conversation = iter(Conversation(seed))
    # The same seed gives the same messages: skip those the session already holds.
    for _ in range(app.session(session_id).message_count):
        next(conversation)
    profiler = cProfile.Profile()
    done = 0
    while done < turns:
        message = next(conversation)
        if message["role"] == "user":
            app.append_message(session_id, message)
            continue
        profiler.enable()
        prepared = app.prepare_request(session_id)
        render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
        profiler.disable()
        app.record_reply(session_id, message, Usage(prepared.context.estimate, 200))
        done += 1
    app.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(30)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.prepare",
        description="Time to prepare the next request, and to load a session, by session size.",
    )
    parser.add_argument(
        "--sizes",
        default="100,1000,10000",
        help="session sizes in messages, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--window", type=int, default=32_000, help="context window in tokens (default: 32000)"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=30,
        help="at least this many measured turns per size, and loads of the costliest version "
        "(default: 30)",
    )
    parser.add_argument("--db-dir", type=Path, help="where the SQLite files go (default: temp)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated conversation")
    parser.add_argument(
        "--profile",
        type=int,
        metavar="TURNS",
        default=0,
        help="also profile this many prepares on the largest session and print the top calls",
    )
    args = parser.parse_args(argv)
    try:
        sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes takes numbers separated by commas, got {args.sizes!r}")
    if not sizes or min(sizes) < 2 or args.repeat < 1 or args.window < 4_000:
        parser.error("sizes need at least 2 messages, --repeat 1, --window 4000 tokens")
    # Even sizes end on a reply, so that the measured turns start with the user's message.
    sizes = sorted({s + s % 2 for s in sizes})

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(prefix="abridged-bench-") as temp:
        db_dir: Path = args.db_dir or Path(temp)
        db_dir.mkdir(parents=True, exist_ok=True)
        results = []
        for size in sizes:
            db = db_dir / f"session-{size}.sqlite"
            results.append(_bench_size(size, args.window, args.repeat, db, args.seed))
        print(report(results, args.window, args.repeat))
        if args.profile:
            largest = results[-1]
            db = db_dir / f"session-{largest.size}.sqlite"
            print(f"\ncProfile of {args.profile} prepares on the {largest.size:,}-message session:")
            print(_profile_prepare(db, largest.session_id, args.seed, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
