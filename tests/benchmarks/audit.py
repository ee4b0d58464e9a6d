"""Speed of the audit, the report and the compactions read model, on every shared transcript
replayed at 16k into a SQLite file.

Run with `python -m tests.benchmarks.audit` (or `make bench`); prints milliseconds.
"""

from __future__ import annotations

import os
import tempfile
import time

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.read_model import CompactionsReadModel, read_model_url
from abridged.adapters.report import report_html
from abridged.application.auditing import audit_session
from tests.e2e.test_replay_transcripts import COUNTER, transcripts
from tests.support.replays import replay


def main() -> None:
    folder = tempfile.mkdtemp()
    db = os.path.join(folder, "sessions.sqlite3")
    app = bootstrap(db, counter=COUNTER)
    ids = [replay(app, path, 16_000) for path in transcripts()]
    events = sum(len(app.history(i)) for i in ids)
    big = max(ids, key=lambda i: len(app.history(i)))
    size = len(app.history(big))
    times = []
    for _ in range(3):
        started = time.perf_counter()
        audited = audit_session(app, big)
        times.append(time.perf_counter() - started)
    print(
        f"audit of the longest session ({size} events, {len(audited.findings)} decisions): "
        f"{min(times) * 1000:.0f} ms"
    )
    started = time.perf_counter()
    for session_id in ids:
        audit_session(app, session_id)
    print(
        f"audit of all {len(ids)} sessions ({events} events): "
        f"{(time.perf_counter() - started) * 1000:.0f} ms"
    )
    started = time.perf_counter()
    page = report_html(audited)
    print(
        f"report of the longest: {(time.perf_counter() - started) * 1000:.0f} ms, "
        f"{len(page) / 1e6:.1f} MB"
    )
    model = CompactionsReadModel(read_model_url(db))
    started = time.perf_counter()
    rows = model.update(app)
    print(
        f"read model from scratch: {rows} rows in "
        f"{(time.perf_counter() - started) * 1000:.0f} ms (pages of 100)"
    )
    started = time.perf_counter()
    model.update(app)
    print(f"read model already up to date: {(time.perf_counter() - started) * 1000:.1f} ms")
    model.close()


if __name__ == "__main__":
    main()
