"""What a host can show its user about the context: full or summarized, and what just
happened to it (compacting…, compacted, pruned), with where the tokens go.

`Sessions.prepare_request` returns these on every `PreparedRequest`, and calls the host's
`on_notice` as each happens, so a UI can show "compacting…" while the summarizer runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

import attrs

from abridged.domain.context import raw_estimate
from abridged.domain.session import Session

ContextStatus: TypeAlias = Literal["full", "summarized"]
"""`full`: every message of the conversation is in the request (some old tool outputs may
be shown pruned); `summarized`: older messages are stood for by summary chunks."""

NoticeKind: TypeAlias = Literal[
    "compaction_started",
    "compaction_completed",
    "compaction_failed",
    "compaction_suppressed",
    "pruned",
    "overflow",
]


@attrs.frozen
class TokenBreakdown:
    """Where a request's estimated tokens go (before calibration, except `estimate`)."""

    system: int
    tools: int
    summary: int
    messages: int
    """The kept (verbatim) messages, as shown."""
    extra: int
    """Per-turn content from the context provider."""
    overhead: int
    estimate: int
    """The calibrated estimate of the whole request: what is compared with the budget."""
    budget: int

    @property
    def total(self) -> int:
        """The uncalibrated sum of the parts."""
        return self.system + self.tools + self.summary + self.messages + self.extra + self.overhead


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
    """The breakdown of the session's next request."""
    summary = sum(chunk.tokens for chunk in session.summaries)
    raw = raw_estimate(session) + extra_tokens
    # System messages carried through compactions are messages the request shows.
    messages = session.tail_tokens + session.carried_tokens
    overhead = raw - (
        session.system_tokens + session.tools_tokens + summary + messages + extra_tokens
    )
    return TokenBreakdown(
        system=session.system_tokens,
        tools=session.tools_tokens,
        summary=summary,
        messages=messages,
        extra=extra_tokens,
        overhead=overhead,
        estimate=session.calibrated(raw),
        budget=session.limits.budget,
    )


def context_status(session: Session) -> ContextStatus:
    """`summarized` once any message is stood for by a summary chunk, else `full`."""
    return "summarized" if session.summaries else "full"
