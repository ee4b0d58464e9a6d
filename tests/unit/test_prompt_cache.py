"""The prompt-cache cost model `abridged simulate` bills requests with."""

from __future__ import annotations

from typing import Any

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.simulation.cache import (
    Billing,
    CachedBlock,
    CacheRates,
    PromptCache,
    request_blocks,
)
from abridged.domain.context import Context, SummaryChunk
from abridged.domain.messages import Message, Role, TextBlock


def blocks(*keys: str, marks: tuple[int, ...] = (), tokens: int = 100) -> list[CachedBlock]:
    return [CachedBlock(k, tokens, i in marks) for i, k in enumerate(keys)]


def test_a_growing_conversation_reads_its_old_prefix_and_writes_only_what_is_new() -> None:
    cache = PromptCache()
    first = cache.bill(blocks("sys", "a", "b", marks=(0, 2)))
    second = cache.bill(blocks("sys", "a", "b", "c", "d", marks=(0, 4)))

    assert first == Billing(total=300, read=0, written=300)
    assert second == Billing(total=500, read=300, written=200)


def test_a_change_near_the_start_rewrites_everything_after_it() -> None:
    cache = PromptCache()
    cache.bill(blocks("sys", "a", "b", "c", marks=(0, 3)))

    after = cache.bill(blocks("sys", "summary", "b", "c", marks=(0, 3)))

    assert after == Billing(total=400, read=100, written=300)


def test_the_lookback_finds_an_entry_at_most_twenty_blocks_before_a_breakpoint() -> None:
    near = [f"m{i}" for i in range(30)]
    cache = PromptCache()
    cache.bill(blocks(*near[:10], marks=(9,), tokens=1))
    # 20 blocks after the entry: found. 21 blocks after: not found.
    assert cache.bill(blocks(*near[:30], marks=(29,), tokens=1)).read == 10
    far = PromptCache()
    far.bill(blocks(*near[:9], marks=(8,), tokens=1))
    assert far.bill(blocks(*near[:30], marks=(29,), tokens=1)).read == 0


def test_billing_weighs_reads_writes_and_plain_input_by_the_rates() -> None:
    billing = Billing(total=1_000, read=600, written=300)
    rates = CacheRates(write_rate=2.0, read_rate=0.5)

    assert billing.plain == 100
    assert billing.billed(rates) == pytest.approx(600 * 0.5 + 300 * 2.0 + 100)
    assert billing.billed(CacheRates()) == pytest.approx(60 + 375 + 100)


def test_a_request_body_is_read_in_cache_order_with_its_breakpoints() -> None:
    body: dict[str, Any] = {
        "tools": [{"name": "t", "input_schema": {}}],
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "hi there"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "hello", "cache_control": {"type": "x"}}],
            },
        ],
    }

    found = request_blocks(body, lambda text: len(text.split()))

    assert [b.breakpoint for b in found] == [False, True, False, True]
    assert found[2].tokens == 3 + 2
    # The cache marker is not part of a block's identity.
    unmarked = request_blocks(
        {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]},
        lambda text: 1,
    )
    assert unmarked[0].key == found[3].key


def test_the_ledger_segments_end_in_a_breakpoint_that_outranks_the_summary_chunks() -> None:
    ledger = ("Facts ledger: first", "Facts ledger, continued: second")
    chunk = SummaryChunk("what happened", 0, 9, 20, "m", 1)
    first = Message(
        Role.USER, (*(TextBlock(t) for t in ledger), TextBlock("<conversation-summary/>"))
    )
    tail = [
        first,
        Message.assistant("reply"),
        Message.user("more"),
        Message.assistant("reply"),
        Message.user("last"),
    ]

    def marks(**fields: Any) -> list[tuple[int, int]]:
        context = Context(
            system="be brief",
            tools=(),
            summaries=(chunk,),
            messages=tuple(tail),
            estimate=100,
            budget=1_000,
            window=2_000,
            summary_messages=1,
            ledger=ledger,
            **fields,
        )
        body = render_request(context, model="m", max_tokens=100)
        return [
            (i, j)
            for i, m in enumerate(body["messages"])
            for j, b in enumerate(m["content"])
            if "cache_control" in b
        ]

    # Room for all: after the ledger's last segment, after the chunk, on the last message.
    assert marks() == [(0, 1), (0, 2), (4, 0)]
    # With a prune boundary too, five would be wanted: the chunk's goes, the ledger's stays.
    assert marks(stable_prefix=3) == [(0, 1), (2, 0), (4, 0)]
