"""What a plan does with thinking blocks: whether an open tool loop holds the prefix
(preserved thinking), and which thinking blocks to drop or show as text at a moment that
changes earlier content. Split from `abridged.domain.planner`, which decides with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from abridged.domain.context import Entry
from abridged.domain.indexes import IndexedView, has_indexes, has_thinking
from abridged.domain.messages import Role
from abridged.domain.pruning import DowngradedThinking, downgrades_of, plan_reasoning

if TYPE_CHECKING:
    from abridged.domain.planner import PlannerView


def bound(view: PlannerView) -> bool:
    """Whether the session's thinking blocks are bound to their prefix (preserved thinking)
    and it has had thinking: earlier content then changes only at a compaction, at once."""
    return view.thinking_seen and bool(getattr(view, "thinking_bound", False))


def holds_prefix(view: PlannerView) -> bool:
    """Whether a tool loop whose thinking is bound to its prefix is open: the current turn
    shows thinking, valid under the prefix as it stands, and has not ended (its last message
    is tool results, or a reply that called tools). Nothing before its last message may
    change then, or the API refuses the thinking the loop needs; prunes and compactions wait
    for the turn's end while the request fits. Once the prefix has changed under that
    thinking (a prune made to fit the request), it leaves the view at this preparation
    anyway, and holds nothing back: the compaction due runs with the prune, not at the next
    request, which would move the prefix a second time."""
    if not bound(view) or not view.entries:
        return False
    last = view.entries[-1].message
    if not (last.tool_results or (last.role is Role.ASSISTANT and last.tool_uses)):
        return False
    if has_indexes(view):
        index = cast(IndexedView, view)
        thinking, prompts = index.thinking_positions, index.prompt_positions
        if not thinking or (prompts and thinking[-1] < prompts[-1]):
            return False
        return _still_valid(view, view.entries[thinking[-1] - view.entries[0].position])
    for entry in reversed(view.entries):
        if entry.message.is_user_prompt:
            return False
        if has_thinking(entry):
            return _still_valid(view, entry)
    return False


def _still_valid(view: PlannerView, entry: Entry) -> bool:
    """Whether the thinking of `entry` is valid under the view's prefix revision (a reply
    stored before revisions were recorded counts as valid: nothing says otherwise)."""
    current = getattr(view, "prefix_revision", None)
    return current is None or entry.revision is None or entry.revision == current


def plan_downgrades(view: PlannerView) -> tuple[DowngradedThinking, ...]:
    """Thinking blocks that should now be dropped or shown as text.

    With bound thinking these are every thinking block the tail still shows: they are
    downgraded only at a moment that changes earlier content (a compaction, a prune), which
    changes their prefix, so none of them would pass the API's check any more. A reply whose
    prefix the moment kept (the API's compaction written over the exact prefix it was
    produced under, `Entry.revision`) keeps its thinking. Dropping one block changes the
    prefix of every later one, and the downgrade starts a new revision: when any block is
    stale, every block still shown goes with it, so that none is sent under a prefix it was
    not produced under."""
    if not view.thinking_seen:
        return ()
    if bound(view):
        current = getattr(view, "prefix_revision", None)
        entries: Sequence[Entry] = view.entries
        if has_indexes(view):
            first = view.entries[0].position
            shown = cast(IndexedView, view).thinking_positions
            entries = [view.entries[p - first] for p in shown]
        else:
            entries = [e for e in entries if has_thinking(e)]
        if all(e.revision is not None and e.revision == current for e in entries):
            return ()
        return downgrades_of(list(entries), view.settings)
    if not has_indexes(view):
        return plan_reasoning(view.entries, view.limits)
    index = cast(IndexedView, view)
    # Only the messages still showing thinking, before the protected turns, are read.
    keep_turns = max(1, view.settings.reasoning_keep_turns)
    prompts = index.prompt_positions
    if len(prompts) < keep_turns:
        return ()
    keep_from = prompts[-keep_turns]
    first = view.entries[0].position
    candidates = [view.entries[p - first] for p in index.thinking_positions if p < keep_from]
    return downgrades_of(candidates, view.settings)


def downgradable_tokens(view: PlannerView) -> int:
    """Tokens of the thinking blocks `plan_downgrades` would downgrade now, without planning
    them: whether a downgrade is worth a break in the cached prefix on its own."""
    if not view.thinking_seen or bound(view):
        # Bound thinking is never downgraded on its own: that would change earlier content
        # between compactions.
        return 0
    if not has_indexes(view):
        return sum(b.tokens_before for b in plan_reasoning(view.entries, view.limits))
    index = cast(IndexedView, view)
    keep_turns = max(1, view.settings.reasoning_keep_turns)
    prompts = index.prompt_positions
    if len(prompts) < keep_turns:
        return 0
    return index.thinking_sums[prompts[-keep_turns] - view.entries[0].position]
