"""The cache-economic rules: prunes free enough, compactions go down to their target and
never run twice without new messages in between."""

from __future__ import annotations

from hypothesis import given, settings

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import conversations
from tests.properties.test_invariants import COUNTER, PROPERTY, knobs, replay_live, windows


@settings(PROPERTY, max_examples=12)
@given(conversations(), windows, knobs)
def test_prunes_free_enough_and_compactions_are_rare_and_deep(
    messages: list[Message], window: tuple[int, int], knob: CompactionSettings
) -> None:
    app, session_id, _, _ = replay_live(messages, window, knob, ExtractiveSummarizer(COUNTER))
    limits = app.session(session_id).limits
    new_messages = True
    decision = None
    left: int | None = None
    growth = int(knob.min_growth_share * limits.budget)
    for event in app.history(session_id):
        if isinstance(event, Session.MessageAppended):
            new_messages = True
        elif isinstance(event, Session.CompactionThresholdHit):
            decision = event.decision
        elif isinstance(event, Session.CompactionCompleted):
            # No session compacts twice without new messages in between.
            assert new_messages
            new_messages = False
            assert decision is not None
            if decision.trigger == "threshold" and decision.estimate <= limits.budget:
                # A compaction frees enough to pay for the cache rewrite it causes.
                assert left is None or decision.estimate >= left + growth
            left = event.tokens_after
            if limits.settings.keep_recent_share is None:
                if not decision.reason.startswith("minimal tail"):
                    # Down to the target fill (the tail was chosen to fit it), so the next
                    # compaction, and the cache rewrite it brings, is far off.
                    assert event.tokens_after <= min(limits.target, limits.threshold)
            else:
                # The recent tail first, the ledger in what it leaves: within the budget.
                assert event.tokens_after <= limits.budget
        elif isinstance(event, Session.ToolsPruned) and event.reason.startswith("about"):
            # A prune on its own, outside a compaction, must be worth moving the prefix.
            freed = sum(o.tokens_before - o.tokens_after for o in event.outputs)
            assert freed >= limits.prune_min_tokens
