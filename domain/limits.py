"""The token limits of one session's requests: what its settings make of its window."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from abridged.domain.errors import InvalidSettingsError

if TYPE_CHECKING:
    from abridged.domain.settings import CompactionSettings

MAX_WINDOW = 100_000_000
"""The largest context window (and token, byte or character setting) accepted: far above any
model's, so a larger one is a typo (an extra digit) that would never compact."""


@attrs.frozen
class Limits:
    """The token limits of one session's requests, derived once from window and settings."""

    window: int
    reserved_output: int
    settings: CompactionSettings

    def __attrs_post_init__(self) -> None:
        if self.window <= 0:
            raise InvalidSettingsError(f"the context window must be positive, got {self.window}")
        if self.window > MAX_WINDOW:
            raise InvalidSettingsError(
                f"the context window must be at most {MAX_WINDOW}, got {self.window}"
            )
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
        reserve = self.settings.threshold_reserve_tokens
        if reserve is not None:
            by_setting = self.window - reserve
        else:
            by_setting = int(self.settings.threshold_ratio * self.window)
        return min(self.budget, max(by_setting, self.settings.threshold_floor_tokens))

    @property
    def target(self) -> int:
        """The estimate a compaction aims to bring the next request under."""
        return int(self.settings.target_ratio * self.window)

    @property
    def background_threshold(self) -> int | None:
        """The earlier mark at which a compaction may start in the background, or `None`."""
        ratio = self.settings.background_threshold_ratio
        if ratio is None:
            return None
        return min(self.threshold, int(ratio * self.window))

    @property
    def min_reduction(self) -> int:
        return int(self.settings.min_reduction_share * self.budget)

    @property
    def prune_protect_tokens(self) -> int:
        return int(self.settings.prune_protect_share * self.budget)

    @property
    def prune_min_tokens(self) -> int:
        return int(self.settings.prune_min_share * self.budget)

    @property
    def recent_tokens(self) -> int:
        """The recent tail's room before it grows to hold the last `keep_recent_turns` turns:
        `keep_recent_tokens`, else `keep_recent_share` of the window, at most
        `retained_share` of it."""
        share = self.settings.keep_recent_share or 0.0
        room = self.settings.keep_recent_tokens or int(share * self.window)
        return min(room, int(self.settings.retained_share * self.window))

    @property
    def retained_tokens(self) -> int:
        share = int(self.settings.retained_share * self.window)
        by_tokens = self.settings.keep_recent_tokens
        return share if by_tokens is None else min(share, by_tokens)

    @property
    def summary_tokens(self) -> int:
        return max(64, int(self.settings.summary_share * self.budget))

    @property
    def summaries_tokens(self) -> int:
        return max(128, int(self.settings.summaries_share * self.budget))

    @property
    def ledger_tokens(self) -> int:
        """The facts ledger's budget (0 when the ledger is off)."""
        return int(self.settings.ledger_share * self.budget)

    @property
    def tool_output_tokens(self) -> int:
        return max(64, int(self.settings.tool_output_share * self.budget))
