"""What a host can show its user about the context: full or summarized, and what just
happened to it (compacting…, compacted, pruned), with where the tokens go.

`Sessions.prepare_request` returns these on every `PreparedRequest`, and calls the host's
`on_notice` as each happens, so a UI can show "compacting…" while the summarizer runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

import attrs

from abridged.domain.context import compaction_chunk, raw_estimate
from abridged.domain.reply_shapes import leads_with_compaction
from abridged.domain.session import Session

ContextStatus: TypeAlias = Literal["full", "summarized"]
"""`full`: every message of the conversation is in the request (some old tool outputs may
be shown pruned); `summarized`: older messages are stood for by summary chunks."""

NoticeKind: TypeAlias = Literal[
    "compaction_started",
    "compaction_completed",
    "compaction_failed",
    "compaction_suppressed",
    "compaction_deferred",
    "pruned",
    "overflow",
]


@attrs.frozen
class TokenBreakdown:
    """Where a request's estimated tokens go, part by part (the stored, uncalibrated counts
    the estimate sums), their calibrated `estimate`, and the limits the session works within.

    Notices carry the breakdown of the request they leave; `abridged show` prints it for the
    next request of a stored session."""

    system: int
    tools: int
    summary: int
    """The summary chunks."""
    ledger: int
    """The facts ledger, shown before the summaries."""
    messages: int
    """The kept (verbatim) messages, as shown; system messages carried through compactions
    with them."""
    extra: int
    """Per-turn content from the context provider."""
    overhead: int
    """What the request adds around its parts: its own framing, and a message of its own
    for the summaries when the kept messages start with an assistant message."""
    estimate: int
    """The calibrated estimate of the whole request: what is compared with the budget."""
    budget: int
    window: int
    threshold: int
    calibration: float
    """The factor the provider's reported usage has set on the sum of the parts."""
    summary_chunks: int
    kept_messages: int
    kept_from: int
    """Position of the first message kept verbatim (0 for the first message)."""
    pruned_blocks: int
    """Blocks of kept messages shown pruned, truncated to text or dropped."""
    message_count: int
    """Messages in the whole conversation, summarized or kept."""
    generation: int
    """Compactions so far."""

    @property
    def total(self) -> int:
        """The uncalibrated sum of the parts."""
        return (
            self.system
            + self.tools
            + self.summary
            + self.ledger
            + self.messages
            + self.extra
            + self.overhead
        )

    @property
    def percent_of_window(self) -> float:
        """The estimate as a share of the context window, in percent (one decimal)."""
        return round(100 * self.estimate / self.window, 1)


@attrs.frozen
class Notice:
    """One thing that happened to the context while a request was prepared.

    `text` is a short sentence for a user; `tokens_before`/`tokens_after` are estimates of
    the request, when the notice changed its size; `breakdown` is the request after it."""

    kind: NoticeKind
    text: str
    tokens_before: int | None = None
    tokens_after: int | None = None
    breakdown: TokenBreakdown | None = None


NoticeCallback: TypeAlias = Callable[[Notice], None]
"""Called with each notice as it happens (before `prepare_request` returns)."""


def breakdown_of(session: Session, extra_tokens: int = 0) -> TokenBreakdown:
    """The breakdown of the session's next request, with `extra_tokens` of per-turn content
    (and the per-turn content recorded for a model that binds thinking)."""
    entries = session.entries
    raw = raw_estimate(session) + extra_tokens
    extra_tokens += session.turn_context_tokens
    if entries and leads_with_compaction(entries[0].message):
        # The API compacted on its own: it drops what is sent before its block, so nothing is.
        summary = ledger = carried = 0
    else:
        chunks, lead = session.summaries, compaction_chunk(session.summaries)
        summary = sum(c.tokens if c is lead else c.text_tokens or c.tokens for c in chunks)
        ledger, carried = session.ledger_tokens, session.carried_tokens
    messages = session.tail_tokens + carried
    parts = session.system_tokens + session.tools_tokens + summary + ledger + messages
    limits = session.limits
    return TokenBreakdown(
        system=session.system_tokens,
        tools=session.tools_tokens,
        summary=summary,
        ledger=ledger,
        messages=messages,
        extra=extra_tokens,
        overhead=raw - parts - extra_tokens,
        estimate=session.calibrated(raw),
        budget=limits.budget,
        window=limits.window,
        threshold=limits.threshold,
        calibration=session.calibration,
        summary_chunks=len(session.summaries),
        kept_messages=len(entries),
        kept_from=session.retained_from,
        # Kept by the session's mutators: counting the tail took 0.4 ms a request at 10,000
        # retained messages, twice (the prepare and its notice).
        pruned_blocks=session.shown_otherwise(),
        message_count=session.message_count,
        generation=session.generation,
    )


def context_status(session: Session) -> ContextStatus:
    """`summarized` once any message is stood for by a summary chunk, else `full`."""
    return "summarized" if session.summaries else "full"
