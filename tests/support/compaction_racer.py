"""One process of the cross-process compaction race: `python -m tests.support.compaction_racer
DB SESSION_ID GO_FILE [--process-locks-only]`. It opens the store as a host would
(`bootstrap`; with the flag, a `Sessions` without the store's advisory locks, the control),
says it is ready (a file `ready-PID` beside the go file), waits for the go file, prepares a
request, and prints what its summarizer did as JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from uuid import UUID

from abridged.adapters.bootstrap import bootstrap, persistence_env
from abridged.application.service import Sessions
from tests.support.async_fakes import SlowSummarizer
from tests.support.builders import words
from tests.support.fakes import FakeTokenCounter


def main(db: str, session_id: UUID, go: Path, process_locks_only: bool) -> None:
    # Long enough that every racer starts before the first summary is done, even on a busy
    # machine: the control needs the race to happen to show it.
    summarizer = SlowSummarizer(words(30, "fact"), delay=1.5)
    # The test created the tables; processes starting at once must not all create them.
    env = {"CREATE_TABLE": "n"}
    if process_locks_only:
        app = Sessions(
            counter=FakeTokenCounter(), summarizer=summarizer, env={**persistence_env(db), **env}
        )
    else:
        app = bootstrap(db, counter=FakeTokenCounter(), summarizer=summarizer, env=env)
    app.session(session_id)  # connected and warm before the race starts
    (go.parent / f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the go file never appeared")
        time.sleep(0.005)
    prepared = app.prepare_request(session_id)
    print(json.dumps({"calls": len(summarizer.calls), "generation": prepared.compactions_so_far}))
    app.close()


if __name__ == "__main__":
    main(sys.argv[1], UUID(sys.argv[2]), Path(sys.argv[3]), "--process-locks-only" in sys.argv)
