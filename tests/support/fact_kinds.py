"""An outside measure of fact kinds `abridged simulate` does not report (issue 21).

    python -m tests.support.fact_kinds [--window N] [--json OUT] TRANSCRIPT...

Reads, from the user's prompts and the agent's text (what a request shows of them), exact
strings of kinds the simulation's own measure has no kind for, and reports, per transcript
and kind, the share the final request of abridged and of the LangChain-style reference
keeps verbatim (`*` marks a kind abridged keeps below the reference):

- **email**: `name@host.tld`;
- **date**: ISO dates and date-times (`2024-05-21`, `2024-05-21T10:30`), `21/05/2024`,
  `21.05.24`, and clock times (`10:30`, `09:15:02`);
- **version**: `v1.2`, `1.2.3` (three or more parts), with a suffix (`3.11.4-rc1`);
- **hash**: 7 to 64 hex digits holding both a digit and a letter (`a1b2c3d`, a commit SHA);
- **code** (an id): `ORD-12345`, `JIRA-123`, and codes of 5 to 12 capitals and digits
  holding both (`JG7FMM`, `PNR4XK`, `AB12CD3`);
- **money**: an amount with a currency sign or an ISO code (`$1,299.00`, `€45`, `120 USD`);
- **env**: `$HOME`, `${API_KEY}`, `FOO_BAR`, `FOO_BAR=1`;
- **host**: IPv4 addresses (with a port) and `host:port` (`localhost:8080`, `db.internal:5432`);
- **ident**: CamelCase and snake_case names written in prose (`RenameIndex`, `max_retries`);
- **num-intl**: a number of two or more digits after a word of any script that the
  simulation's `num` kind misses (it wants a Latin word before: `порт 8080`, `ポート 8080`);
- **count**: a number and the lowercase word after it, what it counts (`7455 rows`,
  `3 failures`), but a word of the sentence (`of`, `and`, `times`, `more`, a unit of time).

It is separate code from both the ledger and the simulation's measure: its patterns were
written from the kinds' shapes, not from the ledger's. It reuses the simulation's replay by
swapping the simulation's fact extraction for its own while `simulate` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any
from unittest.mock import patch

from abridged.adapters.simulation import facts as facts_module
from abridged.adapters.simulation import run as run_module
from abridged.adapters.simulation.facts import Fact
from abridged.domain.messages import Message, Role, TextBlock

KIND_PATTERNS: dict[str, re.Pattern[str]] = {
    "email": re.compile(
        r"(?<![A-Za-z0-9.+_-])[A-Za-z0-9.+_-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}(?![\w-])"
    ),
    "date": re.compile(
        r"(?<![\d.:/-])(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?"
        r"|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}:\d{2}(?::\d{2})?)(?![\d.:/-]?\d)"
    ),
    "version": re.compile(
        r"(?<![\w.])(?:v\d+(?:\.\d+)+|\d+\.\d+\.\d+)(?:-[\w.]+)?(?![\w.]?\w)", re.ASCII
    ),
    "hash": re.compile(r"(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}(?![\w-])"),
    "code": re.compile(
        r"(?<![\w-])(?!\d+[KMGT]?B\b)"
        r"(?:[A-Z][A-Z0-9]{1,9}-\d{2,}|(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,12})"
        r"(?![\w-])",
        re.ASCII,
    ),
    "money": re.compile(
        r"[$€£¥₹₩₽]\s?\d[\d,.]*\d|\b\d[\d,.]*\s?(?:USD|EUR|GBP|JPY|INR|KRW|RUB|AED|SAR|CNY)\b"
    ),
    "env": re.compile(
        r"\$\{?[A-Za-z_][A-Za-z0-9_]{2,}\}?|(?<![\w$])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:=[^\s`'\",;]*[^\s`'\",;.:!?)])?",
        re.ASCII,
    ),
    "host": re.compile(
        r"(?<![\w.])(?:\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?|[A-Za-z][\w-]*(?:\.[\w-]+)*:\d{2,5})"
        r"(?![\w.])",
        re.ASCII,
    ),
    "ident": re.compile(
        r"(?<![\w.])(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w])",
        re.ASCII,
    ),
    "num-intl": re.compile(r"[^\W\d_][\w-]*[ \t]?[:=]?[ \t]\d[\d.,]*\d%?"),
    "count": re.compile(
        r"(?<![\w.,$€£-])\d[\d,]*(?:\.\d+)? (?!(?:and|or|to|of|in|on|at|the|is|are|was|were"
        r"|for|by|with|from|minutes?|seconds?|hours?|days?|ms|mb|kb|gb|times|more|less)\b)"
        r"[a-z][a-z-]{2,}"
    ),
}
LATIN_NUMBER = facts_module.NUMBER
MIN_CHARS = 4


def kind_facts(messages: Sequence[Message]) -> tuple[Fact, ...]:
    """The distinct facts of the kinds above, from the user's prompts and the agent's text."""
    seen: dict[tuple[str, str], Fact] = {}
    for position, message in enumerate(messages):
        for text in _prose(message):
            for kind, pattern in KIND_PATTERNS.items():
                for match in pattern.finditer(text):
                    value = match.group(0).strip()
                    if kind == "num-intl" and (LATIN_NUMBER.search(value) or value[0].isascii()):
                        continue
                    if len(value) >= MIN_CHARS and (kind, value) not in seen:
                        seen[(kind, value)] = Fact(kind, value, position)
    return tuple(seen.values())


def _prose(message: Message) -> Iterator[str]:
    if message.is_user_prompt or message.role is Role.ASSISTANT:
        for block in message.content:
            if isinstance(block, TextBlock):
                yield block.text


def measure(transcripts: Sequence[str], window: int) -> dict[str, Any]:
    """`abridged simulate --json` over `transcripts` with these kinds as its facts."""
    from abridged.adapters.cli import main

    out = io.StringIO()
    with patch.object(run_module, "extract_facts", kind_facts), contextlib.redirect_stdout(out):
        args = ["simulate", *transcripts, "--window", str(window)]
        main([*args, "--references", "langchain", "--json"], standalone_mode=False)
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def table(document: dict[str, Any]) -> list[str]:
    """Per transcript and kind: abridged / reference (count), `*` where abridged is below."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for outcome in document["outcomes"]:
        rows.setdefault(outcome["transcript"], {})[outcome["strategy"]] = outcome
    kinds = list(KIND_PATTERNS)
    lines = [
        "| transcript | " + " | ".join(kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    below = 0
    for name, by_strategy in rows.items():
        ours, ref = by_strategy.get("abridged"), by_strategy.get("langchain")
        if ours is None or ref is None or not ours["applicable"]:
            continue
        cells = []
        for kind in kinds:
            count = ours["facts_by_kind_count"].get(kind, 0)
            if not count:
                cells.append("")
                continue
            a = ours["facts_final_by_kind"][kind]
            r = ref["facts_final_by_kind"].get(kind, 0.0) if ref["applicable"] else 0.0
            mark = "*" if a < r - 1e-9 else ""
            below += bool(mark)
            cells.append(f"{a:.2f}{mark} / {r:.2f} ({count})")
        short = name.rsplit("/", 1)[-1].removesuffix(".jsonl")[:44]
        lines.append(f"| {short} | " + " | ".join(cells) + " |")
    lines.append(f"\nkinds below the reference: {below}")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("transcripts", nargs="+")
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--json", dest="json_out")
    options = parser.parse_args(argv)
    document = measure(options.transcripts, options.window)
    if options.json_out:
        with open(options.json_out, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1)
    print("\n".join(table(document)))


if __name__ == "__main__":
    main(sys.argv[1:])
