"""Each reply records the model that wrote it, and a change of model drops exactly the
thinking whose writer the new model cannot read: a session that went A -> B -> C, where C
reads A's thinking but not B's, keeps A's blocks and loses B's at the second switch; the
audit re-derives it."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from abridged.application.auditing import audit_events, audit_session
from abridged.application.ports import ModelReply
from abridged.application.service import Sessions
from abridged.domain.messages import Message, RedactedThinkingBlock, ThinkingBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, thinking_exchange, words
from tests.support.fakes import FakeChatModel

A, B, C = "acme-alpha-1", "acme-beta-1", "acme-gamma-1"
ROWS = {
    "acme-alpha": {"prefix_bound_thinking": False},
    "acme-beta": {"prefix_bound_thinking": False, "reads_thinking_of": ["acme-alpha"]},
    "acme-gamma": {"prefix_bound_thinking": False, "reads_thinking_of": ["acme-alpha"]},
}


def thoughts_shown(app: Sessions, session_id: UUID) -> list[str]:
    context = app.prepare_request(session_id).context
    return [
        b.thinking if isinstance(b, ThinkingBlock) else "(redacted)"
        for m in context.messages
        for b in m.content
        if isinstance(b, ThinkingBlock | RedactedThinkingBlock)
    ]


def loop_step(app: Sessions, session_id: UUID, thought: str, **reply: Any) -> None:
    call, result = thinking_exchange(words(20), thought=thought)
    app.record_reply(session_id, call, **reply)
    app.append_message(session_id, result)


def a_to_b(app: Sessions) -> UUID:
    """A session whose tool loop shows two blocks A wrote and, after a switch, one B wrote."""
    session_id = app.start_session(
        model=A,
        context_window=100_000,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    app.append_message(session_id, Message.user("Fix the parser."))
    loop_step(app, session_id, "alpha reads the parser")
    loop_step(app, session_id, "alpha reads its tests")
    app.reconfigure(session_id, model=B)
    loop_step(app, session_id, "beta runs the tests")
    return session_id


def downgrades(app: Sessions, session_id: UUID) -> list[Session.ReasoningDowngraded]:
    return [e for e in app.history(session_id) if isinstance(e, Session.ReasoningDowngraded)]


def test_a_reply_records_the_model_that_wrote_it(make_app: MakeApp) -> None:
    app = make_app(model_capabilities=ROWS)
    session_id = a_to_b(app)
    app.record_reply(session_id, {**Message.assistant("Done.").to_wire(), "model": C})
    app.append_message(session_id, Message.user("Thanks."))
    app.record_reply(session_id, Message.assistant("Anything else?"), model=A)

    replies = [
        e.model
        for e in app.history(session_id)
        if isinstance(e, Session.MessageAppended) and e.message.role.value == "assistant"
    ]
    users = {
        e.model
        for e in app.history(session_id)
        if isinstance(e, Session.MessageAppended) and e.message.role.value == "user"
    }

    # The session's model by default; the reply's own `model`; the one the host names.
    assert replies == [A, A, B, C, A]
    assert users == {None}


def test_a_switch_drops_only_the_thinking_the_new_model_cannot_read(make_app: MakeApp) -> None:
    app = make_app(model_capabilities=ROWS)
    session_id = a_to_b(app)
    # B reads A's thinking: nothing left at the first switch.
    assert downgrades(app, session_id) == []

    app.reconfigure(session_id, model=C)

    assert thoughts_shown(app, session_id) == ["alpha reads the parser", "alpha reads its tests"]
    (switch,) = downgrades(app, session_id)
    assert [b.position for b in switch.blocks] == [5]
    assert switch.reason.startswith(f"the model changed from {B} to {C}, which does not read {B}'s")
    audit = audit_session(app, session_id)
    assert audit.ok, audit.mismatches


def test_a_model_reading_neither_drops_both_and_names_both(make_app: MakeApp) -> None:
    app = make_app(model_capabilities=ROWS)
    session_id = a_to_b(app)

    app.reconfigure(session_id, model="acme-delta-1")

    assert thoughts_shown(app, session_id) == []
    (switch,) = downgrades(app, session_id)
    assert f"which does not read {A}, {B}'s thinking" in switch.reason
    assert audit_session(app, session_id).ok


def test_the_audit_names_the_writer_of_thinking_left_in_view(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(model_capabilities=ROWS)
    # A service that leaves unreadable thinking in view at the switch.
    monkeypatch.setattr(app.compactor, "drop_unreadable", lambda session, producer: None)
    session_id = a_to_b(app)
    app.reconfigure(session_id, model=C)
    app.record_reply(session_id, Message.assistant("On it."))

    (finding,) = audit_events(app.history(session_id), app.model_capabilities).mismatches

    assert finding.event == "MessageAppended"
    assert f"1 thinking block(s) of {B} still shown to {C}" in finding.detail


def test_complete_records_the_model_the_provider_says_answered(make_app: MakeApp) -> None:
    # A provider may answer with a dated model id: the one it names is recorded.
    answered = ModelReply(Message.assistant("Done."), Usage(10, 1), model=f"{A}-20261101")
    app = make_app(model_capabilities=ROWS, chat_model=FakeChatModel([answered]))
    session_id = app.start_session(model=A, context_window=100_000, max_output_tokens=500)
    app.append_message(session_id, Message.user("Hi."))

    app.complete(session_id)

    (reply,) = [
        e
        for e in app.history(session_id)
        if isinstance(e, Session.MessageAppended) and e.usage is not None
    ]
    assert reply.model == f"{A}-20261101"
