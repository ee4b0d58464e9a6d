"""Reading what a provider said when it refused a request as too long.

`Sessions.report_overflow` accepts the provider's error as the host caught it, or plain
numbers; this module turns either into the two figures the session records: the provider's
count of the request and its maximum (each may be unknown).
"""

from __future__ import annotations

from collections.abc import Callable

from abridged.application.ports import PromptTooLongError, ProviderError
from abridged.domain.errors import NotAnOverflowError

ErrorReader = Callable[[Exception], ProviderError]
"""Turns a provider SDK's exception into a `ProviderError` (an adapter's `translate_error`)."""


def overflow_figures(
    error_or_limit: Exception | int | None, tokens: int | None, read: ErrorReader | None
) -> tuple[int | None, int | None]:
    """(the provider's token count, its maximum) from an error or a maximum; raises
    `NotAnOverflowError` for an error that is not "prompt is too long", or for figures that
    are not positive whole numbers."""
    maximum: int | None
    if isinstance(error_or_limit, Exception):
        error = error_or_limit
        if not isinstance(error, PromptTooLongError) and read is not None:
            error = read(error)
        if not isinstance(error, PromptTooLongError):
            raise NotAnOverflowError(
                f"not a prompt-too-long error: {type(error_or_limit).__name__}: {error_or_limit}"
            ) from error_or_limit
        tokens = error.tokens if error.tokens is not None else tokens
        maximum = error.maximum
    else:
        maximum = error_or_limit
    for name, value in (("maximum", maximum), ("tokens", tokens)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value <= 0
        ):
            raise NotAnOverflowError(
                f"the provider's {name} must be a positive whole number, got {value!r}"
            )
    return tokens, maximum
