"""What the provider reported for a request, and how it corrects our estimates."""

from __future__ import annotations

import attrs

CALIBRATION_BOUNDS = (0.5, 4.0)
"""A ratio of reported to estimated tokens outside these bounds is a mistake, not a trend."""


@attrs.frozen
class Usage:
    """Tokens the provider reported for one model reply."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, cached or not."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def observed_ratio(reported: int, estimate: int) -> float:
    """Reported over estimated tokens, clamped to `CALIBRATION_BOUNDS`."""
    low, high = CALIBRATION_BOUNDS
    return min(high, max(low, reported / estimate))


def moving_calibration(current: float, reported: int, estimate: int) -> float:
    """The calibration after one more reply: one odd reply (a cache miss, a retry) should
    not swing it, so it moves halfway."""
    return round((current + observed_ratio(reported, estimate)) / 2, 6)
