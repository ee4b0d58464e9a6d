"""The planted-kinds check's table: per kind and speaker, and per window, how many planted
facts abridged's final request keeps, how many the reference's keeps, and how many were planted.

    python -m tests.support.planted_kinds.table DIR...

prints it from the `NAME.json` files `python -m tests.support.planted_kinds.check --out DIR`
wrote (one column per window found). Reversals, and facts the last prompt itself repeats, are
left out; a fact planted twice in one session (the same kind and text) counts once. The late
and sweep kinds count with the kind they are; the sweep's controls have rows of their own.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

KIND_NAMES = {
    "final_answer": "findings/figures",
    "figure": "findings/figures",
    "po": "ticket/PR/PO ids",
    "pr": "ticket/PR/PO ids",
    "tag": "branch/tag",
    "branch": "branch/tag",
    "decision_nonen": "decision (non-English)",
    "rule_ar": "rule (Arabic)",
    "donotuse": "do-not-use account",
    "question": "agent question (+answer)",
    "answer": "agent question (+answer)",
    "owner": "who owns what (pair)",
    "verconstraint": "version constraint",
    "deadline_tz": "deadline with TZ",
    "cliflag": "CLI flags (short)",
    "sql": "SQL table/column",
    "config": "config key",
    "quoted": "quoted copy text",
    "shortcut": "keyboard shortcut",
}

# kind label -> window -> [kept by abridged, kept by the reference, planted]
Tally = dict[str, dict[int, list[int]]]


def label(fact: dict[str, Any]) -> str:
    """The table's row for `fact`: its kind's name and who said it."""
    kind = str(fact["kind"]).removeprefix("late_").removeprefix("sweep_")
    if "control" in kind:
        return "control: " + kind.split("(")[0] + " (agent)"
    speaker = "user" if fact["speaker"] == "user" else "agent"
    return f"{KIND_NAMES.get(kind, kind)} ({speaker})"


def tally(results: Iterable[dict[str, Any]]) -> Tally:
    """The counts of every row and window over the sessions' results."""
    rows: Tally = defaultdict(dict)
    for result in results:
        seen = set()
        for fact in result["facts"]:
            if fact["kind"] == "reversal" or fact.get("warning"):
                continue
            key = (fact["kind"], fact["text"], fact.get("with"))
            if key in seen:
                continue
            seen.add(key)
            counts = rows[label(fact)].setdefault(result["window"], [0, 0, 0])
            counts[0] += fact["abridged"] is True
            counts[1] += fact["langchain"] is True
            counts[2] += 1
    return rows


def window_name(window: int) -> str:
    return f"{window // 1000}k" if window % 1000 == 0 else str(window)


def table(results: Iterable[dict[str, Any]]) -> list[str]:
    """The Markdown table's lines: user-stated kinds, then the agent's, then the controls."""
    rows = tally(results)
    windows = sorted({w for counts in rows.values() for w in counts}, reverse=True)
    heads = [f"{window_name(w)} abridged / reference / planted" for w in windows]
    lines = [
        "| kind (who said it) | " + " | ".join(heads) + " |",
        "|---|" + "---|" * len(windows),
    ]
    for row in sorted(rows, key=lambda k: (k.split("(")[-1], k)):
        cells = [" / ".join(map(str, rows[row].get(w, [0, 0, 0]))) for w in windows]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    folders = sys.argv[1:] if argv is None else list(argv)
    if not folders:
        print("usage: python -m tests.support.planted_kinds.table DIR...", file=sys.stderr)
        return 2
    results = [
        json.loads(path.read_text(encoding="utf-8"))
        for folder in folders
        for path in sorted(Path(folder).glob("*.json"))
    ]
    print("\n".join(table(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
