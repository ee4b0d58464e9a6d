"""What a session's next request holds, part by part: the `/status` of a session."""

from __future__ import annotations

import attrs

from abridged.domain.context import calibrated, raw_estimate
from abridged.domain.messages import Role
from abridged.domain.session import Session
from abridged.domain.tokens import MESSAGE_OVERHEAD, REQUEST_OVERHEAD

__all__ = ["ContextBreakdown", "context_breakdown"]


@attrs.frozen
class ContextBreakdown:
    """The token counts of the next request's parts (uncalibrated, as stored), their
    calibrated total, and the limits the session works within."""

    overhead: int
    system: int
    tools: int
    summaries: int
    summary_chunks: int
    ledger: int
    """Tokens of the facts ledger, shown before the summaries."""
    kept_messages: int
    kept_tokens: int
    kept_from: int
    """Position of the first message kept verbatim (0 for the first message)."""
    pruned_blocks: int
    """Blocks of kept messages shown pruned, truncated to text or dropped."""
    raw_total: int
    calibration: float
    estimate: int
    window: int
    threshold: int
    budget: int
    messages: int
    generation: int

    @property
    def percent_of_window(self) -> float:
        return round(100 * self.estimate / self.window, 1)


def context_breakdown(session: Session) -> ContextBreakdown:
    """The breakdown of the request `session` would send next (without per-turn content)."""
    entries = session.entries
    separate = (
        bool(session.summaries) and bool(entries) and entries[0].message.role is Role.ASSISTANT
    )
    raw = raw_estimate(session)
    limits = session.limits
    return ContextBreakdown(
        overhead=REQUEST_OVERHEAD + (MESSAGE_OVERHEAD if separate else 0),
        system=session.system_tokens,
        tools=session.tools_tokens,
        summaries=sum(c.tokens for c in session.summaries),
        summary_chunks=len(session.summaries),
        ledger=session.ledger_tokens,
        kept_messages=len(entries),
        # System messages carried through compactions are shown with the kept messages.
        kept_tokens=session.tail_tokens + session.carried_tokens,
        kept_from=session.retained_from,
        pruned_blocks=sum(len(e.replacements) for e in entries),
        raw_total=raw,
        calibration=session.calibration,
        estimate=calibrated(session, raw),
        window=limits.window,
        threshold=limits.threshold,
        budget=limits.budget,
        messages=session.message_count,
        generation=session.generation,
    )
