"""The examples run as a user would run them: `python examples/chat_host.py`, on the real
anthropic SDK, pointed at the local fake Messages API server by the SDK's own environment
variables (a base URL and a dummy key)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from abridged.adapters.bootstrap import bootstrap
from tests.support import fake_anthropic as api
from tests.support.fake_anthropic import COUNT_TOKENS_PATH, MESSAGES_PATH, FakeAnthropic

ROOT = Path(__file__).resolve().parents[2]


def run_example(
    fake: FakeAnthropic, args: list[str], stdin: str
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        # This checkout's package, as the test run imports it.
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / "chat_host.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


def test_the_chat_host_recovers_from_an_overflow_and_keeps_talking(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    # The provider's window is smaller than the one the host configured: only the provider's
    # "prompt is too long" can tell, and the host recovers through report_overflow.
    fake_anthropic.context_window = 4_000
    db = tmp_path / "chat.sqlite3"
    prompts = [f"Question {i}: " + "tell me about the parser module " * 60 for i in range(16)]
    stdin = "\n".join([*prompts, "/stats", "/sessions", "/quit", "never read"]) + "\n"

    done = run_example(
        fake_anthropic,
        ["--db", str(db), "--window", "20000", "--max-output-tokens", "1000", "--user", "ada"],
        stdin,
    )

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "[overflow]" in done.stderr
    assert "[compaction_completed]" in done.stderr
    assert fake_anthropic.violations == []
    sent = fake_anthropic.requests_to(MESSAGES_PATH)
    assert len(sent) > len(prompts)  # every prompt answered, one after a rejection
    assert all(r.api_key == "sk-ant-dummy" for r in sent)
    assert fake_anthropic.reply_text.split()[0] in done.stdout
    app = bootstrap(db)
    (listed,) = app.list_sessions(metadata={"user": "ada"}, tags=["example"]).sessions
    stats = app.stats(listed.id)
    assert stats.requests == len(prompts)
    assert stats.compactions_by_trigger.get("overflow", 0) >= 1
    assert app.session(listed.id).provider_window == 4_000
    assert str(listed.id) in done.stdout  # /sessions
    assert f"{len(prompts)} requests" in done.stdout  # /stats


def test_near_the_limit_the_chat_host_asks_the_provider_to_count(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    prompts = [f"Question {i}: " + "explain the export code " * 60 for i in range(10)]
    stdin = "\n".join(prompts) + "\n"

    done = run_example(
        fake_anthropic, ["--db", str(tmp_path / "c.sqlite3"), "--window", "6000"], stdin
    )

    assert done.returncode == 0, done.stderr
    assert fake_anthropic.requests_to(COUNT_TOKENS_PATH)
    assert fake_anthropic.violations == []


def test_after_a_provider_error_the_chat_host_goes_on_with_retry(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(api.authentication_error())
    stdin = "Hello\nStill there?\n/retry\nThanks\n"

    done = run_example(fake_anthropic, ["--db", str(tmp_path / "c.sqlite3")], stdin)

    assert done.returncode == 0, done.stderr
    assert "invalid x-api-key" in done.stderr
    assert "two user messages in a row" in done.stderr  # "Still there?" waits for /retry
    assert len(fake_anthropic.requests_to(MESSAGES_PATH)) == 3
    assert done.stdout.count(fake_anthropic.reply_text.split()[0]) == 2
