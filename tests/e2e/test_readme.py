"""README.md's Python snippets run as written, in order, in one namespace, as a reader would
paste them: in the installed wheel's interpreter, against the local fake Messages API through
the real anthropic SDK, with `anthropic_client` the one name the README says the reader
provides. The replies take the paths the snippets handle: a "prompt is too long" answer
first, then a reply that calls a tool."""

from __future__ import annotations

from pathlib import Path

from abridged.adapters.bootstrap import bootstrap
from tests.support.docs import ROOT, blocks, python_job, run_python
from tests.support.fake_anthropic import MESSAGES_PATH, FakeAnthropic, message, prompt_too_long

README = ROOT / "README.md"


def test_the_readme_has_the_snippets_this_test_runs() -> None:
    found = [b.code for b in blocks(README) if b.info == "python"]
    assert len(found) >= 3
    assert "report_overflow" in found[0]
    assert "complete(" in found[1]
    assert "list_sessions" in found[2]


def test_every_readme_snippet_runs_in_order(
    fake_anthropic: FakeAnthropic, installed: Path, tmp_path: Path
) -> None:
    tool_call = {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "run_command",
        "input": {"command": "pytest -q"},
    }
    fake_anthropic.enqueue(prompt_too_long(), message([tool_call], stop_reason="tool_use"))
    (tmp_path / "page").mkdir()
    job = python_job("README.md", blocks(README), tmp_path / "page")

    result = run_python([job], installed, fake_anthropic, tmp_path)["README.md"]

    assert result["ok"], result["error"]
    assert fake_anthropic.violations == []
    sent = fake_anthropic.requests_to(MESSAGES_PATH)
    assert len(sent) == 3  # refused, resent, complete()
    answered = sent[2].body["messages"][-1]["content"]
    assert answered[0] == {"type": "tool_result", "tool_use_id": "toolu_01", "content": "3 failed"}
    assert fake_anthropic.reply_text.split()[0] in result["stdout"]  # the streamed reply
    store = bootstrap(tmp_path / "page" / "sessions.sqlite3")
    events = [type(e).__name__ for e in store.history(result["session_id"])]
    assert events.count("MessageAppended") == 4
    assert "OverflowReported" in events
    assert events[-1] == "Deleted"
