"""The prompt-cache cost model `abridged simulate` bills requests with."""

from __future__ import annotations

from typing import Any

import pytest

from abridged.adapters.simulation.cache import (
    Billing,
    CachedBlock,
    CacheRates,
    PromptCache,
    request_blocks,
)


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
