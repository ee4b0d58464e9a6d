"""A proxy in front of the fake Messages API, on an in-memory store per test."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import ServeConfig
from abridged.application.service import Sessions
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served

TOKENS = {"token-of-tenant-a-0123": "a", "token-of-tenant-b-0123": "b"}


@pytest.fixture
def store() -> Sessions:
    return bootstrap()


@pytest.fixture
def proxy(fake_anthropic: FakeAnthropic, store: Sessions) -> Iterator[str]:
    """The proxy's base URL, forwarding to the fake API."""
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, upstream_timeout=2.0)
    with served(config, store) as url:
        yield url


@pytest.fixture
def secured(fake_anthropic: FakeAnthropic, store: Sessions) -> Iterator[str]:
    """A proxy with two tenants' tokens."""
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, tokens=TOKENS)
    with served(config, store) as url:
        yield url


@pytest.fixture
def client(proxy: str) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(api_key=TEST_API_KEY, base_url=proxy, max_retries=0) as sdk:
        yield sdk
