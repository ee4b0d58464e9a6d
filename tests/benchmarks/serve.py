"""Load on `abridged serve`: 1, 2 and 4 uvicorn workers over one PostgreSQL, in front of the
local fake Messages API.

Run with `python -m tests.benchmarks.serve [--real] [--defer-compaction] [WORKERS ...]`
(`--real`: the conversations send stretches of the shared transcripts instead of one log
line repeated; `--defer-compaction`: the workers run with that flag);
prints, per worker count and scenario, requests per second, latency p50 / p99 through the
proxy, the same requests sent straight to the fake API, the difference (the latency the
proxy adds), and the requests lost, duplicated or invalid (checked against the store
afterwards). Scenarios:

- one at a time: one conversation, 16 turns, one request at a time (the proxy's own cost,
  without queueing); and a hundred conversations of 2 turns with a 1 MB first message, one
  conversation after the other (a hundred new 1 MB messages, a hundred continuing);
- many sessions: 16 conversations at once, 8 turns each, ~2 KB per new message;
- one hot session: one conversation whose every request is sent by 8 clients at once;
- 1 MB bodies: 4 conversations at once whose history starts with a 1 MB tool output.

A conversation that starts with 1 MB is reported twice: its first request ("new": the proxy
parses, checks and counts the 1 MB message and starts the session) and its later ones
("continuing": the 1 MB is in the history the client sends again, stored already).

The fake API runs in a process of its own; clients are threads of this process. Everything
(PostgreSQL, the workers, the fake API, the clients) shares this machine's cores; after each
scenario a line gives the CPU time each of them spent per request (from /proc), which says
where the cores went.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx2

from abridged.adapters.bootstrap import bootstrap
from abridged.domain.events import MessageAppended
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.postgres import fresh_database, temporary_server
from tests.support.serve import free_port

MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 64
DIRECT_WINDOW = 10_000_000
"""The fake API's window, so that it answers the 1 MB conversations sent to it directly."""


@attrs.frozen
class Scenario:
    name: str
    conversations: int
    turns: int
    copies: int
    first_bytes: int
    """Size of the conversation's first message (a tool output pasted in)."""
    turn_bytes: int
    at_once: int = 0
    """How many conversations run at the same time (0: all of them)."""


SCENARIOS = (
    Scenario("one at a time", 1, 16, 1, 2_000, 2_000),
    # A hundred of each, new and continuing: their p99 is a measure, not the slowest of five.
    Scenario("1 MB, one at a time", 100, 2, 1, 1_000_000, 2_000, at_once=1),
    Scenario("many sessions", 16, 8, 1, 2_000, 2_000),
    Scenario("one hot session", 1, 8, 8, 2_000, 2_000),
    Scenario("1 MB bodies", 4, 4, 1, 1_000_000, 2_000),
)


@attrs.define
class Outcome:
    latencies: list[float] = attrs.field(factory=list)
    first: list[float] = attrs.field(factory=list)
    """The latencies of each conversation's first request."""
    later: list[float] = attrs.field(factory=list)
    failures: int = 0
    histories: dict[str, list[Any]] = attrs.field(factory=dict)
    seconds: float = 0.0


def fake_process() -> None:
    """The fake API on its own (`--fake`): prints its URL, serves until stdin closes, then
    prints how many requests it received and how many broke a Messages API rule."""
    with FakeAnthropic() as fake:
        # The model's own window (200,000) would refuse the 1 MB conversations sent
        # directly; the proxy keeps its sessions within the model's window whatever this is.
        fake.context_window = DIRECT_WINDOW
        print(fake.base_url, flush=True)
        sys.stdin.read()
        print(json.dumps({"requests": len(fake.requests), "violations": len(fake.violations)}))


def text(size: int, seed: str) -> str:
    if REAL_TEXT:
        # A stretch of the shared transcripts' own JSON lines, where the seed says: tool
        # output, code, escapes and non-ASCII as agents send them.
        real = REAL_TEXT[0]
        start = int(hashlib.sha256(seed.encode()).hexdigest(), 16) % (len(real) - size)
        return real[start : start + size]
    line = f"{seed}: 2026-11-25 06:00:00 INFO worker processed item, all fine\n"
    return (line * (size // len(line) + 1))[:size]


REAL_TEXT: list[str] = []
"""With `--real`, the shared transcripts' text, of which `text` sends stretches instead of
one log line repeated: the default, which compresses, escapes and counts far more cheaply
than what agents send."""
TRANSCRIPTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts"


def use_real_text() -> None:
    """Makes `text` send stretches of the shared transcripts' JSON lines (`--real`)."""
    files = sorted(TRANSCRIPTS.glob("*.jsonl"))
    REAL_TEXT[:] = [b"".join(f.read_bytes() for f in files).decode("utf-8", "replace")]


def run(url: str, scenario: Scenario, tag: str, proxied: bool) -> Outcome:
    outcome = Outcome()

    def send(client: httpx2.Client, name: str, history: list[Any]) -> dict[str, Any] | None:
        headers = {"x-api-key": TEST_API_KEY}
        if proxied:
            headers["x-abridged-session"] = name
        started = time.perf_counter()
        answer = client.post(
            "/v1/messages",
            json={"model": MODEL, "max_tokens": MAX_TOKENS, "messages": history},
            headers=headers,
        )
        elapsed = time.perf_counter() - started
        outcome.latencies.append(elapsed)
        (outcome.later if len(history) > 1 else outcome.first).append(elapsed)
        if answer.status_code != 200:
            outcome.failures += 1
            return None
        return dict(answer.json())

    def conversation(name: str) -> None:
        history: list[Any] = []
        with (
            httpx2.Client(base_url=url, timeout=120) as client,
            ThreadPoolExecutor(scenario.copies) as pool,
        ):
            for turn in range(scenario.turns):
                size = scenario.first_bytes if turn == 0 else scenario.turn_bytes
                history.append({"role": "user", "content": text(size, f"{name} turn {turn}")})
                snapshots = [list(history)] * scenario.copies
                replies = list(pool.map(lambda h: send(client, name, h), snapshots))
                reply = next((r for r in replies if r is not None), None)
                if reply is None:
                    break
                history.append({"role": "assistant", "content": reply["content"]})
        outcome.histories[name] = history

    names = [f"{tag}-{scenario.name}-{n}" for n in range(scenario.conversations)]
    started = time.perf_counter()
    with ThreadPoolExecutor(scenario.at_once or len(names)) as pool:
        list(pool.map(conversation, names))
    outcome.seconds = time.perf_counter() - started
    return outcome


def check(db: str, outcome: Outcome) -> tuple[int, int]:
    """(lost, duplicated) messages: each conversation's stored messages against its client's
    history (the last reply included)."""
    lost = duplicated = 0
    store = bootstrap(db)
    try:
        by_name = {info.metadata.get("abridged:name"): info.id for info in _all_sessions(store)}
        for name, history in outcome.histories.items():
            session_id = by_name.get(name)
            if session_id is None:
                lost += len(history)
                continue
            stored = [
                e.message.to_wire() for e in store.history(session_id)
                if isinstance(e, MessageAppended)
            ]  # fmt: skip
            sent = [m["content"] for m in history if m["role"] == "user"]
            kept = [m["content"][0]["text"] for m in stored if m["role"] == "user"]
            lost += sum(1 for content in sent if content not in kept)
            duplicated += max(len(stored) - len(history), 0)
            duplicated += len(kept) - len(set(kept))
    finally:
        store.close()
    return lost, duplicated


def _all_sessions(store: Any) -> list[Any]:
    found, cursor = [], None
    while True:
        page = store.list_sessions(limit=500, cursor=cursor)
        found += page.sessions
        cursor = page.next_cursor
        if cursor is None:
            return found


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile, in ms: the smallest value at least `share` of them are
    not above (of 100, p99 is the second slowest; of fewer than 100, the slowest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] * 1000


@attrs.define
class Served:
    """A running `abridged serve`: its URL, and what its log said about its workers."""

    process: subprocess.Popen[str]
    url: str
    started: int = 0
    died: int = 0

    def watch(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if "Application startup complete" in line:
                self.started += 1
            elif "died" in line:
                self.died += 1

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


SERVE_FLAGS: list[str] = []
"""Flags added to each `abridged serve` (`--defer-compaction` is passed on)."""


def start_serve(db: str, upstream: str, workers: int) -> Served:
    """Starts `abridged serve`; returns once every worker has started (its log says so)."""
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "abridged"), "serve", f"--db={db}",
        f"--upstream={upstream}", f"--port={port}", f"--workers={workers}", "--log-level=info",
        *SERVE_FLAGS,
    ]  # fmt: skip
    process = subprocess.Popen(command, env={**os.environ}, stderr=subprocess.PIPE, text=True)
    served = Served(process, f"http://127.0.0.1:{port}")
    threading.Thread(target=served.watch, daemon=True).start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if served.started >= workers:
            try:
                if httpx2.get(f"{served.url}/healthz", timeout=5).status_code == 200:
                    return served
            except httpx2.HTTPError:
                pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit(f"abridged serve did not start ({served.started} of {workers} workers)")


TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # the fields after the command's name


def tree_cpu(root: int) -> float:
    """CPU seconds (user and system) of process `root` and its descendants, the children
    they have waited for included."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = int(fields[1])
    total, pending = 0.0, [root]
    while pending:
        pid = pending.pop()
        fields = _stat(pid)
        if fields is not None:
            total += sum(int(fields[k]) for k in (11, 12, 13, 14)) / TICKS
        pending += [child for child, parent in parents.items() if parent == pid]
    return total


def postmaster(server_url: str) -> int:
    """The pid of the PostgreSQL server listening on `server_url`'s port."""
    port = urlsplit(server_url).port
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command[0].endswith(b"postgres") and f"-p {port}".encode() in b" ".join(command):
            return int(entry.name)
    raise SystemExit(f"no PostgreSQL server on port {port}")


def load() -> str:
    return "load average " + " ".join(f"{figure:.1f}" for figure in os.getloadavg())


def rows_of(scenario: Scenario, outcome: Outcome, direct: Outcome) -> list[tuple[str, Any, Any]]:
    """The rows a scenario reports: a conversation starting with 1 MB as its first requests
    and its later ones, anything else as a whole."""
    if scenario.first_bytes < 1_000_000:
        return [(scenario.name, outcome.latencies, direct.latencies)]
    return [
        (f"{scenario.name}, new", outcome.first, direct.first),
        (f"{scenario.name}, continuing", outcome.later, direct.later),
    ]


def main(worker_counts: list[int]) -> None:
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.serve", "--fake"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert fake.stdout is not None
    assert fake.stdin is not None
    upstream = fake.stdout.readline().strip()
    print(f"{os.cpu_count()} cores, {load()}; fake API at {upstream}", flush=True)
    direct = {s.name: run(upstream, s, "direct", proxied=False) for s in SCENARIOS}
    refused = sum(outcome.failures for outcome in direct.values())
    if refused:
        raise SystemExit(f"the fake API refused {refused} requests sent to it directly")
    header = (
        f"{'workers':>7}  {'scenario':<32} {'requests':>8} {'req/s':>7} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'direct p50':>10} {'direct p99':>10} {'added p50':>9} {'added p99':>9} "
        f"{'lost':>4} {'dup':>4} {'invalid':>7}"
    )
    print(header, flush=True)
    with temporary_server() as server_url:
        for workers in worker_counts:
            db = fresh_database(server_url)
            bootstrap(db).close()
            served = start_serve(db, upstream, workers)
            print(f"{workers} worker(s) started; {load()}", flush=True)
            roots = {"workers": served.process.pid, "PostgreSQL": postmaster(server_url)}
            roots["fake API"] = fake.pid
            try:
                run(served.url, Scenario("warm-up", 2, 2, 1, 2_000, 2_000), f"warm{workers}", True)
                for scenario in SCENARIOS:
                    before = {name: tree_cpu(pid) for name, pid in roots.items()}
                    clients = time.process_time()
                    outcome = run(served.url, scenario, f"w{workers}", proxied=True)
                    spent = {name: tree_cpu(pid) - before[name] for name, pid in roots.items()}
                    spent["clients"] = time.process_time() - clients
                    lost, duplicated = check(db, outcome)
                    rate = len(outcome.latencies) / outcome.seconds
                    for name, latencies, base in rows_of(scenario, outcome, direct[scenario.name]):
                        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
                        d50, d99 = percentile(base, 0.5), percentile(base, 0.99)
                        print(
                            f"{workers:>7}  {name:<32} {len(latencies):>8} {rate:>7.1f} "
                            f"{p50:>8.1f} {p99:>8.1f} {d50:>10.1f} {d99:>10.1f} {p50 - d50:>9.1f} "
                            f"{p99 - d99:>9.1f} {lost:>4} {duplicated:>4} {outcome.failures:>7}",
                            flush=True,
                        )
                    requests = len(outcome.latencies)
                    print(
                        f"{'':>9}CPU ms per request: "
                        + ", ".join(f"{k} {1000 * v / requests:.1f}" for k, v in spent.items())
                        + f"; {sum(spent.values()) / outcome.seconds:.2f} cores busy "
                        f"over its {outcome.seconds:.1f} s",
                        flush=True,
                    )
            finally:
                served.stop()
            print(f"{workers} worker(s) done; {served.died} died and were replaced; {load()}")
    fake.stdin.close()
    counts = json.loads(fake.stdout.readline())
    fake.wait(timeout=30)
    print(
        f"\nThe fake API received {counts['requests']} requests; "
        f"{counts['violations']} broke a rule."
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--fake"]:
        fake_process()
    else:
        if "--real" in sys.argv:
            use_real_text()
        if "--defer-compaction" in sys.argv:
            SERVE_FLAGS.append("--defer-compaction")
        flags = ("--real", "--defer-compaction")
        main([int(a) for a in sys.argv[1:] if a not in flags] or [1, 2, 4])
