"""What the provider reported for a request, and how it corrects our estimates."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

CALIBRATION_BOUNDS = (0.5, 4.0)
"""A ratio of reported to estimated tokens outside these bounds is a mistake, not a trend."""


def _texts(values: Iterable[str]) -> tuple[str, ...]:
    # Stored events give lists back; the value object holds tuples.
    return tuple(values)


@attrs.frozen
class Usage:
    """Tokens the provider reported for one model reply."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_miss_reason: str | None = None
    """Why the prompt cache could not reuse the previous request's prefix, as the API's cache
    diagnostics said (`model_changed`, `system_changed`, `tools_changed`, `messages_changed`,
    `previous_message_not_found`, `unavailable`; `pending` while it was still comparing);
    `None` when the request asked for no diagnostics or nothing diverged. Events stored before
    this field load with `None`."""
    cache_missed_input_tokens: int = 0
    """About how many input tokens the cache would have read had the prefix matched."""
    input_transformations: tuple[str, ...] = attrs.field(default=(), converter=_texts)
    """What the API changed in the request before the model saw it (thinking blocks dropped
    or let through on a failed binding check), each entry's JSON as the API returned it."""
    iterations: tuple[str, ...] = attrs.field(default=(), converter=_texts)
    """`usage.iterations` (a compaction's own sampling among them), each entry's JSON."""

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, cached or not."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def compacted_first(usage: Usage | None) -> bool:
    """Whether the API compacted the request before answering (a `compaction` entry in
    `iterations`): `input_tokens` then counts the context after the compaction, not what was
    sent, and the reply does not calibrate."""
    entries = (json.loads(i) for i in usage.iterations) if usage is not None else ()
    return any(isinstance(e, dict) and e.get("type") == "compaction" for e in entries)


def within_bounds(factor: float) -> float:
    """`factor` clamped to `CALIBRATION_BOUNDS`."""
    low, high = CALIBRATION_BOUNDS
    return min(high, max(low, factor))


def observed_ratio(reported: int, estimate: int) -> float:
    """Reported over estimated tokens, clamped to `CALIBRATION_BOUNDS`."""
    return within_bounds(reported / estimate)


def moving_calibration(current: float, reported: int, estimate: int) -> float:
    """The calibration after one more reply: one odd reply (a cache miss, a retry) should
    not swing it, so it moves halfway."""
    return round((current + observed_ratio(reported, estimate)) / 2, 6)


def with_reply_report(usage: Usage, reply: Mapping[str, Any]) -> Usage:
    """`usage` with what the rest of a model reply (its Messages API JSON) reports about the
    request: the cache diagnostics' `cache_miss_reason`, the `input_transformations` and
    `usage.iterations`. Each is kept as the API sent it; a reply without them changes
    nothing."""
    diagnostics = reply.get("diagnostics")
    reason: str | None = None
    missed = 0
    if isinstance(diagnostics, Mapping):
        cause = diagnostics.get("cache_miss_reason")
        if isinstance(cause, Mapping):
            reason = str(cause.get("type") or "unknown")
            tokens = cause.get("cache_missed_input_tokens")
            missed = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0
        elif cause is None:
            reason = "pending"  # the comparison had not finished when the reply was sent
    transformations = reply.get("input_transformations") or ()
    raw_usage = reply.get("usage")
    iterations = raw_usage.get("iterations") if isinstance(raw_usage, Mapping) else None
    return attrs.evolve(
        usage,
        cache_miss_reason=reason,
        cache_missed_input_tokens=missed,
        input_transformations=tuple(_json(t) for t in transformations),
        iterations=tuple(_json(i) for i in iterations or ()),
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
