"""The Markdown table of `tests.support.real_sources.check`'s rows: per session and window,
requests not sent, short tails, the least recent depth, compactions, the bill against the
reference, the facts the final request keeps against the reference's, every kind (of the
simulation's measure and of the outside one) kept below the reference, invalid requests,
audit mismatches, crashes and the time each part took."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def rows(paths: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Every row of the files, in order."""
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)


def below(part: dict[str, Any]) -> list[str]:
    """The kinds abridged's final request keeps below the reference's: `kind a<r (n)`."""
    ours, ref = part.get("abridged") or {}, part.get("langchain") or {}
    found = []
    for kind, count in (ours.get("facts_by_kind_count") or {}).items():
        a = (ours.get("facts_final_by_kind") or {}).get(kind, 0.0)
        r = (ref.get("facts_final_by_kind") or {}).get(kind, 0.0)
        if count and a < r - 1e-9:
            found.append(f"`{kind}` {a:.2f}<{r:.2f} ({count})")
    return found


def crashes(row: dict[str, Any]) -> list[str]:
    """The parts that raised, with the last line of their traceback."""
    found = []
    for name in ("simulate", "kinds", "replay"):
        error = row[name].get("error")
        if error:
            found.append(f"{name}: {error.strip().splitlines()[-1][:120]}")
    return found


def line(row: dict[str, Any]) -> str:
    """One table line."""
    sim = row["simulate"]
    ours, ref = sim.get("abridged") or {}, sim.get("langchain") or {}
    ratio = ours["billed"] / ref["billed"] if ours and ref and ref["billed"] else float("nan")
    kinds = below(sim) + below(row["kinds"])
    replay = row["replay"]
    cells = [
        Path(row["session"]).stem[:44],
        f"{row['window'] // 1000}k",
        f"{ours.get('requests', '?')}",
        f"{ours.get('not_sent', '?')} ({ref.get('not_sent', '?')})",
        f"{ours.get('short_tails', '?')}",
        f"{ours.get('recent_depth_min', '?')}",
        f"{ours.get('compactions', '?')}/{ours.get('prunes', '?')}",
        f"{ratio:.3f}",
        f"{ours.get('facts_final', 0):.2f} ({ref.get('facts_final', 0):.2f})",
        "; ".join(kinds),
        f"{replay.get('invalid', '?')}",
        f"{len(replay.get('audit', []))}" if "audit" in replay else "?",
        "; ".join(crashes(row)) + (f" refused: {ours['refused']}" if ours.get("refused") else ""),
        f"{sim['seconds']}/{row['kinds']['seconds']}/{replay['seconds']}",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| session | window | req | not sent (ref) | short | depth min | cmp/prn | billed ×ref "
    "| facts final (ref) | kinds below the reference | invalid requests | audit mismatches "
    "| crashes | seconds sim/kinds/replay |"
)


def table(paths: Iterable[str]) -> list[str]:
    """The table, sessions in order and each session's windows together, then the totals."""
    loaded = sorted(rows(paths), key=lambda r: (r["session"], r["window"]))
    lines = [HEADER, "|" + "---|" * 14]
    lines += [line(row) for row in loaded]
    return lines


def totals(paths: Iterable[str]) -> list[str]:
    """Per window: the bill of every session against the reference's, the facts the final
    requests keep (mean and lowest, the reference's beside), the kinds below the reference,
    the least depth, short tails, requests not sent, compactions, invalid requests, audit
    mismatches and crashes."""
    by_window: dict[int, list[dict[str, Any]]] = {}
    for row in rows(paths):
        by_window.setdefault(row["window"], []).append(row)
    lines = [
        "| window | sessions | billed ×ref | facts mean (lowest) | reference's | kinds below "
        "| depth min | short | not sent | compactions | invalid | audit | crashes |",
        "|" + "---|" * 13,
    ]
    for window, found in sorted(by_window.items()):
        sims = [r["simulate"] for r in found if r["simulate"].get("abridged")]
        ours = [s["abridged"] for s in sims]
        refs = [s["langchain"] for s in sims]
        billed = sum(o["billed"] for o in ours) / max(sum(r["billed"] for r in refs), 1e-9)
        facts = [o["facts_final"] for o in ours]
        ref_facts = [r["facts_final"] for r in refs]
        kinds = sum(len(below(r["simulate"])) + len(below(r["kinds"])) for r in found)
        cells = [
            f"{window // 1000}k",
            str(len(found)),
            f"{billed:.3f}",
            f"{sum(facts) / len(facts):.3f} ({min(facts):.2f})",
            f"{sum(ref_facts) / len(ref_facts):.3f} ({min(ref_facts):.2f})",
            str(kinds),
            str(min(o["recent_depth_min"] for o in ours)),
            str(sum(o["short_tails"] for o in ours)),
            str(sum(o["not_sent"] for o in ours)),
            str(sum(o["compactions"] for o in ours)),
            str(sum(r["replay"].get("invalid", 0) for r in found)),
            str(sum(len(r["replay"].get("audit", [])) for r in found)),
            str(sum(bool(crashes(r)) for r in found) + len(found) - len(sims)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
