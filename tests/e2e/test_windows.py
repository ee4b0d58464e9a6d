"""Windows nobody measured before the tenth outside check (docs/evaluation.md, "A tenth
outside check: windows from 8k to 1M"): a session longer than 200,000 tokens at a 200k
window, and a model switch from a 200k model to a 32k one and back, every request valid,
recounted, within the budget of the window in force, and the audit clean."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.cli import main
from abridged.adapters.transcripts import load_transcript
from abridged.application.auditing import audit_session
from abridged.domain.errors import InvalidSettingsError
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from tests.e2e.test_replay_transcripts import COUNTER, Recounter
from tests.support.anthropic_rules import assert_valid_request
from tests.support.generated_sessions import write_records
from tests.support.window_sessions import long_records, record_tokens

pytestmark = pytest.mark.xdist_group("simulate")

WINDOWS = {"big-model": 200_000, "small-model": 32_000, "tiny-model": 8_000}


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    made = long_records(1001, 220_000)
    assert sum(record_tokens(r) for r in made) > 200_000
    return made


def test_a_session_past_200k_tokens_keeps_every_promise_at_200k(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = write_records(records, tmp_path / "long.jsonl")
    options = ["--window", "200000", "--references", "langchain", "--json"]
    result = CliRunner().invoke(main, ["simulate", str(path), *options])
    assert result.exit_code == 0, result.output
    ours, reference = json.loads(result.stdout)["outcomes"]
    assert ours["strategy"] == "abridged"
    assert ours["compactions"] >= 1
    assert ours["repeated_compactions"] == 0
    assert ours["not_sent"] == 0
    assert ours["short_tails"] == 0
    assert ours["recent_depth_min"] >= 2
    assert ours["peak_tokens"] <= 200_000 - 8_192
    below = {
        kind
        for kind, share in reference["facts_final_by_kind"].items()
        if ours["facts_final_by_kind"][kind] < share
    }
    assert below == set()


def test_a_switch_to_a_32k_model_and_back_keeps_every_request_within_its_window(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    transcript = load_transcript(write_records(records, tmp_path / "long.jsonl"))
    app = bootstrap(counter=COUNTER, model_windows=WINDOWS)
    try:
        session_id = app.start_session(
            model="big-model", max_output_tokens=8_192, tools=transcript.tools
        )
        messages = list(transcript.messages)
        prompts = [k for k, m in enumerate(messages) if m.is_user_prompt]
        down, up = prompts[len(prompts) // 2], prompts[3 * len(prompts) // 4]
        recounter = Recounter()
        problems: list[str] = []
        largest_before_switch = 0
        for k, message in enumerate(messages):
            if k == down:
                assert app.reconfigure(session_id, model="small-model")[0] == "ModelChanged"
            elif k == up:
                assert app.reconfigure(session_id, model="big-model")[0] == "ModelChanged"
            if message.role is not Role.ASSISTANT:
                app.append_message(session_id, message)
                continue
            prepared = app.prepare_request(session_id)
            context = prepared.context
            budget = app.session(session_id).limits.budget
            if k < down:
                largest_before_switch = max(largest_before_switch, context.estimate)
            body = render_request(context, model=prepared.model, max_tokens=prepared.max_tokens)
            try:
                assert_valid_request(body)
                assert recounter.body(body) == context.raw_estimate, "estimate is not the recount"
                assert context.estimate <= budget, f"{context.estimate} over {budget}"
                assert budget == WINDOWS[prepared.model] - 8_192
            except AssertionError as error:
                problems.append(f"message {k}: {error}")
            app.record_reply(session_id, message)
        assert problems == []
        # The 32k model took over a context larger than its budget: it was compacted to fit.
        assert largest_before_switch > 32_000 - 8_192
        history = app.history(session_id)
        switched = next(v for v, e in enumerate(history) if isinstance(e, Session.ModelChanged))
        assert any(isinstance(e, Session.CompactionCompleted) for e in history[switched:])
        audited = audit_session(app, session_id)
        assert audited.mismatches == ()
        assert audited.chain is not None
        assert audited.chain.ok
        assert app.session(session_id).limits.window == 200_000
    finally:
        app.close()


def test_a_switch_to_a_window_below_the_output_reservation_is_refused_and_changes_nothing() -> None:
    app = bootstrap(counter=COUNTER, model_windows=WINDOWS)
    try:
        session_id = app.start_session(model="big-model", max_output_tokens=8_192)
        app.append_message(session_id, Message.user("Hello."))
        with pytest.raises(InvalidSettingsError, match="reserved output"):
            app.reconfigure(session_id, model="tiny-model")
        assert app.session(session_id).limits.window == 200_000
        assert app.reconfigure(session_id, model="tiny-model", max_output_tokens=2_000)
        assert app.prepare_request(session_id).max_tokens == 2_000
    finally:
        app.close()
