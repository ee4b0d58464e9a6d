"""Every Python snippet of README.md runs as written, in order, in one namespace, as a reader
would paste them: against the local fake Messages API through the real anthropic SDK, with
`anthropic_client` the one name the README says the reader provides."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from abridged.adapters.bootstrap import bootstrap
from tests.support.fake_anthropic import MESSAGES_PATH, FakeAnthropic, prompt_too_long

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def snippets() -> list[str]:
    return FENCE.findall(README.read_text(encoding="utf-8"))


def test_the_readme_has_the_snippets_this_test_runs() -> None:
    found = snippets()
    assert len(found) >= 3
    assert "report_overflow" in found[0]
    assert "complete(" in found[1]
    assert "list_sessions" in found[2]


def test_every_readme_snippet_runs_in_order(
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The first request is refused as too long, so the snippet's recovery path runs too.
    fake_anthropic.enqueue(prompt_too_long())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-dummy")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    namespace: dict[str, Any] = {"anthropic_client": fake_anthropic.client()}

    for number, code in enumerate(snippets(), start=1):
        exec(compile(code, f"README.md snippet {number}", "exec"), namespace)

    assert fake_anthropic.violations == []
    assert len(fake_anthropic.requests_to(MESSAGES_PATH)) == 3  # refused, resent, complete()
    printed = capsys.readouterr().out
    assert fake_anthropic.reply_text.split()[0] in printed  # the streamed reply
    session_id = namespace["session_id"]
    store = bootstrap(tmp_path / "sessions.sqlite3")
    events = [type(e).__name__ for e in store.history(session_id)]
    assert events.count("MessageAppended") == 4
    assert "OverflowReported" in events
    assert events[-1] == "Deleted"
