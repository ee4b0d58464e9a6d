"""Indexes over a session's retained tail, kept up to date by the aggregate's mutators.

An append, a prepare and a validation each need a few facts about the whole retained tail:
which tool_use ids are in view, where the user prompts are, which messages still carry
thinking, and sums of tool-output tokens from any message to the end. Recomputing them means
walking every retained message, and a session with a large window retains thousands. So the
aggregate keeps them as state, changed by each event in time proportional to what the event
changed; `recompute` is their definition, from scratch, and what a property test compares
them with after any sequence of events.

Positions are contiguous: the retained tail is `entries[k].position == retained_from + k`,
so a position is turned into an index by a subtraction.

Every index is a list or a dict of plain values, so snapshots store them as they are.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable, MutableSequence, Sequence
from itertools import accumulate
from typing import Any, Protocol

from abridged.domain.context import Entry
from abridged.domain.messages import Message, RedactedThinkingBlock, Role, ThinkingBlock
from abridged.domain.pruning import output_tokens, prunable_tokens
from abridged.domain.settings import CompactionSettings

INDEX_NAMES = (
    "tool_ids",
    "open_tool_ids",
    "prompt_positions",
    "thinking_positions",
    "output_sums",
    "saving_sums",
    "thinking_sums",
    "shown_messages",
)
"""The session attributes that are indexes (derived from `entries` and the settings)."""


class TailIndexes:
    """The indexes over a retained tail. `SessionState` holds them as attributes (it is a
    `TailIndexes`); `recompute` derives them on their own, for comparisons and upcasting."""

    tool_ids: dict[str, int]
    """Every tool_use id in view, with the position of the message that makes the call."""
    open_tool_ids: list[str]
    """The calls of the last message, when it is an assistant message; they await results."""
    prompt_positions: list[int]
    """Positions of the user prompts (user messages that answer no tool call), ascending."""
    thinking_positions: list[int]
    """Positions of the messages with a thinking block not yet downgraded, ascending."""
    output_sums: list[int]
    """`output_sums[k]`: tool-output tokens (as shown) of `entries[:k]`; one more than entries."""
    saving_sums: list[int]
    """`saving_sums[k]`: what pruning the outputs of `entries[:k]` would save now (the first
    entry counts 0: the calls that name its tools are out of view)."""
    thinking_sums: list[int]
    """`thinking_sums[k]`: tokens of the thinking blocks of `entries[:k]` still shown."""
    shown_messages: MutableSequence[Message]
    """Each retained message as requests show it (`Entry.shown_message`). Snapshots leave it
    out (it is made of the messages); a load derives it again."""

    def index_state(self) -> dict[str, Any]:
        """The indexes by attribute name (what `recompute` gives, to update a state with)."""
        return {name: getattr(self, name) for name in INDEX_NAMES}


def has_thinking(entry: Entry) -> bool:
    """Whether `entry` still shows a thinking block (one not dropped or summarized)."""
    replaced = entry.replaced_blocks | entry.stale_thinking
    return any(
        isinstance(b, ThinkingBlock | RedactedThinkingBlock) and i not in replaced
        for i, b in enumerate(entry.message.content)
    )


def thinking_tokens(entry: Entry) -> int:
    """Tokens of `entry`'s thinking blocks still shown (not dropped or summarized)."""
    replaced = entry.replaced_blocks | entry.stale_thinking
    return sum(
        entry.block_tokens[i]
        for i, b in enumerate(entry.message.content)
        if isinstance(b, ThinkingBlock | RedactedThinkingBlock) and i not in replaced
    )


def replaced_count(entries: Iterable[Entry]) -> int:
    """Blocks of `entries` shown otherwise than stored (pruned, truncated to text, dropped):
    the definition of `SessionState.replaced_blocks`."""
    return sum(len(entry.replacements) for entry in entries)


def saving_of(entries: Sequence[Entry], k: int, settings: CompactionSettings) -> int:
    return prunable_tokens(entries[k], entries[k - 1].message if k else None, settings)


def recompute(entries: Sequence[Entry], settings: CompactionSettings) -> TailIndexes:
    """Every index, derived from the retained tail by walking it: the definition."""
    last = entries[-1].message if entries else None
    indexes = TailIndexes()
    indexes.tool_ids = {u.id: e.position for e in entries for u in e.message.tool_uses}
    indexes.open_tool_ids = (
        [u.id for u in last.tool_uses] if last and last.role is Role.ASSISTANT else []
    )
    indexes.prompt_positions = [e.position for e in entries if e.message.is_user_prompt]
    indexes.thinking_positions = [e.position for e in entries if has_thinking(e)]
    indexes.output_sums = [0, *accumulate(output_tokens(e) for e in entries)]
    indexes.saving_sums = [
        0,
        *accumulate(saving_of(entries, k, settings) for k in range(len(entries))),
    ]
    indexes.thinking_sums = [0, *accumulate(thinking_tokens(e) for e in entries)]
    indexes.shown_messages = [e.shown_message for e in entries]
    return indexes


def protected_index(output_sums: Sequence[int], protect_tokens: int) -> int:
    """`pruning.protected_from` by a binary search of the output sums.

    The protected outputs are the most recent ones up to `protect_tokens` (at least the last
    message's), and the last exchange always."""
    n = len(output_sums) - 1
    if n <= 0:
        return 0
    # The smallest k whose outputs to the end fit, but never past the last message.
    index = bisect_left(output_sums, output_sums[n] - protect_tokens, 0, n - 1)
    return min(index, max(n - 2, 0))


def rebuilt_sums(
    sums: list[int],
    entries: Sequence[Entry],
    start: int,
    values: Any,
    changed: Collection[int] | None = None,
) -> list[int]:
    """`sums` with the per-entry values from `start` on replaced by `values(k)`; with
    `changed`, only those entries' values are derived again (the others' are read from
    `sums`), so a change near the start of a long tail costs additions, not a walk."""
    if changed is None:
        fresh = (values(k) for k in range(start, len(entries)))
    else:
        fresh = (
            values(k) if k in changed else sums[k + 1] - sums[k] for k in range(start, len(entries))
        )
    return [*sums[:start], *accumulate(fresh, initial=sums[start])]


class IndexedView(Protocol):
    """The incremental indexes a session keeps (`abridged.domain.indexes`)."""

    @property
    def output_sums(self) -> Sequence[int]: ...

    @property
    def saving_sums(self) -> Sequence[int]: ...

    @property
    def prompt_positions(self) -> Sequence[int]: ...

    @property
    def thinking_positions(self) -> Sequence[int]: ...

    @property
    def thinking_sums(self) -> Sequence[int]: ...


def has_indexes(view: object) -> bool:
    # Cheaper than isinstance() on a runtime-checkable protocol, on every prepare.
    return hasattr(view, "saving_sums")
