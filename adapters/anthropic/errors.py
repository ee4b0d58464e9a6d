"""Anthropic SDK exceptions translated into the application's provider errors.

The SDK's exceptions stop here: callers of the adapters see `PromptTooLongError`,
`ProviderUnavailableError` or `ProviderError` (and `ModelNotFoundError`, a `ProviderError`),
each with the SDK's exception as its `__cause__`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping

import anthropic

from abridged.application.ports import PromptTooLongError, ProviderError, ProviderUnavailableError

__all__ = [
    "SDK_ERRORS",
    "TRANSPORT_ERRORS",
    "MalformedResponseError",
    "ModelNotFoundError",
    "translate_error",
]

PROMPT_TOO_LONG = re.compile(
    r"prompt is too long:\s*(?P<tokens>\d+)\s*tokens\s*>\s*(?P<maximum>\d+)\s*maximum",
    re.IGNORECASE,
)
"""The API's text for a prompt over the model's window (HTTP 400 invalid_request_error)."""

INPUT_AND_OUTPUT_TOO_LONG = re.compile(
    r"input length and `?max_tokens`? exceed context limit:\s*"
    r"(?P<input>\d+)\s*\+\s*(?P<output>\d+)\s*>\s*(?P<maximum>\d+)",
    re.IGNORECASE,
)
"""The API's text when the prompt fits but the prompt plus `max_tokens` does not."""

UNAVAILABLE_ERROR_TYPES = frozenset(
    {"rate_limit_error", "overloaded_error", "api_error", "timeout_error"}
)
"""Error types that mean "try again later", whatever the HTTP status. A stream that fails
after it started carries one of these in an `error` event under an HTTP 200."""


class ModelNotFoundError(ProviderError):
    """The API answered 404 not_found_error: an unknown model name, or a wrong base URL."""


def too_long_counts(text: str) -> tuple[int, int] | None:
    """The provider's count and maximum in an error that says the request is over the
    window: "prompt is too long: N tokens > M maximum", or "input length and `max_tokens`
    exceed context limit: I + O > M". The count is the prompt's, I: the session compares it
    with its own estimate of the input, and already reserves the output tokens."""
    if match := PROMPT_TOO_LONG.search(text):
        return int(match["tokens"]), int(match["maximum"])
    if match := INPUT_AND_OUTPUT_TOO_LONG.search(text):
        return int(match["input"]), int(match["maximum"])
    return None


class ReplyCutShortError(ProviderError):
    """The reply reached its output limit (`stop_reason` `max_tokens`, or
    `model_context_window_exceeded`) in the middle of a tool call's input: the call cannot be
    run, and the same request would be cut the same way. Send it again with a larger
    `max_tokens`, as the API advises; nothing was recorded."""


class MalformedResponseError(ProviderUnavailableError):
    """The API (or something between it and us) answered with a body that cannot be read:
    truncated or invalid JSON, an empty body, another content type, bad stream data."""


def _transport_errors() -> tuple[type[Exception], ...]:
    # The SDK wraps failures to connect, but a connection dropped in the middle of a stream
    # reaches the caller as its HTTP library's own exception. SDK 2.x uses `httpx2`, older
    # releases `httpx`; whichever is installed is the one to catch.
    found: list[type[Exception]] = []
    for module_name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        error_class = getattr(module, "TransportError", None)
        if isinstance(error_class, type) and issubclass(error_class, Exception):
            found.append(error_class)
    return tuple(found)


TRANSPORT_ERRORS: tuple[type[Exception], ...] = _transport_errors()
"""The HTTP library's network errors, raised when a stream breaks after it started."""

SDK_ERRORS: tuple[type[Exception], ...] = (anthropic.AnthropicError, *TRANSPORT_ERRORS)
"""Everything a call through the SDK may raise that `translate_error` translates."""


def _error_details(body: object) -> tuple[str | None, str | None, str | None]:
    """The error type, message and request id of an API error body, when it has them."""
    if not isinstance(body, Mapping):
        return None, None, None
    error = body.get("error")
    kind = message = None
    if isinstance(error, Mapping):
        kind = error.get("type") if isinstance(error.get("type"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
    request_id = body.get("request_id")
    return kind, message, request_id if isinstance(request_id, str) else None


def translate_error(error: Exception) -> ProviderError:
    """The provider error that stands for an SDK (or transport) exception.

    The result has `error` as its `__cause__`, so `raise translate_error(e)` keeps the chain
    even without `from e`.
    """
    translated = _translate(error)
    translated.__cause__ = error
    return translated


def _translate(error: Exception) -> ProviderError:
    if isinstance(error, anthropic.APIStatusError):
        return _translate_status(error)
    if isinstance(error, anthropic.APIConnectionError):
        # APITimeoutError is a subclass: both mean the API could not be reached in time.
        return ProviderUnavailableError(f"Anthropic API unreachable: {error}")
    if isinstance(error, TRANSPORT_ERRORS):
        return ProviderUnavailableError(
            f"connection to the Anthropic API failed mid-response: {type(error).__name__}: {error}"
        )
    return ProviderError(f"Anthropic API call failed: {type(error).__name__}: {error}")


def _translate_status(error: anthropic.APIStatusError) -> ProviderError:
    status = error.status_code
    kind, api_message, body_request_id = _error_details(error.body)
    request_id = getattr(error, "request_id", None) or body_request_id
    message = api_message or str(error)
    # A stream that fails after it started reports its error in an event under HTTP 200.
    where = "in the response stream" if status == 200 else str(status)
    text = f"Anthropic API error {where}" + (f" {kind}" if kind else "") + f": {message}"
    if request_id:
        text += f" (request {request_id})"

    if status in (400, 413) or kind == "invalid_request_error":
        if figures := too_long_counts(message):
            return PromptTooLongError(text, tokens=figures[0], maximum=figures[1])
        if status == 413:
            # request_too_large: the body is over the API's byte limit; a smaller context is
            # the remedy, exactly as for a prompt over the window.
            return PromptTooLongError(text)
    if status in (408, 429) or status >= 500 or kind in UNAVAILABLE_ERROR_TYPES:
        return ProviderUnavailableError(text)
    if status == 404:
        return ModelNotFoundError(text)
    return ProviderError(text)
