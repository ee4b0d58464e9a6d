"""Where a retained tail may start, the room a request no cut can fit leaves the facts
ledger and the cap that fits a tail no cut can shorten, and the error when nothing makes a
request fit.

A cut never separates a tool call from its result: the retained tail starts at a user prompt,
or at an assistant message (the summary then leads in a user message of its own), and the
last exchange always stays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from abridged.domain.block_cuts import DENSITY_MARGIN
from abridged.domain.context import (
    ContextView,
    Entry,
    calibrated,
    carried_system,
    chained_lead,
    raw_estimate,
    turn_context,
)
from abridged.domain.degradation import least_shown, salient_of
from abridged.domain.errors import ContextOverflowError
from abridged.domain.instructions import is_instruction
from abridged.domain.limits import Limits
from abridged.domain.messages import RedactedThinkingBlock, Role, ThinkingBlock
from abridged.domain.reply_shapes import results_carried
from abridged.domain.tokens import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, CountText

__all__ = [
    "beside_tail",
    "carried_sums",
    "cut_points",
    "ledger_fit",
    "overflow_error",
    "recent_room",
    "suffix_sums",
    "tail_cap",
    "tail_first",
    "turns_from",
]


def cut_points(entries: Sequence[Entry], *, thinking_led: bool = False) -> list[int]:
    """Indices where the retained tail may start: never between a tool call and its result.

    A tail may start at an assistant message (a summary message leads it) or at a user prompt,
    but not at a reply holding the results of server tool calls an earlier reply made.
    The last exchange always stays: the last user message, and the tool calls it answers.
    In a session with thinking, an active tool loop must keep an assistant message that
    starts with thinking first, so a cut inside it falls only before such a message.
    """
    if not entries:
        return []
    last = len(entries) - 1
    active_loop = bool(entries[last].message.tool_results)
    if active_loop:
        last -= 1
    loop_start = len(entries)
    if thinking_led and active_loop:
        prompts = [k for k, e in enumerate(entries) if e.message.is_user_prompt]
        loop_start = prompts[-1] + 1 if prompts else 0
    cuts = []
    for k in range(1, last + 1):
        message = entries[k].message
        if message.is_user_prompt or (
            message.role is Role.ASSISTANT
            # A reply that starts with the results of server tool calls an earlier reply made
            # stays with that reply (`abridged.domain.reply_shapes.results_carried`).
            and not results_carried(message)
            and (
                k <= loop_start
                or isinstance(message.content[0], ThinkingBlock | RedactedThinkingBlock)
            )
        ):
            cuts.append(k)
    return cuts


def turns_from(entries: Sequence[Entry], cut: int) -> int:
    """How many turns start at or after index `cut`."""
    return sum(1 for e in entries[cut:] if e.message.is_user_prompt)


def suffix_sums(entries: Sequence[Entry], attached: Sequence[Sequence[Any]] = ()) -> list[int]:
    """`sums[k]`: the shown tokens of `entries[k:]`, with the per-turn content `attached`
    to them (position, text, tokens: `abridged.domain.turn_context`)."""
    extra: dict[int, int] = {}
    for position, _, tokens in attached:
        extra[position] = extra.get(position, 0) + tokens
    sums = [0] * (len(entries) + 1)
    for k in range(len(entries) - 1, -1, -1):
        sums[k] = sums[k + 1] + entries[k].shown_tokens
        if extra:
            sums[k] += extra.get(entries[k].position, 0)
    return sums


def carried_sums(entries: Sequence[Entry], carried: Sequence[Entry]) -> list[int]:
    """`sums[k]`: the tokens of the system messages a cut at `entries[k]` leaves in view
    before the tail: those compactions already `carried` and those of `entries[:k]`, but for
    the system prompts a later one among them replaces (`abridged.domain.instructions`). No
    compaction summarizes any other system message, so a request sends them all."""
    total, last = 0, 0
    for entry in carried:
        total += entry.shown_tokens
        if is_instruction(entry.message):
            total, last = total - last, entry.shown_tokens
    sums = [total] * (len(entries) + 1)
    for k, entry in enumerate(entries):
        tokens = entry.shown_tokens if entry.message.is_system else 0
        if tokens and is_instruction(entry.message):
            tokens, last = tokens - last, entry.shown_tokens
        sums[k + 1] = sums[k] + tokens
    return sums


def tail_first(
    view: ContextView,
    cuts: Sequence[int],
    suffix: Sequence[int],
    carry: Sequence[int],
    fixed: int,
) -> tuple[int, int, str]:
    """Where a compaction that gives the recent tail its room first cuts
    (docs/settings.md#sharing-the-budget), what it leaves of the budget for the ledger
    (calibrated; 0 or less when nothing fits) and why. `fixed` is what the request holds
    besides the ledger, the tail and the system messages in view (`carry`): those stay
    beside the tail, which gives way to them when both do not fit."""
    room = view.limits.budget - calibrated(view, fixed)
    turn_starts = [k for k in cuts if view.entries[k].message.is_user_prompt]
    recent = recent_room(view, suffix, turn_starts)
    tail_room = min(recent, room)
    ruled = next((k for k in cuts if calibrated(view, suffix[k]) <= tail_room), cuts[-1])
    back = reached_back(view, cuts, suffix, ruled, tail_room)
    if back is not None and calibrated(view, suffix[back] + carry[back]) < room:
        ruled, tail_room = back, calibrated(view, suffix[back])
    cut = next(
        (k for k in cuts[cuts.index(ruled) :] if calibrated(view, suffix[k] + carry[k]) < room),
        cuts[-1],
    )
    left = room - calibrated(view, suffix[cut] + carry[cut])
    over = calibrated(view, suffix[cut]) > tail_room
    if cut != ruled or (over and tail_room < recent):
        # The system messages in view, or what the budget leaves, shortened the tail.
        return cut, left, "minimal tail"
    # The smallest tail a cut allows is larger than the tail's room: that tail is the rule.
    return cut, left, CURRENT_EXCHANGE if over else "recent tokens"


def reached_back(
    view: ContextView, cuts: Sequence[int], suffix: Sequence[int], ruled: int, tail_room: int
) -> int | None:
    """The start before `ruled` the tail reaches back to (`tail_reaches_back`), or `None`:
    when a message before `ruled` that could start a tail (a user prompt or a reply) fits the
    tail's room with everything after it, but no start is allowed there (a tool loop led by
    thinking), the latest allowed start before it, if its tail fits `retained_share`."""
    settings = view.limits.settings
    entries = view.entries
    if not settings.tail_reaches_back or ruled not in cuts or cuts.index(ruled) == 0:
        return None
    before = ruled - 1
    while before > 0 and entries[before].message.tool_results:
        before -= 1  # a step back takes a call with its results
    message = entries[before].message
    if not (message.is_user_prompt or message.role is Role.ASSISTANT):
        return None
    if calibrated(view, suffix[before]) > tail_room:
        return None
    back = cuts[cuts.index(ruled) - 1]
    cap = int(settings.retained_share * view.limits.window)
    return back if calibrated(view, suffix[back]) <= cap else None


CURRENT_EXCHANGE = "current exchange"
"""A decision's reason when the tail is the smallest a cut allows (the exchange in progress,
or a tool loop led by thinking, whole) and that alone is larger than the tail's room: kept
by the rule, not shortened. Decisions recorded before this reason existed read
`minimal tail` (`LEGACY_REASONS`)."""

LEGACY_REASONS = {CURRENT_EXCHANGE: "minimal tail"}
"""The reason a decision recorded before a reason existed gives for the same cut: an audit
re-deriving such a decision accepts either."""


def tail_holds_all(view: ContextView, suffix: Sequence[int]) -> bool:
    """Whether the recent tail the rule keeps (`recent_room`) would hold every retained
    message. The first retained message starts no cut (nothing would be before it), so the
    cuts alone never count it as the start of a turn: a session still in its first turns
    would have them summarized though the rule keeps them."""
    entries = view.entries
    if not entries:
        return True
    turn_starts = [k for k, entry in enumerate(entries) if entry.message.is_user_prompt]
    return calibrated(view, suffix[0]) <= recent_room(view, suffix, turn_starts)


def recent_room(view: ContextView, suffix: Sequence[int], turn_starts: list[int]) -> int:
    """The tokens the recent tail may take: `keep_recent_tokens` (or `keep_recent_share` of
    the window), raised to hold the last `keep_recent_turns` turns whole when they fit in
    `retained_share` of the window."""
    limits = view.limits
    settings = limits.settings
    room = limits.recent_tokens
    cap = int(settings.retained_share * limits.window)
    turns = min(settings.keep_recent_turns, len(turn_starts))
    if turns:
        wanted = calibrated(view, suffix[turn_starts[-turns]])
        if wanted <= cap:
            room = max(room, wanted)
    return room


def ledger_fit(view: ContextView, extra_tokens: int = 0) -> int | None:
    """The tokens the facts ledger may keep for the request to fit as the view stands, when
    it does not and no compaction can make it: a tail that is one exchange (a reply carrying
    the results of the server calls an earlier one made, with the client calls' results
    between) has no cut, and the ledger a compaction sized beside part of it gives way, as it
    does to a tail (`abridged.domain.planner`). `None` when the ledger holds nothing, is not
    sent (a chained block stands for it), is not what stands in the way, or dropping it all
    would not be enough."""
    held = view.ledger_tokens
    if not held or chained_lead(view.summaries):
        return None
    rest = raw_estimate(view) + extra_tokens - held
    room = int(view.limits.budget / view.calibration) - rest
    return room if 0 <= room < held else None


def beside_tail(view: ContextView, extra_tokens: int) -> tuple[int, bool]:
    """What a request after a compaction holds besides the ledger, the tail and the system
    messages in view (the summaries at their largest), and whether the compaction folds the
    existing chunks into one."""
    limits = view.limits
    # At their largest: a chunk with a block reads as text once the new chunk's block leads.
    existing = sum(max(c.tokens, c.text_tokens or 0) for c in view.summaries)
    resummarize = bool(view.summaries) and (
        limits.settings.summary_strategy == "update"
        or existing + limits.summary_tokens > limits.summaries_tokens
    )
    summaries_bound = limits.summary_tokens if resummarize else existing + limits.summary_tokens
    fixed = (
        REQUEST_OVERHEAD
        + view.system_tokens
        + view.tools_tokens
        + summaries_bound
        + MESSAGE_OVERHEAD
        + extra_tokens
    )
    return fixed, resummarize


def tail_cap(
    view: ContextView, count: CountText, extra_tokens: int = 0
) -> tuple[tuple[Entry, ...], int] | None:
    """For a request no compaction can fit, the messages of the shortest tail one may keep
    that can be shown reduced, and the cap that shows them in the room the request leaves
    them (every message over it reduced to it, the others as they are). Such a tail has no
    cut inside: a chain of replies each holding the results of the server calls the one before
    made (paused turns, with client calls' results between; `cuts.cut_points`), grown past
    what each was capped at when appended. The facts ledger is left out: it gives way to the
    tail (`cuts.ledger_fit`). `None` when that tail fits as shown, or would not fit even at
    its smallest (`degradation.least_shown`: thinking and server calls whole), counted with
    `count`."""
    entries = view.entries
    cuts = cut_points(entries)
    if cuts:
        cut = cuts[-1]
        fixed, _ = beside_tail(view, extra_tokens)
        suffix = suffix_sums(entries, turn_context(view))
        carry = carried_sums(entries, carried_system(view))
        needed = fixed + suffix[cut] + carry[cut]
    else:
        cut = 0
        ledger = 0 if chained_lead(view.summaries) else view.ledger_tokens
        needed = raw_estimate(view) + extra_tokens - ledger
    tail = [e for e in entries[cut:] if not e.message.is_system]  # shown whole
    shown_tokens = [e.shown_tokens for e in tail]
    room = math.floor(view.limits.budget / view.calibration) - needed + sum(shown_tokens)
    if not tail or sum(shown_tokens) <= room:
        return None
    salient = salient_of(view.limits.settings)
    least = [
        min(s, least_shown(e, count, salient)) for e, s in zip(tail, shown_tokens, strict=True)
    ]
    if sum(least) > room:
        return None

    def shown_at(cap: int) -> int:
        return sum(min(s, max(cap, f)) for s, f in zip(shown_tokens, least, strict=True))

    # A message reduced to a cap comes out a little over or under it, as its density varies:
    # aimed a little lower, unless only the smallest fits.
    aim = max(sum(least), math.floor(room * DENSITY_MARGIN))
    low, high = 0, max(shown_tokens)  # the largest cap that fits: shown_at(low) <= aim
    while low < high:
        middle = (low + high + 1) // 2
        if shown_at(middle) <= aim:
            low = middle
        else:
            high = middle - 1
    return tuple(tail), low


def overflow_error(limits: Limits, fixed: int, entries: Sequence[Entry]) -> ContextOverflowError:
    """The error for a request that cannot fit (`fixed`: its system prompt and tools): names
    the largest message that must stay."""
    largest = max(entries, key=lambda e: e.shown_tokens, default=None)
    if largest is None or REQUEST_OVERHEAD + fixed >= limits.budget:
        # Blaming a message would send the caller after the wrong culprit.
        return ContextOverflowError(
            f"the system prompt and tools alone ({fixed} tokens) do not fit the budget of "
            f"{limits.budget} tokens",
            position=None,
            tokens=fixed,
            budget=limits.budget,
        )
    return ContextOverflowError(
        f"message {largest.position + 1} ({largest.message.role.value}, "
        f"{largest.shown_tokens} tokens) cannot fit with what must be sent alongside it "
        f"in the budget of {limits.budget} tokens (window {limits.window} minus "
        f"{limits.reserved_output} reserved for output); nothing was sent",
        position=largest.position,
        tokens=largest.shown_tokens,
        budget=limits.budget,
    )
