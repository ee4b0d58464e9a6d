"""The client's key, and an operator's credentials, where they must never be: the store,
the logs at any level, the metrics, the sessions API's history and audit, the startup line."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
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
ROOT = Path(__file__).resolve().parents[2]
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


@pytest.mark.parametrize("rich", ["importable", "absent"])
def test_a_logged_failure_shows_no_frames_local_variables(rich: str, tmp_path: Path) -> None:
    # What `abridged serve` logs when the store fails under a request: the traceback of a
    # frame holding the request's headers and body. Rendered with rich's tracebacks (the
    # console renderer's default where rich is importable), each frame's locals were
    # printed, the client's key and its conversation among them.
    script = textwrap.dedent(
        f"""
        import sys
        if {rich == "absent"!r}:
            sys.modules["rich"] = None  # as on a machine without it
        import logging
        import os
        import structlog
        from abridged.adapters.cli.common import configure_logging

        configure_logging(False)  # what every command, `serve` among them, runs first

        def messages(headers, body):
            key = headers["x-api-key"]
            raise RuntimeError("the store failed")

        try:
            # Neither is in the source, which a traceback quotes: only in the frames' values.
            messages({{"x-api-key": os.environ["KEY"]}}, {{"messages": [os.environ["ASKED"]]}})
        except RuntimeError:
            logging.getLogger("abridged.adapters.http.proxy").exception("a request failed")
            structlog.get_logger().exception("a command failed")
        print("rich" in sys.modules and sys.modules["rich"] is not None)
        """
    )
    (tmp_path / "failing.py").write_text(script)  # a file: the traceback quotes its lines
    done = subprocess.run(
        [sys.executable, str(tmp_path / "failing.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,  # this checkout's package, as the test run imports it
        env={**os.environ, "PYTHONPATH": str(ROOT), "KEY": KEY, "ASKED": "my private question"},
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    if rich == "absent":
        assert done.stdout.strip() == "False"
    assert done.stderr.count("RuntimeError: the store failed") == 2  # the traceback is there
    assert done.stderr.count('raise RuntimeError("the store failed")') == 2  # and its lines
    assert "SECRET" not in done.stderr
    assert "my private question" not in done.stderr
