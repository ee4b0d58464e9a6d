"""A ledger update records what changed; patching the held ledger with it gives back every
entry the update holds, in order, whatever the compaction found and whatever it dropped."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.domain.ledger import (
    KINDS,
    LedgerEntry,
    LedgerUpdate,
    advance,
    changes,
    patched,
)
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()

facts = st.builds(
    lambda kind, n, first, span: LedgerEntry(kind, f"pkg/mod_{n}.py", first, first + span),
    st.sampled_from(KINDS),
    st.integers(0, 30),
    st.integers(0, 200),
    st.integers(0, 20),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(facts, max_size=25), min_size=1, max_size=8),
    st.integers(10, 400),
)
def test_an_update_is_its_changes_patched_onto_the_held_ledger(
    rounds: list[list[LedgerEntry]], room: int
) -> None:
    held: tuple[LedgerEntry, ...] = ()
    tokens = segments = 0
    for found in rounds:
        update = advance(held, tokens, segments, found, room, COUNTER.count)
        changed = changes(held, update)
        assert changed is not None
        assert patched(held, changed, update.dropped) == list(update.entries)
        # Only what the held ledger does not hold as it is.
        assert all(e not in held for e in changed)
        held, tokens = update.entries, update.tokens
        segments = 1 if update.consolidated else segments + bool(update.text)


def test_an_update_the_patch_cannot_make_is_recorded_whole() -> None:
    a, b = LedgerEntry("request", "A", 0, 0), LedgerEntry("request", "B", 1, 1)
    # The same entries in another order: no patch of `[a, b]` gives `[b, a]`.
    assert changes([a, b], LedgerUpdate((b, a), "", 0, consolidated=False)) is None
    assert changes([a, b], LedgerUpdate((a, b), "", 0, consolidated=False)) == ()
