"""Prompts shown whole: until when a user prompt a request can hold stays whole.

A user prompt (a pasted log, a document) that a request can hold beside the system prompt,
the tools and the summaries' room is shown whole from its first request
(`degradation.shaped`, with `whole_prompts`), not cut to one message's cap, half that room:
only the request that answers it must hold it. When the context must shrink, a compaction
would summarize it, where earlier versions showed it at the cap from the start and kept it
in view: it is reduced to the cap first (`plan_prompt_reduction`, recorded as
`MessagesReshown`), and the compaction is decided again on what is left. A request that
cannot hold it reduces it as any message shown beyond the cap (the fit step of
`abridged.domain.preparation`).

A prompt reduced changes what every later message was produced under: a model that binds
thinking to its prefix would refuse the thinking after it, which leaves the view at that
moment (`thinking_plan.plan_downgrades`), and an open loop whose thinking left goes on with
thinking off until the next prompt (`Context.thinking_paused`), as a cut inside the loop does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import attrs

from abridged.domain.degradation import message_cap
from abridged.domain.indexes import IndexedView, has_indexes
from abridged.domain.planner import Decision, PlannerView

__all__ = ["PromptReduction", "plan_prompt_reduction"]


@attrs.frozen
class PromptReduction:
    """User prompts shown whole beyond the cap a message is shown in (`whole_prompts`) that
    a compaction would summarize: they are shown reduced to `cap` first (`MessagesReshown`)."""

    cap: int
    positions: tuple[int, ...]


def plan_prompt_reduction(view: PlannerView, decision: Decision) -> PromptReduction | None:
    """The prompts shown whole beyond the cap (`whole_prompts`) that `decision` would
    summarize, or `None`.

    A prompt a request can hold whole is shown whole from its first request on; when the
    context must shrink, it is reduced to the cap (half the room, `degradation.message_cap`)
    before anything is summarized, as earlier versions showed it from the start, and the
    compaction is decided again on what is left: often it is no longer due, and the prompt
    stays in view. A compaction that keeps the prompt keeps it whole."""
    entries = view.entries
    if not view.settings.whole_prompts or not entries:
        return None
    cap = message_cap(
        view.limits,
        view.system_tokens,
        view.tools_tokens,
        view.calibration,
        system_messages=getattr(view, "system_message_tokens", 0),
    )
    first = entries[0].position
    if has_indexes(view):
        prompts: Sequence[int] = cast(IndexedView, view).prompt_positions
    else:
        prompts = [e.position for e in entries if e.message.is_user_prompt]
    summarized = [p - first for p in prompts if first <= p < decision.retained_from]
    positions = tuple(
        entries[k].position
        for k in summarized
        if entries[k].shown_tokens > cap
        and not entries[k].truncations
        and not entries[k].replacements
    )
    return PromptReduction(cap, positions) if positions else None
