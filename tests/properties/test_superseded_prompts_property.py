"""A host that gives its system prompt again at turns of a generated agent session (tool calls,
parallel calls, thinking, huge outputs), on models that take `role: "system"` messages, one of
which binds thinking to its prefix: every request is valid and within the budget, shows the
prompt in effect, never an earlier one a compaction dropped, and the session never stops
taking messages because old prompts filled its window; the audit re-derives every decision."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import TOOLS, conversations
from tests.support.checks import check_request
from tests.support.fakes import FakeSummarizer
from tests.unit.test_superseded_prompts import instructions

from .test_system_messages_property import COUNTER

PROMPT = "You are an agent that reviews code. " + "Keep to the style guide and cite files. " * 12
"""About 120 tokens (160 as a current model counts): a twentieth of the smallest window
generated, so that the prompts one exchange may hold beside its own messages still fit."""


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    messages=conversations(max_turns=8),
    renewed=st.lists(st.integers(0, 3), min_size=60, max_size=60),
    model=st.sampled_from(["claude-opus-4-8", "claude-fable-5-1"]),
    window=st.integers(3_000, 6_000),
)
def test_prompts_given_again_never_pile_up(
    messages: list[Message], renewed: list[int], model: str, window: int
) -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=300,
        system="You are an agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    if messages[-1].role is Role.ASSISTANT:
        messages.append(Message.user("What next?"))
    picks, versions = iter(renewed), itertools.count()
    latest: str | None = None
    for message in messages:
        if message.role is Role.ASSISTANT:
            body = check_request(
                app.prepare_request(session_id), COUNTER, app.session(session_id).calibration
            )
            if latest is not None:
                shown = instructions(body)
                assert shown[-1].endswith(latest)  # the prompt in effect, given last
                assert len(shown) == len(set(shown))
            app.record_reply(session_id, message)
            continue
        if next(picks, 0):  # before three user messages in four, tool results included
            latest = f"{PROMPT}Version {next(versions)}."
            app.reconfigure(session_id, system=latest)
        app.append_message(session_id, message)
    dropped = sum(
        len(e.superseded_system or ())
        for e in app.history(session_id)
        if isinstance(e, Session.CompactionCompleted)
    )
    note(f"prompts a compaction dropped: {min(dropped, 3)}{'+' if dropped >= 3 else ''}")
    assert audit_session(app, session_id).ok
