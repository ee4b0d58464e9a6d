"""The client's key, and an operator's credentials, where they must never be: the store,
the logs at any level, the metrics, the sessions API's history and audit, the startup line."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from abridged.adapters.http import ServeConfig
from abridged.application.service import Sessions
from tests.http.conftest import TOKENS
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.raw_http import raw_request
from tests.support.serve import served

KEY = "sk-ant-api03-SECRET-never-stored-0123456789"
TOKEN_A = next(iter(TOKENS))
BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 5,
    "messages": [{"role": "user", "content": "Hi"}],
}


def test_the_clients_key_is_never_kept_or_logged(
    fake_anthropic: FakeAnthropic, store: Sessions, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, tokens=TOKENS)
    # The upstream echoes the key in its errors, an overflow among them.
    fake_anthropic.enqueue(
        fake.error(400, "invalid_request_error", f"prompt is too long: 9 tokens > 8 maximum {KEY}"),
        fake.error(401, "authentication_error", f"invalid x-api-key {KEY}"),
        fake.dropped_stream(),
    )
    content = json.dumps(BODY).encode()
    sent: list[list[tuple[bytes, bytes]]] = [
        [(b"x-api-key", KEY.encode())],
        [(b"X-Api-Key", KEY.encode()), (b"authorization", f"Bearer {KEY}".encode())],
        [(b"x-api-key", KEY.encode()), (b"x-api-key", KEY.encode())],
        [(b"x-api-key", KEY.encode() + b"\xe9")],  # malformed: refused, not echoed
    ]
    with served(config, store) as url:
        for extra in sent:
            headers = [
                (b"content-type", b"application/json"),
                (b"x-abridged-token", TOKEN_A.encode()),
            ]
            raw_request(url, "POST", "/v1/messages", headers + extra, content)
        streamed = json.dumps({**BODY, "stream": True}).encode()
        raw_request(url, "POST", "/v1/messages", headers + sent[0], streamed)
        metrics = httpx2.get(f"{url}/metrics").text
        api = httpx2.Client(base_url=url, headers={"authorization": f"Bearer {TOKEN_A}"})
        (info,) = api.get("/v1/sessions").json()["sessions"]
        outputs: list[Any] = [
            api.get(f"/v1/sessions/{info['id']}/{view}").text
            for view in ("history", "audit", "stats", "compactions")
        ]
        api.close()

    assert fake_anthropic.requests_to()[0].api_key == KEY  # it went where it belongs
    for session in store.list_sessions().sessions:
        outputs += [repr(store.history(session.id)), repr(store.compactions(session.id))]
    outputs += [metrics, caplog.text]
    outputs += [str(r.exc_info) for r in caplog.records if r.exc_info]
    assert not [text[:200] for text in outputs if "SECRET" in text]


def test_the_startup_line_hides_the_upstreams_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from abridged.adapters.http.config import CONFIG_VARIABLE

    monkeypatch.setenv(CONFIG_VARIABLE, "")  # the command sets it for its workers
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    upstream = "https://proxy-user:SECRET-gateway-password@gateway.internal:8443/anthropic"
    result = CliRunner().invoke(main, ["serve", "--db", ":memory:", "--upstream", upstream])
    assert result.exit_code == 0, result.output
    assert "gateway.internal:8443/anthropic" in result.output
    assert "SECRET" not in result.output


@pytest.mark.parametrize(
    "upstream",
    ["ftp://SECRET@files.internal/", "api.anthropic.com", "https://", "http://[::1"],
)
def test_an_upstream_that_is_not_an_http_url_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, upstream: str
) -> None:
    # Before: the proxy started, and every request failed with 502.
    import uvicorn

    from abridged.adapters.http.config import CONFIG_VARIABLE

    started: list[object] = []
    monkeypatch.setenv(CONFIG_VARIABLE, "")
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: started.append(args))
    result = CliRunner().invoke(main, ["serve", "--db", ":memory:", "--upstream", upstream])
    assert result.exit_code == 2, result.output
    assert "--upstream" in result.output
    assert "http:// or https:// URL with a host" in result.output
    assert "SECRET" not in result.output
    assert started == []
    with pytest.raises(ValueError, match="URL with a host"):
        ServeConfig(upstream=upstream)


def test_a_failing_store_is_logged_not_described_to_clients(
    secured: str, store: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    from abridged.domain.errors import StoreError

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise StoreError(
            'the session store failed: connection to server at "db.internal" (10.1.2.3), '
            'port 5432 failed: FATAL: password authentication failed for user "abridged"'
        )

    monkeypatch.setattr(store, "list_sessions", failing)
    health = httpx2.get(f"{secured}/healthz")
    listed = httpx2.get(f"{secured}/v1/sessions", headers={"authorization": f"Bearer {TOKEN_A}"})
    assert (health.status_code, listed.status_code) == (503, 503)
    for answer in (health, listed):
        assert "db.internal" not in answer.text
        assert "10.1.2.3" not in answer.text
