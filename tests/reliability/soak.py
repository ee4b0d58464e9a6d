"""A soak of a long-running `abridged serve`: does a worker hold more and more memory, file
descriptors, threads or database connections as the sessions go by?

`python -m tests.reliability.soak [MINUTES] [--trace]` (default 8 minutes) starts a
temporary PostgreSQL, a fake Messages API in a process of its own and `abridged serve` with
two workers, and drives it with the anthropic SDK from a few client threads
(`tests.reliability.soak_traffic`: thousands of sessions, short and long, streamed or not,
branches, 100 KB to 1 MB tool outputs, count_tokens, refused requests, the sessions API).
Every 30 s it prints each worker's RSS, open file descriptors and threads, the database's
connections and the size of `/metrics`; at the end the growth per 1,000 sessions after the
warm-up (the first quarter of the run), the errors by kind, and a check of a sample of
sessions: the stored messages are the clients', none lost or duplicated; the state a fresh
process replays from the events is the state the worker serves; the audit passes.

At the end the workers are asked to collect their garbage and give back the memory malloc
keeps free (`soak_site/sitecustomize.py`, which the soak loads into the server's processes):
their RSS then is what they hold, apart from what freed memory left behind. `--trace` makes
each worker trace its allocations and write what holds and what grew, after the warm-up and
at the end, to the folder printed at the start.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import httpx2

from abridged.adapters.bootstrap import bootstrap
from abridged.domain.events import MessageAppended
from abridged.domain.session import Session
from tests.benchmarks.serve import Served, postmaster
from tests.reliability.soak_traffic import (
    TOKEN,
    TOOL_REQUEST,
    Client,
    Traffic,
    digest,
    sessions_api,
)
from tests.support.postgres import fresh_database, temporary_server
from tests.support.serve import free_port

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_SECONDS = 30.0
CLIENTS = 4
WORKERS = 2
CONTEXT_WINDOW = 24_000
"""Small, so that the long conversations compact every few turns."""
CHECKED = 300
"""Sessions whose stored messages, replayed state and audit are checked at the end."""


def fake_process() -> None:
    """The fake API (`--fake`): prints its URL, serves until stdin closes, then prints how
    many requests it received and how many broke a rule. It answers a user message that
    starts with `TOOL_REQUEST` with a tool call, and forgets the requests it has counted
    (a soak sends gigabytes)."""
    from tests.support.fake_anthropic import FakeAnthropic, Response, message

    class SoakFake(FakeAnthropic):
        def _choose(self, method: str, path: str, headers: Any, raw: bytes, body: Any,
                    found: Any = ()) -> Response:  # fmt: skip
            last = (body.get("messages") or [{}])[-1] if isinstance(body, dict) else {}
            content = last.get("content") if isinstance(last, dict) else None
            if isinstance(content, list):  # the proxy may send a text as a block
                content = next((b.get("text") for b in content if isinstance(b, dict)), None)
            if (
                not found
                and path.endswith("/messages")
                and isinstance(content, str)
                and content.startswith(TOOL_REQUEST)
            ):
                call = {"type": "tool_use", "id": f"toolu_{random.getrandbits(64):016x}",
                        "name": "read_log", "input": {"path": "/var/log/app.log"}}  # fmt: skip
                return message([call], stop_reason="tool_use")
            return super()._choose(method, path, headers, raw, body, found)

    counts = Counter[str]()
    rules = Counter[str]()

    def note(requests: list[Any]) -> None:
        counts["requests"] += len(requests)
        for request in requests:
            counts["violations"] += len(request.violations)
            rules.update(f"{v.rule}: {v.detail}"[:160] for v in request.violations[:1])

    with SoakFake() as fake:
        print(fake.base_url, flush=True)
        closed = threading.Event()

        def forget() -> None:
            while not closed.wait(2.0):
                with fake._lock:
                    note(fake.requests)
                    fake.requests.clear()

        threading.Thread(target=forget, daemon=True).start()
        sys.stdin.read()
        closed.set()
        with fake._lock:
            note(fake.requests)
    print(json.dumps({**counts, "rules": rules.most_common(5)}))


def start_serve(db: str, upstream: str, trace: str | None) -> Served:
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "abridged"), "serve", f"--db={db}",
        f"--upstream={upstream}", f"--port={port}", f"--workers={WORKERS}",
        "--log-level=info", f"--context-window={CONTEXT_WINDOW}", f"--token=soak={TOKEN}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{Path(__file__).parent / 'soak_site'}:{ROOT}"}
    env["ABRIDGED_SOAK_SITE"] = "1"
    if trace:
        env["ABRIDGED_SOAK_TRACE"] = trace
    process = subprocess.Popen(
        command, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    served = Served(process, f"http://127.0.0.1:{port}")
    threading.Thread(target=served.watch, daemon=True).start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if served.started >= WORKERS:
            try:
                if httpx2.get(f"{served.url}/healthz", timeout=5).status_code == 200:
                    return served
            except httpx2.HTTPError:
                pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit(f"abridged serve did not start ({served.started} of {WORKERS} workers)")


def dump(served: Served) -> None:
    """Asks each worker for its allocations (`--trace`), and waits for them to be written:
    a dump holds its worker for tens of seconds, so there are two, after the second sample
    and at the end."""
    for pid in workers_of(served.process.pid):
        os.kill(pid, signal.SIGUSR1)
    time.sleep(60)


def stop(served: Served) -> None:
    """Stops the server and its workers (its own process group), by force after 60 s."""
    os.killpg(served.process.pid, signal.SIGTERM)
    try:
        served.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(served.process.pid, signal.SIGKILL)
        served.process.wait(timeout=60)


def workers_of(parent: int) -> list[int]:
    """The uvicorn worker processes of the server (the supervisor's spawned children)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if f"\nPPid:\t{parent}\n" in status and b"spawn_main" in command:
            found.append(int(entry.name))
    return sorted(found)


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


@attrs.frozen
class Sample:
    seconds: float
    sessions: int
    requests: int
    rss_mb: tuple[float, ...]
    fds: tuple[int, ...]
    threads: tuple[int, ...]
    connections: int
    metric_lines: int


def sample(served: Served, server_url: str, db: str, traffic: Traffic, began: float) -> Sample:
    import psycopg

    pids = workers_of(served.process.pid)
    rss, fds, threads = [], [], []
    for pid in pids:
        try:
            rss.append(_status(pid, "VmRSS") / 1024)
            threads.append(_status(pid, "Threads"))
            fds.append(len(os.listdir(f"/proc/{pid}/fd")))
        except OSError:
            continue
    with psycopg.connect(server_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (db.rsplit("/", 1)[1],)
        ).fetchone()
    try:
        metrics = httpx2.get(f"{served.url}/metrics", timeout=120).text.splitlines()
    except httpx2.HTTPError:
        metrics = []
    with traffic.lock:
        requests = sum(traffic.counts[k] for k in ("streamed", "not streamed"))
    return Sample(
        time.monotonic() - began, traffic.sessions, requests, tuple(rss), tuple(fds),
        tuple(threads), int(row[0]) if row else 0, len(metrics),
    )  # fmt: skip


def row(s: Sample) -> str:
    def each(values: tuple[Any, ...], fmt: str) -> str:
        return "/".join(format(v, fmt) for v in values)

    return (
        f"{s.seconds / 60:>6.1f} {s.sessions:>8} {s.requests:>8}  {each(s.rss_mb, '.0f'):>11} "
        f"{each(s.fds, 'd'):>9} {each(s.threads, 'd'):>9} {s.connections:>5} {s.metric_lines:>7}"
    )


HEADER = (
    f"{'min':>6} {'sessions':>8} {'requests':>8}  {'RSS MB':>11} {'fds':>9} {'threads':>9} "
    f"{'pg':>5} {'metrics':>7}"
)


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of y over x (0 with fewer than two distinct x)."""
    if len({x for x, _ in points}) < 2:
        return 0.0
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    top = sum((x - mx) * (y - my) for x, y in points)
    return top / sum((x - mx) ** 2 for x, _ in points)


def verdict(samples: list[Sample]) -> list[str]:
    """Growth after the warm-up (the first quarter of the samples)."""
    warm = samples[max(1, len(samples) // 4) :]
    if len(warm) < 2:
        return ["too few samples for a verdict"]
    first, last = warm[0], warm[-1]
    lines = [f"after the warm-up: {last.sessions - first.sessions} sessions, "
             f"{last.requests - first.requests} requests"]  # fmt: skip
    for k in range(min(len(s.rss_mb) for s in warm)):
        points = [(s.sessions / 1000, s.rss_mb[k]) for s in warm]
        lines.append(
            f"worker {k + 1}: RSS {first.rss_mb[k]:.0f} -> {last.rss_mb[k]:.0f} MB, "
            f"{slope(points):+.1f} MB per 1,000 sessions (least squares); fds "
            f"{first.fds[k]} -> {last.fds[k]}, threads {first.threads[k]} -> {last.threads[k]}"
        )
    lines.append(f"PostgreSQL connections {first.connections} -> {last.connections}; "
                 f"/metrics lines {first.metric_lines} -> {last.metric_lines}")  # fmt: skip
    return lines


def check_sessions(db: str, served: Served, traffic: Traffic) -> Counter[str]:
    """A sample of sessions: stored messages against the clients'; the state a process
    loads (from a snapshot and the events after it, as a worker does) against a replay of
    every event from the first; the audit, through the sessions API."""
    found = Counter[str]()

    def gone(session_id: str) -> bool:
        while session_id is not None:
            if session_id in traffic.deleted:
                return True
            session_id = traffic.parents.get(session_id)  # type: ignore[assignment]
        return False

    candidates = sorted(s for s in traffic.expected if not gone(s))
    chosen = random.Random(traffic.seed).sample(candidates, min(CHECKED, len(candidates)))
    store = bootstrap(db, env={"AGGREGATE_CACHE_MAXSIZE": "0"})
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx2.Client(base_url=served.url, headers=headers, timeout=300) as http:
        for session_id in chosen:
            stored = [
                digest(e.message.to_wire())
                for e in store.history(UUID(session_id))
                if isinstance(e, MessageAppended)
            ]
            sent = traffic.expected[session_id]
            # Replies repeat (the fake's canned text): compared as multisets, then in order.
            found["lost"] += (Counter(sent) - Counter(stored)).total()
            extra = Counter(stored) - Counter(sent)
            found["duplicated"] += sum(n for d, n in extra.items() if d in sent)
            found["unexpected"] += sum(n for d, n in extra.items() if d not in sent)
            found["out of order"] += stored != sent and sorted(stored) == sorted(sent)
            loaded = store.session(UUID(session_id))
            replayed = None
            for event in store.history(UUID(session_id)):
                replayed = event.mutate(replayed)
            found["replay differs"] += replayed is None or state(replayed) != state(loaded)
            found["audit not ok"] += not http.get(f"/v1/sessions/{session_id}/audit").json()["ok"]
            found["checked"] += 1
    store.close()
    return found


def state(session: Session) -> tuple[object, ...]:
    return (
        session.version,
        session.entries,
        session.summaries,
        session.generation,
        session.message_count,
        session.calibration,
        session.tail_tokens,
        session.tools,
        session.settings,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("minutes", type=float, nargs="?", default=8.0)
    parser.add_argument("--trace", action="store_true", help="trace the workers' allocations")
    options = parser.parse_args()
    trace = tempfile.mkdtemp(prefix="abridged-soak-trace-") if options.trace else None
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.soak", "--fake"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert fake.stdout is not None
    assert fake.stdin is not None
    upstream = fake.stdout.readline().strip()
    print(f"{os.cpu_count()} cores; {options.minutes:g} minutes; trace: {trace}", flush=True)
    with temporary_server("max_connections=200") as server_url:
        db = fresh_database(server_url)
        bootstrap(db).close()
        served = start_serve(db, upstream, trace)
        traffic = Traffic(served.url)
        began = time.monotonic()
        traffic.deadline = began + options.minutes * 60
        threads = [threading.Thread(target=Client(traffic, n).run) for n in range(CLIENTS)]
        threads.append(threading.Thread(target=sessions_api, args=(traffic,)))
        for thread in threads:
            thread.start()
        print(f"PostgreSQL pid {postmaster(server_url)}; workers "
              f"{workers_of(served.process.pid)}\n{HEADER}", flush=True)  # fmt: skip
        samples: list[Sample] = []
        try:
            while True:
                if trace and len(samples) == 2:
                    dump(served)
                samples.append(sample(served, server_url, db, traffic, began))
                print(row(samples[-1]), flush=True)
                if traffic.over():
                    break
                time.sleep(max(0.0, min(SAMPLE_SECONDS, traffic.deadline - time.monotonic())))
            for thread in threads:
                thread.join()
            if trace:
                dump(served)
            samples.append(sample(served, server_url, db, traffic, began))
            print(row(samples[-1]), flush=True)
            for line in verdict(samples):
                print(line)
            for pid in workers_of(served.process.pid):
                os.kill(pid, signal.SIGUSR2)
            time.sleep(5)
            trimmed = sample(served, server_url, db, traffic, began)
            print("RSS after gc and malloc_trim (what the workers hold): "
                  + "/".join(f"{mb:.0f}" for mb in trimmed.rss_mb) + " MB")  # fmt: skip
            print("traffic: " + ", ".join(f"{k} {v}" for k, v in sorted(traffic.counts.items())))
            errors = ", ".join(f"{k} {v}" for k, v in traffic.errors.most_common())
            print(f"errors: {errors or 'none'}")
            found = check_sessions(db, served, traffic)
            print("check: " + ", ".join(f"{k} {v}" for k, v in sorted(found.items())))
        finally:
            stop(served)
    fake.stdin.close()
    counts = json.loads(fake.stdout.readline() or "{}")
    fake.wait(timeout=30)
    print(f"the fake API received {counts.get('requests')} requests; "
          f"{counts.get('violations')} broke a rule {counts.get('rules')}; "
          f"{served.died} workers died")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:] == ["--fake"]:
        fake_process()
    else:
        main()
