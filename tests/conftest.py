"""Fixtures shared by every test layer."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from abridged.application.service import Sessions
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

# Speed is measured by the benchmarks, not by tests: a first tokenizer load or a busy CI
# machine must not fail a property.
settings.register_profile("abridged", deadline=None)
settings.load_profile("abridged")

TRANSCRIPTS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "transcripts"


def pytest_configure(config: pytest.Config) -> None:
    # CI always has the shared transcripts beside the clone: without them a third of the
    # replay tests would skip and the run would still look green.
    if os.environ.get("CI") and not any(TRANSCRIPTS.glob("*.jsonl")):
        raise pytest.UsageError(
            f"CI needs the shared transcripts at {TRANSCRIPTS}; they are missing, so the "
            "replay tests cannot run"
        )


MakeApp = Callable[..., Sessions]


@pytest.fixture(autouse=True)
def _services_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every service a test opens is closed when the test ends. One left to the garbage
    collector may be collected on a thread of its own store's connection pool, which cannot
    close that pool from inside it (an unraisable `RuntimeError` in a later test)."""
    opened: list[Sessions] = []
    init = Sessions.__init__

    def tracked(self: Sessions, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(Sessions, "__init__", tracked)
    yield
    monkeypatch.undo()
    for service in opened:
        with contextlib.suppress(Exception):
            service.close()


@pytest.fixture
def summarizer() -> FakeSummarizer:
    return FakeSummarizer("The user asked for a fix; tests failed in parser.py; we edited it.")


@pytest.fixture
def make_app(summarizer: FakeSummarizer) -> MakeApp:
    """An in-memory service with fake ports; keyword arguments override them."""

    def make(**overrides: object) -> Sessions:
        ports: dict[str, object] = {"counter": FakeTokenCounter(), "summarizer": summarizer}
        ports.update(overrides)
        return Sessions(env={"PERSISTENCE_MODULE": "eventsourcing.popo"}, **ports)  # type: ignore[arg-type]

    return make


@pytest.fixture
def app(make_app: MakeApp) -> Sessions:
    return make_app()


pytest_plugins = [
    "tests.support.fake_anthropic",
    "tests.support.postgres",
    "tests.support.replays",
]
