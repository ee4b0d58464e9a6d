"""The facts a compaction's kept tail sends verbatim (`carried`): found as they were when
each was looked for in each text in turn, in time linear in the tail."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from abridged.adapters.transcripts import load_transcript
from abridged.domain.ledger_entry import LedgerKind
from abridged.domain.ledger_extraction import carried, extract
from abridged.domain.messages import Message, Role, TextBlock, ToolUseBlock
from tests.conftest import TRANSCRIPTS
from tests.support.red_team import LINEAR, growth


def carried_one_text_at_a_time(
    messages: Sequence[tuple[int, Message]],
) -> dict[tuple[str, str], LedgerKind]:
    """`carried` as it was: each fact looked for in each text in turn."""
    shown: list[tuple[int, Message]] = []
    for position, message in messages:
        if message.role is Role.USER and not message.is_user_prompt:
            continue
        content = tuple(b for b in message.content if isinstance(b, TextBlock | ToolUseBlock))
        if content:
            shown.append((position, Message(message.role, content)))
    texts = [b.text for _, m in shown for b in m.content if isinstance(b, TextBlock)]
    texts += [json.dumps(c.input, ensure_ascii=False) for _, m in shown for c in m.tool_uses]
    return {
        entry.key: entry.kind
        for entry in extract(shown)
        if entry.kind == "call" or any(entry.text in text for text in texts)
    }


@pytest.mark.parametrize("path", sorted(TRANSCRIPTS.glob("*.jsonl")), ids=lambda p: p.stem)
def test_a_tails_carried_facts_are_those_found_text_by_text(path: object) -> None:
    messages = list(enumerate(load_transcript(str(path)).messages))
    for start in range(0, len(messages), max(1, len(messages) // 8)):
        tail = messages[start:]
        assert carried(tail) == carried_one_text_at_a_time(tail)


def test_a_fact_holding_the_joining_character_is_looked_for_text_by_text() -> None:
    tail = [
        (0, Message.user("Keep `a\x00b` and `c`.")),
        (1, Message.assistant("I kept `a\x00b`.")),
    ]
    assert carried(tail) == carried_one_text_at_a_time(tail)
    assert ("identifier", "a\x00b") in carried(tail)


def _tail(size: int) -> list[tuple[int, Message]]:
    turns = max(1, size // 120)
    return [
        (k, Message.assistant(f"I will run `cmd_{k}` on src/file_{k}.py with --flag-{k}."))
        for k in range(turns)
    ]


def test_a_long_tails_facts_are_found_in_linear_time() -> None:
    """Each fact was looked for in each text of the tail in turn: a tail of 4,000 messages
    took a second at each compaction."""
    assert growth(lambda n: carried(_tail(len(n))), lambda n: "x" * n, 60_000) < LINEAR
