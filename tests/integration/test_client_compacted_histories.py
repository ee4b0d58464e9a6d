"""Histories the API's own compaction shaped, as a client sends them back: the on-demand
compaction's block first in `messages`, in the assistant message it came in, in place of what
it summarizes (build-with-claude/compaction-on-demand), and a threshold compaction's reply
whose block leads the reply's own thinking (…/compaction-thinking-blocks). Each is accepted
(library, `replay`, `simulate`, the proxy), sent as it came, and what the block says is kept
when abridged compacts it later."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from abridged import bootstrap, render_request
from abridged.adapters.cli import main
from abridged.adapters.http import ServeConfig
from abridged.application.service import Sessions
from abridged.domain.errors import RoleOrderError
from tests.support.anthropic_rules import assert_valid_request
from tests.support.api_features import sign
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served

SUMMARY = (
    "The user asked to fix src/app/parser.py; the run failed with "
    "ValueError: unexpected token at line 12, then the fix was started."
)
COMPACTION = {"type": "compaction", "content": SUMMARY, "signature": sign(SUMMARY)}
"""The block as the API returns it (signed as the fake API verifies)."""
COMPACTED: list[dict[str, Any]] = [
    {"role": "assistant", "content": [COMPACTION]},
    {"role": "user", "content": "Carry on with the fix."},
]


def body(sessions: Sessions, session_id: Any) -> dict[str, Any]:
    prepared = sessions.prepare_request(session_id)
    rendered = render_request(
        prepared.context, model=prepared.model, max_tokens=prepared.max_tokens
    )
    assert_valid_request(rendered)
    return rendered


def test_a_session_starts_with_the_apis_compaction_message_sent_first_as_it_came() -> None:
    with bootstrap(":memory:") as sessions:
        session_id = sessions.start_session(
            model="claude-sonnet-4-6", max_output_tokens=1_024, system="s", messages=COMPACTED
        )
        messages = body(sessions, session_id)["messages"]
    assert messages[0] == {"role": "assistant", "content": [COMPACTION]}
    assert [m["role"] for m in messages] == ["assistant", "user"]


def test_any_other_history_starting_with_a_reply_is_still_refused() -> None:
    with bootstrap(":memory:") as sessions, pytest.raises(RoleOrderError, match="compaction"):
        sessions.start_session(
            model="claude-sonnet-4-6",
            max_output_tokens=1_024,
            messages=[
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "Hi"},
            ],
        )


def test_a_reply_whose_compaction_block_leads_its_thinking_is_recorded_and_sent_back() -> None:
    thinking = {"type": "thinking", "thinking": "Where was I?", "signature": "c2ln"}
    reply = {
        "role": "assistant",
        "content": [COMPACTION, thinking, {"type": "text", "text": "Done."}],
    }
    with bootstrap(":memory:") as sessions:
        session_id = sessions.start_session(model="claude-fable-5", max_output_tokens=1_024)
        sessions.append_message(session_id, {"role": "user", "content": "Go on."})
        sessions.record_reply(session_id, reply)
        sessions.append_message(session_id, {"role": "user", "content": "Next step."})
        messages = body(sessions, session_id)["messages"]
    # The API drops what came before its block: the reply leads, as it came.
    assert messages[0] == reply


def test_what_the_block_says_is_kept_when_abridged_compacts_it_later() -> None:
    with bootstrap(":memory:") as sessions:
        session_id = sessions.start_session(
            model="claude-sonnet-4-6",
            context_window=8_000,
            max_output_tokens=1_024,
            system="s",
            messages=COMPACTED,
        )
        for turn in range(30):
            body(sessions, session_id)
            sessions.record_reply(
                session_id, {"role": "assistant", "content": f"Step {turn}. " + "word " * 200}
            )
            sessions.append_message(
                session_id, {"role": "user", "content": f"Next {turn}. " + "more " * 100}
            )
        final = json.dumps(body(sessions, session_id))
        assert sessions.compactions(session_id)
    assert COMPACTION["signature"] not in final  # compacted away by abridged
    assert "src/app/parser.py" in final
    assert "ValueError: unexpected token at line 12" in final


def transcript(tmp_path: Path) -> Path:
    lines = [*COMPACTED, {"role": "assistant", "content": "On it."}]
    path = tmp_path / "compacted.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_replay_and_simulate_read_a_transcript_that_starts_with_the_block(
    tmp_path: Path,
) -> None:
    path = transcript(tmp_path)
    runner = CliRunner()
    replayed = runner.invoke(main, ["replay", str(path), "--db", str(tmp_path / "r.sqlite3")])
    assert replayed.exit_code == 0, replayed.output
    assert "3 messages, 1 requests" in replayed.output  # the block kept, not skipped
    simulated = runner.invoke(
        main, ["simulate", str(path), "--window", "16000", "--references", "langchain", "--json"]
    )
    assert simulated.exit_code == 0, simulated.output
    outcomes = json.loads(simulated.stdout)["outcomes"]
    assert {o["strategy"] for o in outcomes} == {"abridged", "langchain"}
    assert all(o["requests"] == 1 and o["not_sent"] == 0 for o in outcomes)


def test_the_proxy_forwards_a_client_compacted_history_on_a_branch(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    headers = {"x-api-key": TEST_API_KEY, "x-abridged-session": "compacted-by-the-client"}
    first = [{"role": "user", "content": "Fix src/app/parser.py."}]

    def post(messages: list[dict[str, Any]]) -> httpx2.Response:
        request = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": messages}
        return httpx2.post(f"{url}/v1/messages", json=request, headers=headers, timeout=30)

    with served(
        ServeConfig(db=str(tmp_path / "p.sqlite3"), upstream=fake_anthropic.base_url)
    ) as url:
        assert post(first).status_code == 200
        answer = post(COMPACTED)  # the client compacted its history with the API
    assert answer.status_code == 200, answer.text
    sent = fake_anthropic.requests_to()[-1].body["messages"]
    assert sent[0] == {"role": "assistant", "content": [COMPACTION]}
    assert not fake_anthropic.violations
