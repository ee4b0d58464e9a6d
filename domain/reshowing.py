"""Reshowing: the retained messages shown reduced again when the context must shrink (the
window the provider enforces is smaller, a reconfigure, or a prompt shown whole that a
compaction must now reduce). Each is reduced as `abridged.domain.degradation` reduces a
message when it is appended."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from abridged.domain.degradation import ShownEntry, plan_degradations
from abridged.domain.tokens import CountText
from abridged.domain.truncation import Truncation


@attrs.frozen
class ReshownMessage:
    """A retained message shown reduced again, for a smaller window: all its truncations
    and its blocks' shown counts."""

    position: int
    truncations: tuple[Truncation, ...]
    block_tokens: tuple[int, ...]


def plan_reshowing(
    entries: Sequence[ShownEntry],
    cap: int,
    count: CountText,
    salient: tuple[int, int] = (0, 1),
) -> tuple[ReshownMessage, ...]:
    """The retained messages shown in more than `cap` tokens, each reduced to fit it: after
    the window shrank (the provider enforces a smaller one, or a reconfigure), a message
    degraded for the old window would leave every request too long; a prompt shown whole
    (`whole_prompts`) is reduced when the context must shrink. `salient` as for
    `plan_degradations`."""
    reshown: list[ReshownMessage] = []
    for entry in entries:
        if entry.shown_tokens <= cap:
            continue
        # The blocks pruned or downgraded are shown by their replacements; the others may be
        # reduced (a reply whose thinking was downgraded keeps its server tools' results).
        truncations, counts = plan_degradations(
            entry.message,
            cap,
            count,
            entry.block_tokens,
            entry.truncations,
            salient,
            entry.replaced_blocks,
        )
        if sum(counts) < sum(entry.block_tokens):
            reshown.append(ReshownMessage(entry.position, truncations, counts))
    return tuple(reshown)
