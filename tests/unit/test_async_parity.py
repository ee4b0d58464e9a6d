"""`AsyncSessions` and `bootstrap_async` offer what `Sessions` and `bootstrap` offer: every
public method has an awaited twin taking the same parameters, and every option reaches both
services through both constructors and both bootstraps. A method or option added to one side
only fails here."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from abridged.adapters.bootstrap import bootstrap, bootstrap_async
from abridged.application.async_service import AsyncSessions
from abridged.application.guard import BreakerSettings
from abridged.application.locks import ProcessLocks
from abridged.application.options import SessionsOptions
from abridged.application.redaction import NoRedaction
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidArgumentError
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

NO_TWIN = {
    # eventsourcing's hooks on its `Application`, called by the library while it builds the
    # store and its snapshots, not by a host.
    "construct_mapper",
    "construct_repository",
    "register_transcodings",
    "take_snapshot",
    # A thread lock held across the caller's block; an asyncio host's commands take it on
    # the service's worker threads.
    "compaction_lock",
}
RENAMED = {"close": "aclose"}
"""Twins whose name says they are awaited."""
NOT_AWAITED = {
    # Returns the task it starts on the running loop.
    "compact_soon",
    # A context manager around the caller's own block, which may hold awaits.
    "correlation",
    # A lookup in memory.
    "capabilities",
    # A registration in memory.
    "on_saved",
}


def public_methods(cls: type) -> list[str]:
    """The public callables `cls` and the classes it is built from in abridged define (not
    those eventsourcing's `Application` brings, which are the store's)."""
    return sorted(
        {
            name
            for base in cls.__mro__
            if base.__module__.startswith("abridged.")
            for name, value in vars(base).items()
            if not name.startswith("_") and callable(value)
        }
    )


def parameters(method: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(method).parameters.values()
        if p.name != "self"
    ]


def test_the_allow_lists_name_real_methods() -> None:
    # A method renamed or removed must leave the lists, or they would hide a new one.
    assert NO_TWIN | set(RENAMED) | NOT_AWAITED <= set(public_methods(Sessions))


@pytest.mark.parametrize("name", sorted(set(public_methods(Sessions)) - NO_TWIN))
def test_every_public_method_has_an_async_twin_with_its_parameters(name: str) -> None:
    twin = getattr(AsyncSessions, RENAMED.get(name, name), None)
    assert twin is not None, f"AsyncSessions has no twin of Sessions.{name}"
    assert inspect.iscoroutinefunction(twin) != (name in NOT_AWAITED)
    missing = [p for p in parameters(getattr(Sessions, name)) if p not in parameters(twin)]
    assert not missing, f"AsyncSessions.{name} lacks the parameters {missing}"


def test_bound_methods_keep_their_first_parameter() -> None:
    # The loop-built `complete` keeps `session_id` when bound, as written methods do.
    sessions = Sessions(counter=FakeTokenCounter(), summarizer=FakeSummarizer())
    try:
        assert next(iter(inspect.signature(sessions.complete).parameters)) == "session_id"
    finally:
        sessions.close()


@pytest.mark.parametrize(
    ("sync", "twin"), [(Sessions.__init__, AsyncSessions.__init__), (bootstrap, bootstrap_async)]
)
def test_constructors_and_bootstraps_take_the_same_parameters(
    sync: Callable[..., Any], twin: Callable[..., Any]
) -> None:
    # The ports' types differ (the async ones are awaited); their names and kinds may not.
    names = {(name, kind) for name, kind, _ in parameters(twin)}
    missing = [(name, kind) for name, kind, _ in parameters(sync) if (name, kind) not in names]
    assert not missing, f"{twin.__qualname__} lacks {missing}"


def sample_options() -> dict[str, Any]:
    """A value other than the default for every option."""

    def reader(error: Exception) -> Any:
        raise error

    def eraser(recorders: object, session_id: object) -> int:
        return 0

    return {
        "hooks": object(),
        "context_provider": object(),
        "metrics": object(),
        "read_provider_error": reader,
        "erase_events": eraser,
        "env": {"AGGREGATE_CACHE_MAXSIZE": "7"},
        "model_windows": {"house-model": 12_345},
        "model_capabilities": {"house-model": {"system_messages": True}},
        "locks": ProcessLocks(),
        "background": False,
        "defer_compaction": True,
        "max_message_bytes": 1_234,
        "summarizer_breaker": BreakerSettings(budget=5.0),
        "redactor": NoRedaction(),
    }


def test_every_option_has_a_sample() -> None:
    assert set(sample_options()) == set(attrs.fields_dict(SessionsOptions))


def build(kind: str, db: Path, **keywords: Any) -> Any:
    ports: Mapping[str, Any] = {"counter": FakeTokenCounter(), "summarizer": FakeSummarizer()}
    if kind == "Sessions":
        return Sessions(**ports, **keywords)
    if kind == "AsyncSessions":
        return AsyncSessions(**ports, **keywords)
    if kind == "bootstrap":
        return bootstrap(db, **ports, **keywords)
    return bootstrap_async(db, **ports, **keywords)


def close(service: Any) -> None:
    if isinstance(service, AsyncSessions):
        asyncio.run(service.aclose())
    else:
        service.close()


KINDS = ["Sessions", "AsyncSessions", "bootstrap", "bootstrap_async"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(sample_options()))
@pytest.mark.parametrize("given", ["keyword", "options"])
def test_every_option_reaches_the_service(tmp_path: Path, kind: str, name: str, given: str) -> None:
    value = sample_options()[name]
    options = SessionsOptions(**{name: value})
    keywords = {name: value} if given == "keyword" else {"options": options}
    service = build(kind, tmp_path / "s.sqlite3", **keywords)
    try:
        expected = getattr(options, name)
        services: list[Any] = (
            [service, service.sync] if isinstance(service, AsyncSessions) else [service]
        )
        for each in services:
            if name == "background" and each is not service:
                continue  # the async service starts background compactions itself
            held = getattr(each.options, name)
            if name == "env":
                assert dict(expected).items() <= dict(held).items()
            else:
                assert held == expected
    finally:
        close(service)


@pytest.mark.parametrize("kind", KINDS)
def test_an_unknown_option_is_refused(tmp_path: Path, kind: str) -> None:
    with pytest.raises(InvalidArgumentError, match="max_mesage_bytes"):
        build(kind, tmp_path / "s.sqlite3", max_mesage_bytes=10)


def test_complete_says_it_returns_the_reply_not_the_loop_behind_it() -> None:
    # `help(Sessions.complete)` showed `-> Steps`, the generator it is built on.
    for service in (Sessions, AsyncSessions):
        assert inspect.signature(service.complete).return_annotation == "ModelReply"
        assert service.complete.__annotations__["return"] == "ModelReply"
