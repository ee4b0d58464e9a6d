"""`SessionsOptions`: every host option of the service, defined once.

`Sessions`, `AsyncSessions`, `bootstrap` and `bootstrap_async` all take these, as keywords
(`Sessions(counter=..., summarizer=..., metrics=...)`) or as one object
(`Sessions(counter=..., summarizer=..., options=SessionsOptions(metrics=...))`), so an option
added here reaches both services and both bootstraps at once. The ports that differ between
the synchronous and the asyncio service (token counter, summarizer, chat model) are not
options: each constructor names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from abridged.application.guard import BreakerSettings
from abridged.application.locks import CompactionLocks
from abridged.application.overflow import ErrorReader
from abridged.application.ports import (
    CompactionHooks,
    ContextProvider,
    EventEraser,
    Metrics,
    NoMetrics,
    Redactor,
)
from abridged.application.redaction import DefaultRedactor
from abridged.domain.capabilities import ModelCapabilities, check_model_capabilities
from abridged.domain.errors import InvalidArgumentError
from abridged.domain.inputs import DEFAULT_MAX_MESSAGE_BYTES
from abridged.domain.settings import check_model_windows

__all__ = ["SessionsOptions", "options_of"]


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(env or {}))


def _windows(windows: Mapping[str, int] | None) -> Mapping[str, int]:
    return MappingProxyType(check_model_windows(dict(windows or {})))


def _capabilities(
    table: Mapping[str, ModelCapabilities | Mapping[str, Any]] | None,
) -> Mapping[str, ModelCapabilities]:
    return MappingProxyType(check_model_capabilities(dict(table or {})))


def _metrics(metrics: Metrics | None) -> Metrics:
    return metrics if metrics is not None else NoMetrics()


def _redactor(redactor: Redactor | None) -> Redactor:
    return redactor if redactor is not None else DefaultRedactor()


def _breaker(settings: BreakerSettings | None) -> BreakerSettings:
    return settings if settings is not None else BreakerSettings()


def _positive_bytes(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{attribute.name} must be an int, got {value!r}")
    if value < 1:
        raise InvalidArgumentError(f"{attribute.name} must be at least 1, got {value}")


def _flag(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{attribute.name} must be True or False, got {value!r}")


def _callable_or_none(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not callable(value):
        raise InvalidArgumentError(f"{attribute.name} must be a function, got {value!r}")


@attrs.frozen(kw_only=True)
class SessionsOptions:
    """What a host sets on the service, beyond the ports it passes by name.

    Each field's default is what the service does when the option is left out; `None`
    given for an option with a default object (`metrics`, `redactor`,
    `summarizer_breaker`) means that default."""

    hooks: CompactionHooks | None = None
    """Take part in compaction: before (cancel, or supply the summary) and after it."""
    context_provider: ContextProvider | None = None
    """Content recomputed for every request, never stored nor compacted."""
    metrics: Metrics = attrs.field(default=None, converter=_metrics)
    """Receives the service's counters (default `NoMetrics()`: none reported)."""
    read_provider_error: ErrorReader | None = attrs.field(default=None, validator=_callable_or_none)
    """Turns a provider SDK's exception into a `ProviderError`, so `report_overflow` accepts
    the SDK's own errors (the bootstraps wire Anthropic's)."""
    erase_events: EventEraser | None = attrs.field(default=None, validator=_callable_or_none)
    """Removes a session's rows from the store, for `delete_session(..., erase=True)` (the
    bootstraps wire it for SQLite and PostgreSQL)."""
    env: Mapping[str, str] = attrs.field(factory=dict, converter=_env)
    """eventsourcing's settings (store, cache size) and `ABRIDGED_MODEL_WINDOWS`; the
    process environment fills what is left out."""
    model_windows: Mapping[str, int] = attrs.field(factory=dict, converter=_windows)
    """Adds to (or overrides) the table of context windows by model name."""
    model_capabilities: Mapping[str, ModelCapabilities] = attrs.field(
        factory=dict, converter=_capabilities
    )
    """Adds to (or overrides) the table of what each model checks and accepts
    (`abridged.domain.capabilities`): rows by model-name prefix, each a `ModelCapabilities`
    or a mapping of some of its fields, the rest the strictest."""
    locks: CompactionLocks | None = None
    """One compaction at a time per session: by default among this process's threads (the
    bootstraps add PostgreSQL's advisory locks for a shared server)."""
    background: bool = attrs.field(default=True, validator=_flag)
    """Whether a reply past a session's `background_threshold_ratio` starts its compaction
    off the user's turn (a worker thread; an asyncio task for `AsyncSessions`)."""
    defer_compaction: bool = attrs.field(default=False, validator=_flag)
    """Whether a compaction due at the threshold waits for the background while the request
    as it stands still fits the budget: the request is prepared unchanged (a
    `compaction_deferred` notice) and the compaction starts off the user's turn, as
    `compact_soon` starts it, for the next request to use. A compaction the request needs
    to fit, or one asked for (`request_compaction`, `compact`), runs at once as always.
    Needs `background` (`abridged serve` turns it on: docs/serving.md)."""
    max_message_bytes: int = attrs.field(
        default=DEFAULT_MAX_MESSAGE_BYTES, validator=_positive_bytes
    )
    """The largest message accepted (its Messages API JSON, in UTF-8 bytes)."""
    summarizer_breaker: BreakerSettings = attrs.field(default=None, converter=_breaker)
    """Each summarizer call's time budget, and when to stop calling a failing summarizer
    (`abridged.application.guard`)."""
    redactor: Redactor = attrs.field(default=None, converter=_redactor)
    """Replaces secrets in what the service derives from messages (summarizer input,
    summaries, the facts ledger); default `DefaultRedactor()`, `NoRedaction()` for none.
    The stored messages are kept as appended (docs/security.md)."""


def options_of(
    service: str, options: SessionsOptions | None, keywords: Mapping[str, Any]
) -> SessionsOptions:
    """The options a constructor was given: `options`, with each keyword option set over
    it. Raises `InvalidArgumentError` naming a keyword that is no option of `service`."""
    unknown = sorted(set(keywords) - set(attrs.fields_dict(SessionsOptions)))
    if unknown:
        known = ", ".join(attrs.fields_dict(SessionsOptions))
        raise InvalidArgumentError(
            f"{service}() got unknown options: {', '.join(unknown)} (its options: {known})"
        )
    return attrs.evolve(options or SessionsOptions(), **keywords)
