"""Compaction settings: every knob, its default, and the checks that keep them consistent."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs

from domain.errors import InvalidSettingsError


def _share(name: str, value: float, *, low: float = 0.0, high: float = 1.0) -> None:
    if not (low < value <= high):
        raise InvalidSettingsError(f"{name} must be in ({low}, {high}], got {value!r}")


@attrs.frozen
class CompactionSettings:
    """How a session decides to compact, what it keeps, and how large things may grow.

    Shares are fractions of the budget (window minus reserved output tokens) unless said.
    """

    threshold_ratio: float = 0.7
    """Compact when the next request's estimate reaches this fraction of the window."""
    threshold_floor_tokens: int = 2_000
    """Never compact a context smaller than this, whatever the ratio says."""
    keep_recent_turns: int = 4
    """Turns kept verbatim after a compaction; fewer when they alone do not fit."""
    retained_share: float = 0.4
    """At most this share of the window is kept verbatim after a compaction."""
    summary_share: float = 0.1
    """A new summary chunk may take at most this share of the budget."""
    summaries_share: float = 0.2
    """All summary chunks together may take this share; past it they are re-summarized."""
    tool_output_share: float = 0.25
    """One message's tool outputs are shown head-and-tail above this share of the budget."""

    def __attrs_post_init__(self) -> None:
        _share("threshold_ratio", self.threshold_ratio)
        _share("retained_share", self.retained_share)
        _share("summary_share", self.summary_share, high=0.5)
        _share("summaries_share", self.summaries_share, high=0.5)
        _share("tool_output_share", self.tool_output_share)
        if self.summary_share > self.summaries_share:
            raise InvalidSettingsError(
                f"summary_share ({self.summary_share}) cannot exceed "
                f"summaries_share ({self.summaries_share})"
            )
        if self.threshold_floor_tokens < 0:
            raise InvalidSettingsError("threshold_floor_tokens cannot be negative")
        if self.keep_recent_turns < 0:
            raise InvalidSettingsError("keep_recent_turns cannot be negative")

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompactionSettings:
        unknown = set(data) - {f.name for f in attrs.fields(cls)}
        if unknown:
            raise InvalidSettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
        return cls(**data)

    @property
    def fingerprint(self) -> str:
        """A short stable hash of every setting, recorded with each decision."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@attrs.frozen
class Limits:
    """The token limits of one session's requests, derived once from window and settings."""

    window: int
    reserved_output: int
    settings: CompactionSettings

    def __attrs_post_init__(self) -> None:
        if self.window <= 0:
            raise InvalidSettingsError(f"the context window must be positive, got {self.window}")
        if not (0 < self.reserved_output < self.window):
            raise InvalidSettingsError(
                f"reserved output tokens must be between 1 and the window ({self.window}), "
                f"got {self.reserved_output}"
            )

    @property
    def budget(self) -> int:
        """Input tokens a request may hold: the window minus the output reservation."""
        return self.window - self.reserved_output

    @property
    def threshold(self) -> int:
        """The estimate at which compaction triggers; never above the budget."""
        by_ratio = int(self.settings.threshold_ratio * self.window)
        return min(self.budget, max(by_ratio, self.settings.threshold_floor_tokens))

    @property
    def retained_tokens(self) -> int:
        return int(self.settings.retained_share * self.window)

    @property
    def summary_tokens(self) -> int:
        return max(64, int(self.settings.summary_share * self.budget))

    @property
    def summaries_tokens(self) -> int:
        return max(128, int(self.settings.summaries_share * self.budget))

    @property
    def tool_output_tokens(self) -> int:
        return max(64, int(self.settings.tool_output_share * self.budget))
