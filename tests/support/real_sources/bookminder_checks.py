"""Every request abridged would send for converted sessions, checked as the shared set's are.

    python -m tests.support.real_sources.bookminder_checks --window N [--json OUT] TRANSCRIPT...

Each transcript is replayed through a new session under the default settings (a request
prepared before each assistant message, `tests.support.replays.replay`); each request is
rendered, checked against the API's rules (`tests.support.anthropic_rules`), recounted from
scratch and held to the budget (`tests.support.replays.checked_into`), and the session is
audited at the end. A replay that raises is recorded with its traceback, and the next
transcript goes on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from abridged.adapters.bootstrap import bootstrap
from abridged.application.auditing import audit_session
from tests.support.replays import checked_into, replay


def check(transcript: str, window: int) -> dict[str, Any]:
    """The problems, audit findings, traceback and time of one transcript at `window`."""
    from tests.e2e.test_replay_transcripts import COUNTER

    app = bootstrap(counter=COUNTER)
    problems: list[str] = []
    started = time.monotonic()
    outcome: dict[str, Any] = {"transcript": Path(transcript).name, "window": window}
    try:
        session_id = replay(app, transcript, window, checked_into(problems, window))
        audit = audit_session(app, session_id)
        outcome["audit_ok"] = audit.ok
        outcome["mismatches"] = [str(finding) for finding in audit.mismatches][:5]
        outcome["compactions"] = len(audit.compactions)
        outcome["requests"] = len(audit.requests)
    except Exception:
        outcome["traceback"] = traceback.format_exc()
    finally:
        app.close()
    outcome["problems"] = problems
    outcome["seconds"] = round(time.monotonic() - started, 2)
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("transcripts", nargs="+")
    parser.add_argument("--window", type=int, required=True)
    parser.add_argument("--json", dest="json_out")
    options = parser.parse_args(argv)
    outcomes = [check(path, options.window) for path in options.transcripts]
    for outcome in outcomes:
        tail = outcome.get("traceback", "").strip().splitlines()[-1:] or [""]
        print(
            f"{outcome['transcript']} @{options.window}: {len(outcome['problems'])} invalid, "
            f"audit {outcome.get('audit_ok')}, {outcome['seconds']} s {tail[0]}"
        )
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(outcomes, indent=1), encoding="utf-8")
    bad = [o for o in outcomes if o["problems"] or "traceback" in o or not o.get("audit_ok")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
