"""Sessions long enough for the largest windows: generated coding and support sessions,
one after another, until their messages pass a number of tokens (docs/evaluation.md, "A
tenth outside check: windows from 8k to 1M").

`python -m tests.support.window_sessions DIR` writes `long-200k.jsonl` (past 200,000 tokens)
and `long-1m.jsonl` (past 1,000,000). Deterministic for a seed.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from abridged.adapters.token_counters import TiktokenCounter
from abridged.domain.messages import Message
from abridged.domain.tokens import message_tokens
from tests.support.counting import MemoCounter
from tests.support.generated_sessions import (
    parallel_coding_records,
    support_records,
    write_records,
)

Record = dict[str, Any]

COUNTER = MemoCounter(TiktokenCounter())


def _renamed(records: list[Record], part: int) -> list[Record]:
    """The records with every tool call id made unique to `part` (each generated session
    numbers its calls from 1)."""

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            renamed = {k: rename(v) for k, v in value.items()}
            for key in ("id", "tool_use_id"):
                if isinstance(renamed.get(key), str) and renamed[key].startswith("toolu_"):
                    renamed[key] = f"toolu_p{part:03d}_{renamed[key][6:]}"
            return renamed
        if isinstance(value, list):
            return [rename(v) for v in value]
        return value

    return [rename(record) for record in records]


def _parts(seed: int) -> Iterator[list[Record]]:
    makers: tuple[Callable[[int], list[Record]], ...] = (
        lambda s: parallel_coding_records(seed=s, tasks=12),
        lambda s: support_records(seed=s, tickets=20),
    )
    for part in itertools.count():
        yield _renamed(makers[part % len(makers)](seed + part), part)


def record_tokens(record: Record) -> int:
    """The tokens the message takes in a request (as `simulate` and the sessions count it)."""
    return message_tokens(Message.from_wire(record), COUNTER.count)


def long_records(seed: int, tokens: int) -> list[Record]:
    """Coding and support sessions (each starting at a user prompt, ending with the agent's
    answer) one after another until their messages, whole, pass `tokens` tokens."""
    records: list[Record] = []
    total = 0
    for part in _parts(seed):
        records += part
        total += sum(record_tokens(r) for r in part)
        if total > tokens:
            return records
    raise AssertionError("unreachable")


LONG_SET: dict[str, Callable[[], list[Record]]] = {
    "long-200k": lambda: long_records(1001, 220_000),
    "long-1m": lambda: long_records(1002, 1_100_000),
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.window_sessions DIR", file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in LONG_SET.items():
        print(write_records(make(), folder / f"{name}.jsonl"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
