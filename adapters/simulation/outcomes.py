"""What `abridged simulate` reports: one strategy's outcome on one transcript (`Outcome`), and
each strategy's totals over the transcripts it applied to (`totals`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

DOES_NOT_FIT = "does not fit"
NO_REQUEST = "no request to make"


@attrs.frozen
class Outcome:
    """One strategy on one transcript."""

    transcript: str
    strategy: str
    applicable: bool
    requests: int = 0
    not_sent: int = 0
    prunes: int = 0
    compactions: int = 0
    repeated_compactions: int = 0
    forced_trims: int = 0
    summarizer_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    peak_tokens: int = 0
    mean_tokens: float = 0.0
    input_tokens: int = 0
    cache_read: int = 0
    cache_written: int = 0
    billed: float = 0.0
    facts: int = 0
    facts_final: float = 0.0
    facts_mean: float = 0.0
    facts_final_by_kind: dict[str, float] = attrs.field(factory=dict)
    facts_by_kind_count: dict[str, int] = attrs.field(factory=dict)
    recent_depth_mean: float = 0.0
    """Over the requests that do not send every message whole: the mean number of the last
    messages sent whole (at most `DEPTH_CAP`)."""
    recent_depth_min: int = 0
    """The fewest last messages sent whole by any such request."""
    short_tails: int = 0
    """Such requests whose whole last messages hold fewer than `RECENT_TURNS` turns when one
    more step back (a message, with the call its results answer) would still have fit in
    `RECENT_SHARE` of the window: a tail shorter than the working-context rule."""
    refused: str | None = None
    """The message the session refused (its transcript and line, and why): the run stopped
    there, and the requests after it count as not sent."""
    not_applicable: str | None = None
    """Why the strategy was not run (`applicable` false): the transcript does not fit whole
    (`none`), or it holds no request to make (no reply after a prompt). Such a row counts
    in no total: a transcript with nothing to keep would read as one that keeps it all."""

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Total:
    """One strategy over every transcript it applied to."""

    strategy: str
    transcripts: int
    requests: int
    not_sent: int
    prunes: int
    compactions: int
    repeated_compactions: int
    summarizer_calls: int
    summarizer_tokens: int
    peak_tokens: int
    mean_tokens: float
    cache_written: int
    billed: float
    facts_final_mean: float
    facts_final_min: float
    facts_mean: float
    facts_by_kind: dict[str, float] = attrs.field(factory=dict)
    """Per kind, the share of facts the final requests keep, over every transcript's facts
    of that kind."""
    recent_depth_min: int = 0
    short_tails: int = 0

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def totals(outcomes: Sequence[Outcome]) -> list[Total]:
    """Per strategy, in first-seen order: sums, and the mean and minimum of facts kept."""
    names = list(dict.fromkeys(o.strategy for o in outcomes))
    result = []
    for name in names:
        rows = [o for o in outcomes if o.strategy == name and o.applicable]
        n = len(rows) or 1
        requests = sum(o.requests - o.not_sent for o in rows) or 1
        result.append(
            Total(
                strategy=name,
                transcripts=len(rows),
                requests=sum(o.requests for o in rows),
                not_sent=sum(o.not_sent for o in rows),
                prunes=sum(o.prunes for o in rows),
                compactions=sum(o.compactions for o in rows),
                repeated_compactions=sum(o.repeated_compactions for o in rows),
                summarizer_calls=sum(o.summarizer_calls for o in rows),
                summarizer_tokens=sum(
                    o.summarizer_input_tokens + o.summarizer_output_tokens for o in rows
                ),
                peak_tokens=max((o.peak_tokens for o in rows), default=0),
                mean_tokens=sum(o.input_tokens for o in rows) / requests,
                cache_written=sum(o.cache_written for o in rows),
                billed=sum(o.billed for o in rows),
                facts_final_mean=sum(o.facts_final for o in rows) / n,
                facts_final_min=min((o.facts_final for o in rows), default=1.0),
                facts_mean=sum(o.facts_mean for o in rows) / n,
                facts_by_kind=_pooled_kinds(rows),
                recent_depth_min=min((o.recent_depth_min for o in rows), default=0),
                short_tails=sum(o.short_tails for o in rows),
            )
        )
    return result


def _pooled_kinds(rows: Sequence[Outcome]) -> dict[str, float]:
    kept: dict[str, float] = {}
    seen: dict[str, int] = {}
    for o in rows:
        for kind, share in o.facts_final_by_kind.items():
            n = o.facts_by_kind_count.get(kind, 0)
            kept[kind] = kept.get(kind, 0.0) + share * n
            seen[kind] = seen.get(kind, 0) + n
    return {k: round(kept[k] / seen[k], 4) for k in sorted(kept) if seen[k]}
