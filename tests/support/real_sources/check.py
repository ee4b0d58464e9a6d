"""The outside check of converted real sessions: per session and window, `simulate` against
the LangChain-style reference, the outside fact measure (`tests.support.fact_kinds`) and a
replay whose every request is rendered, checked by `tests.support.anthropic_rules`,
recounted and held to the budget (`tests.support.replays.checked_into`), then audited.

    python -m tests.support.real_sources.check OUT.jsonl SESSION.jsonl... [--window N ...]
    python -m tests.support.real_sources.check --table OUT.jsonl...

Appends one JSON row per session and window to OUT.jsonl (a crash in one part is kept as
its traceback; the other parts still run); `--table` prints the figures as Markdown: the
totals per window, then every row.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

WINDOWS = (16_000, 32_000, 64_000)
KEPT = (
    "requests",
    "not_sent",
    "prunes",
    "compactions",
    "repeated_compactions",
    "peak_tokens",
    "billed",
    "facts_final",
    "recent_depth_min",
    "short_tails",
    "refused",
    "facts_final_by_kind",
    "facts_by_kind_count",
)


def _timed(part: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        row = part()
    except BaseException as error:  # a crash is a finding; SystemExit from click too
        row = {"error": "".join(traceback.format_exception(error))[-3000:]}
    row["seconds"] = round(time.perf_counter() - start, 2)
    return row


def _outcomes(document: dict[str, Any]) -> dict[str, Any]:
    return {
        o["strategy"]: {k: o.get(k) for k in KEPT}
        for o in document["outcomes"]
        if o["strategy"] in ("abridged", "langchain")
    }


def simulated(path: str, window: int) -> dict[str, Any]:
    """`abridged simulate PATH --window W --references langchain --json`, in process."""
    from abridged.adapters.cli import main

    out, err = io.StringIO(), io.StringIO()
    args = ["simulate", path, "--window", str(window), "--references", "langchain", "--json"]
    code: object = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args, standalone_mode=False)
        except SystemExit as stop:
            code = stop.code
    row = _outcomes(json.loads(out.getvalue())) if out.getvalue().strip() else {}
    return {**row, "exit": code, "stderr": err.getvalue()[-2000:]}


def kinds(path: str, window: int) -> dict[str, Any]:
    """The outside fact measure's kinds for the final request, abridged and reference."""
    from tests.support.fact_kinds import measure

    with contextlib.redirect_stderr(io.StringIO()):
        return _outcomes(measure([path], window))


def replayed(path: str, window: int) -> dict[str, Any]:
    """Every request of a replay checked, then the session audited."""
    from abridged.adapters.bootstrap import bootstrap
    from abridged.application.auditing import audit_session
    from tests.e2e.test_replay_transcripts import COUNTER
    from tests.support.replays import checked_into, replay

    problems: list[str] = []
    app = bootstrap(counter=COUNTER)
    try:
        session_id = replay(app, Path(path), window, checked_into(problems, window))
        audit = audit_session(app, session_id)
        mismatches = [str(f)[:300] for f in audit.mismatches]
        return {"problems": problems[:20], "invalid": len(problems), "audit": mismatches}
    finally:
        app.close()


def check(path: str, window: int) -> dict[str, Any]:
    """One row: the three parts for one session at one window."""
    return {
        "session": path,
        "window": window,
        "simulate": _timed(lambda: simulated(path, window)),
        "kinds": _timed(lambda: kinds(path, window)),
        "replay": _timed(lambda: replayed(path, window)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out")
    parser.add_argument("sessions", nargs="*")
    parser.add_argument("--window", type=int, action="append", dest="windows")
    parser.add_argument("--table", action="store_true", help="print the rows of OUT and SESSIONS")
    options = parser.parse_args(argv)
    if options.table:
        from tests.support.real_sources.check_table import table, totals

        files = [options.out, *options.sessions]
        print("\n".join([*totals(files), "", *table(files)]))
        return 0
    with open(options.out, "a", encoding="utf-8") as handle:
        for path in options.sessions:
            for window in options.windows or WINDOWS:
                row = check(path, window)
                handle.write(json.dumps(row) + "\n")
                handle.flush()
                print(Path(path).name, window, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
