"""Today's models count more: Claude Opus 4.7 and later take up to about 1.35 times the tokens
of earlier models for the same text. A session whose counter approximates (cl100k) starts its
calibration at its model's ratio, so its first requests fit before any reply reports the
model's own count; replies then move it towards what the model counts, a model switch scales
what was learnt, and sessions stored before replay as they ran."""

from __future__ import annotations

import math
from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.service import Sessions
from abridged.domain.capabilities import (
    NEW_TOKENIZER_RATIO,
    ModelCapabilities,
    capabilities_for,
    check_model_capabilities,
)
from abridged.domain.errors import InvalidSettingsError
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.usage import Usage
from tests.support.builders import words
from tests.support.fakes import FakeTokenCounter

COUNTER = TiktokenCounter()


def service(**ports: Any) -> Sessions:
    return Sessions(
        counter=ports.pop("counter", COUNTER),
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        **ports,
    )


def start(app: Sessions, model: str) -> UUID:
    return app.start_session(model=model, context_window=200_000, max_output_tokens=8_000)


@pytest.mark.parametrize(
    ("model", "ratio"),
    [
        ("claude-opus-4-8", NEW_TOKENIZER_RATIO),
        ("claude-opus-4-7", NEW_TOKENIZER_RATIO),
        ("claude-fable-5-1", NEW_TOKENIZER_RATIO),
        ("claude-sonnet-4-6", 1.0),
        ("claude-sonnet-4-5", 1.0),
        ("claude-opus-6", NEW_TOKENIZER_RATIO),  # a Claude model the table does not know yet
        ("anthropic.claude-opus-4-8-v1:0", NEW_TOKENIZER_RATIO),  # a provider's name for one
        ("openai/openrouter-llama-4-maverick", 1.0),  # another vendor's: its tokenizer unknown
    ],
)
def test_a_session_starts_at_its_models_tokenizer_ratio(model: str, ratio: float) -> None:
    app = service()
    session_id = start(app, model)
    app.append_message(session_id, Message.user(f"Plan the release. {words(200)}"))

    prepared = app.prepare_request(session_id)

    assert app.session(session_id).calibration == ratio
    assert prepared.context.estimate == math.ceil(prepared.context.raw_estimate * ratio)


def test_a_counter_exact_for_the_model_starts_at_one() -> None:
    # A counter that says it does not approximate (the provider's own count, a test's words).
    app = service(counter=FakeTokenCounter())

    assert app.session(start(app, "claude-opus-4-8")).calibration == 1.0


def test_replies_move_the_calibration_to_what_the_model_counts() -> None:
    app = service()
    session_id = start(app, "claude-opus-4-8")
    app.append_message(session_id, Message.user("Which tests fail?"))
    raw = app.prepare_request(session_id).context.raw_estimate

    # This model counted the request at about 1.1 times the counter's count: about halfway.
    app.record_reply(session_id, Message.assistant("None."), Usage(input_tokens=round(raw * 1.1)))

    assert 1.1 < app.session(session_id).calibration < (1.35 + 1.1) / 2 + 0.01


def test_a_model_switch_scales_what_was_learnt_by_the_tokenizers_ratio() -> None:
    app = service()
    session_id = start(app, "claude-sonnet-4-6")
    app.append_message(session_id, Message.user("Which tests fail?"))
    raw = app.prepare_request(session_id).context.raw_estimate
    app.record_reply(session_id, Message.assistant("None."), Usage(input_tokens=round(raw * 1.2)))
    learnt = app.session(session_id).calibration

    app.reconfigure(session_id, model="claude-opus-4-8")
    moved = app.session(session_id).calibration
    app.reconfigure(session_id, model="claude-sonnet-4-6")

    assert 1.0 < learnt < 1.2
    assert moved == pytest.approx(learnt * NEW_TOKENIZER_RATIO, abs=1e-5)
    assert app.session(session_id).calibration == pytest.approx(learnt, abs=1e-5)
    changes = [e for e in app.history(session_id) if isinstance(e, Session.ModelChanged)]
    assert [e.tokenizer_ratio for e in changes] == [NEW_TOKENIZER_RATIO, 1.0]


def test_sessions_stored_before_replay_at_the_calibration_they_ran_with() -> None:
    started: dict[str, Any] = {"model": "claude-opus-4-8"}
    Session.Started.upcast_v4_v5(started)
    changed: dict[str, Any] = {"model": "claude-opus-4-8"}
    Session.ModelChanged.upcast_v2_v3(changed)

    assert started["tokenizer_ratio"] == 1.0
    assert changed["tokenizer_ratio"] is None  # the calibration is left as it was


def test_a_replayed_session_has_the_live_calibration() -> None:
    app = service()
    session_id = start(app, "claude-opus-4-8")
    app.reconfigure(session_id, model="claude-sonnet-4-5")
    live = app.session(session_id).calibration

    replayed: Session = app.repository.get(session_id)

    assert live == pytest.approx(1.0)
    assert replayed.calibration == live
    assert replayed.tokenizer_ratio == 1.0


def test_a_host_row_sets_the_ratio_and_a_bad_one_is_a_typed_error() -> None:
    rows = check_model_capabilities({"acme-claude": {"tokenizer_ratio": 1.2}})
    app = service(model_capabilities=rows)

    assert isinstance(rows["acme-claude"], ModelCapabilities)
    assert app.session(start(app, "acme-claude-2")).calibration == 1.2
    assert capabilities_for("acme-claude").tokenizer_ratio == NEW_TOKENIZER_RATIO
    for bad in (True, "1.3", 0.2, 9):
        with pytest.raises(InvalidSettingsError, match="tokenizer_ratio"):
            check_model_capabilities({"acme-claude": {"tokenizer_ratio": bad}})
