"""The reliability runs: kill -9 at random points, and many processes on one store.

`python -m tests.reliability.stress` (`make stress`) runs them at full size on a SQLite file
and on a PostgreSQL server it starts, prints the figures and exits non-zero on any loss,
duplicate or hang. `tests/reliability/test_stress.py` runs the same code, reduced, in
`make test`.

After every kill a fresh service reads the store and checks that every write the worker had
acknowledged is in the history at its position, that the versions have no gap, and that the
next request is valid and within its budget.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import UUID

import attrs

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.application.service import Sessions
from abridged.domain.messages import Message, ToolResultBlock
from abridged.domain.session import Session
from tests.reliability.worker import digest, start
from tests.support.anthropic_rules import violations

ROOT = Path(__file__).resolve().parents[2]
WORKER_TIMEOUT = 300.0
"""Seconds a worker may take before the run counts it as a hang."""


@attrs.define
class Figures:
    """What a run found."""

    store: str
    kills: int = 0
    phases: Counter[str] = attrs.field(factory=Counter)
    processes: int = 0
    appends: int = 0
    acknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    gaps: int = 0
    invalid_requests: int = 0
    hangs: int = 0
    seconds: float = 0.0
    problems: list[str] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost or self.duplicated or self.gaps or self.invalid_requests or self.hangs
        )


def quiet() -> None:
    """Only warnings, and on stderr: stdout is the workers' report."""
    from abridged.adapters.cli.common import configure_logging

    configure_logging(verbose=False)


def _worker(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.worker", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _acks(output: str) -> tuple[list[tuple[int, str]], str | None]:
    acks: list[tuple[int, str]] = []
    phase = None
    for line in output.splitlines():
        parts = line.split()
        if parts[:1] == ["ack"] and len(parts) == 3:
            acks.append((int(parts[1]), parts[2]))
            phase = "between steps"
        elif parts[:1] == ["phase"] and len(parts) == 2:
            phase = parts[1]
    return acks, phase


def _appended(app: Sessions, session_id: UUID) -> tuple[list[Message], list[int], list[int]]:
    events = app.history(session_id)
    messages = [e.message for e in events if isinstance(e, Session.MessageAppended)]
    versions = [e.originator_version for e in events]
    generations = [e.generation for e in events if isinstance(e, Session.CompactionCompleted)]
    return messages, versions, generations


def check_store(
    db: str, session_id: UUID, acked: list[tuple[int, str]], figures: Figures, *, next_request: bool
) -> None:
    """Reads the store afresh and counts what is lost, duplicated or invalid."""
    app = bootstrap(db, env={"AGGREGATE_CACHE_MAXSIZE": "0"})
    messages, versions, generations = _appended(app, session_id)
    digests = Counter(digest(m) for m in messages)
    at = [digest(m) for m in messages]
    # Each check sees the whole history again, so a loss or a duplicate found once is found
    # again: the figures keep the largest count seen, not a sum.
    lost = [p for p, d in acked if p >= len(at) or at[p] != d]
    duplicated = sum(1 for _, d in acked if digests[d] > 1)
    duplicated += len(generations) - len(set(generations))
    if lost:
        figures.problems.append(f"acknowledged messages not in the history: {lost[:5]}")
    figures.lost = max(figures.lost, len(lost))
    figures.duplicated = max(figures.duplicated, duplicated)
    if versions != list(range(1, len(versions) + 1)):
        figures.gaps = max(figures.gaps, 1)
        figures.problems.append(f"versions are not contiguous: {versions[:5]}…")
    if generations != list(range(1, len(generations) + 1)):
        figures.gaps = max(figures.gaps, 1)
        figures.problems.append(f"generations out of order: {generations}")
    if next_request:
        session = app.session(session_id)
        if not session.awaiting_reply:
            pending = session.entries[-1].message.tool_uses if session.entries else ()
            app.append_message(
                session_id,
                Message.user(*(ToolResultBlock(u.id, "interrupted") for u in pending))
                if pending
                else Message.user("Where were we?"),
            )
        prepared = app.prepare_request(session_id)
        body = render_request(
            prepared.context, model=prepared.model, max_tokens=prepared.max_tokens
        )
        found = violations(body)
        if found or prepared.context.estimate > prepared.context.budget:
            figures.invalid_requests += 1
            figures.problems.append(f"invalid next request: {found[:2]}")
    app.close()


def kill_run(db: str, kills: int, *, seed: int = 7, max_delay: float = 0.6) -> Figures:
    """Starts an agent worker on one session `kills` times and kills it -9 at a random moment
    each time; checks the store after each kill."""
    rng = random.Random(seed)
    figures = Figures(store=_kind(db))
    began = time.perf_counter()
    app = bootstrap(db)
    session_id = start(app)
    app.close()
    acked: list[tuple[int, str]] = []
    for _ in range(kills):
        worker = _worker("agent", db, str(session_id), "100000")
        ready = worker.stdout.readline() if worker.stdout else ""
        if ready.strip() != "ready":
            figures.problems.append(
                f"worker did not start: {ready!r} {worker.stderr.read() if worker.stderr else ''}"
            )
            worker.kill()
            worker.wait()
            figures.hangs += 1
            continue
        time.sleep(rng.uniform(0.0, max_delay))
        worker.send_signal(signal.SIGKILL)
        output, _ = worker.communicate(timeout=WORKER_TIMEOUT)
        figures.kills += 1
        new, phase = _acks(output)
        figures.phases[phase or "start"] += 1
        acked.extend(new)
        figures.acknowledged += len(new)
        check_store(db, session_id, acked, figures, next_request=True)
    figures.appends = len(acked)
    figures.seconds = time.perf_counter() - began
    return figures


def concurrent_run(db: str, processes: int, appends: int, *, one_session: bool) -> Figures:
    """`processes` writer workers, each making `appends` acknowledged writes, on one session
    or each on its own; then every acknowledged write is looked for in the store."""
    figures = Figures(store=_kind(db), processes=processes)
    began = time.perf_counter()
    app = bootstrap(db)
    first = start(app)
    sessions = [first if one_session else start(app) for _ in range(processes)]
    app.close()
    workers = [
        _worker("writer", db, str(session_id), str(appends), f"p{k}")
        for k, session_id in enumerate(sessions)
    ]
    outputs: list[str] = []
    for worker in workers:
        try:
            output, errors = worker.communicate(timeout=WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, errors = worker.communicate()
            figures.hangs += 1
        if worker.returncode != 0:
            figures.problems.append(f"worker failed ({worker.returncode}): {errors[-400:]}")
            figures.hangs += worker.returncode != 0 and "Traceback" not in errors
        outputs.append(output)
    for session_id in dict.fromkeys(sessions):
        acked = [
            ack
            for output, s in zip(outputs, sessions, strict=True)
            if s == session_id
            for ack in _acks(output)[0]
        ]
        figures.acknowledged += len(acked)
        check_store(db, session_id, acked, figures, next_request=True)
    figures.appends = figures.acknowledged
    figures.seconds = time.perf_counter() - began
    if figures.acknowledged != processes * appends:
        figures.problems.append(
            f"{figures.acknowledged} writes acknowledged of {processes * appends}"
        )
    return figures


BOOTSTRAP_CONNECTIONS = 200
"""The stress server's connections: room for 64 processes of two each, and the run's own."""


def bootstrap_run(db: str, processes: int) -> list[str]:
    """`processes` processes opening the store at once; the errors of those that failed."""
    script = (
        "import sys; from abridged.adapters.bootstrap import bootstrap; "
        "bootstrap(sys.argv[1]).close()"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = [
        subprocess.Popen(
            [sys.executable, "-c", script, db],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    failures = []
    for process in started:
        _, errors = process.communicate(timeout=WORKER_TIMEOUT)
        if process.returncode != 0:
            failures.append(errors.strip().splitlines()[-1] if errors.strip() else "no output")
    return failures


def _kind(db: str) -> str:
    return "postgresql" if db.startswith("postgresql://") else "sqlite"


@contextmanager
def stores(kinds: list[str]) -> Iterator[Iterator[tuple[str, str]]]:
    """Fresh store locations: SQLite files in a temporary folder, databases on a temporary
    PostgreSQL server."""
    from tests.support.postgres import fresh_database, temporary_server

    with tempfile.TemporaryDirectory(prefix="abridged-stress-") as folder:
        counter = iter(range(1_000_000))

        def sqlite() -> str:
            return str(Path(folder) / f"store-{next(counter)}.sqlite3")

        if "postgresql" in kinds:
            # 64 processes opening the store at once hold two connections each: more than
            # the 100 a server allows by default, whenever their openings overlap (they did
            # once in two runs, after the kill run had left the server busy). The run is
            # about opening concurrently, not about the server's capacity.
            with temporary_server(f"max_connections={BOOTSTRAP_CONNECTIONS}") as server:

                def locations() -> Iterator[tuple[str, str]]:
                    while True:
                        for kind in kinds:
                            yield kind, (sqlite() if kind == "sqlite" else fresh_database(server))

                yield locations()
        else:

            def only_sqlite() -> Iterator[tuple[str, str]]:
                while True:
                    yield "sqlite", sqlite()

            yield only_sqlite()


def report(figures: Figures, what: str) -> str:
    phases = ", ".join(f"{k} {v}" for k, v in sorted(figures.phases.items()))
    line = (
        f"{what:<28} {figures.store:<10} kills {figures.kills:>4}  processes "
        f"{figures.processes:>2}  writes {figures.appends:>5}  lost {figures.lost}  "
        f"duplicated {figures.duplicated}  gaps {figures.gaps}  invalid {figures.invalid_requests}"
        f"  hangs {figures.hangs}  {figures.seconds:6.1f} s"
    )
    if phases:
        line += f"\n{'':<28} killed in: {phases}"
    for problem in figures.problems[:5]:
        line += f"\n{'':<28} ! {problem}"
    return line


def main() -> None:
    quiet()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=200, help="kills per store")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--appends", type=int, default=500, help="writes per process")
    parser.add_argument("--stores", default="sqlite,postgresql")
    options = parser.parse_args()
    kinds = options.stores.split(",")
    all_ok = True
    with stores(kinds) as locations:
        for _ in kinds:
            _, db = next(locations)
            figures = kill_run(db, options.kills)
            all_ok &= figures.ok
            print(report(figures, "kill -9 during the loop"), flush=True)
        for _ in kinds:
            kind, db = next(locations)
            if kind == "postgresql":
                failures = bootstrap_run(db, 64)
                all_ok &= not failures
                print(
                    f"{'64 processes bootstrap':<28} {kind:<10} failed {len(failures)}"
                    + "".join(f"\n{'':<28} ! {f}" for f in failures[:3]),
                    flush=True,
                )
            for what, one in (
                ("processes on one session", True),
                ("processes, a session each", False),
            ):
                figures = concurrent_run(db, options.processes, options.appends, one_session=one)
                all_ok &= figures.ok
                print(report(figures, what), flush=True)
    if not all_ok:
        raise SystemExit("reliability run found losses, duplicates, gaps or hangs")


if __name__ == "__main__":
    main()
