"""A session that moves to a model which cannot read the previous model's thinking: those
blocks leave the view at the switch (the API would drop them unsaid), recorded with both
models named, and the audit re-derives it; a model that reads them keeps them."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from abridged.application.auditing import audit_events, audit_session
from abridged.application.service import Sessions
from abridged.domain.messages import Message, RedactedThinkingBlock, ThinkingBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, thinking_exchange, words

FABLE = "claude-fable-5-1"
OPUS = "claude-opus-5-5"  # does not read Fable's thinking
OPUS_5 = "claude-opus-5"  # Fable reads its thinking


def start_with_thinking(app: Sessions, model: str) -> UUID:
    """A session whose context shows two thinking blocks, awaiting the next reply."""
    session_id = app.start_session(
        model=model,
        context_window=100_000,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    app.append_message(session_id, Message.user("Fix the parser."))
    for thought in ("Read the parser first.", "Then its tests."):
        call, result = thinking_exchange(words(20), thought=thought)
        app.record_reply(session_id, call)
        app.append_message(session_id, result)
    app.record_reply(session_id, Message.assistant("Fixed."))
    app.append_message(session_id, Message.user("Now the lexer."))
    return session_id


def thinking_shown(app: Sessions, session_id: UUID) -> list[Any]:
    context = app.prepare_request(session_id).context
    return [
        b
        for m in context.messages
        for b in m.content
        if isinstance(b, ThinkingBlock | RedactedThinkingBlock)
    ]


def downgrades(app: Sessions, session_id: UUID) -> list[Session.ReasoningDowngraded]:
    return [e for e in app.history(session_id) if isinstance(e, Session.ReasoningDowngraded)]


def test_thinking_the_new_model_cannot_read_leaves_at_the_switch(app: Sessions) -> None:
    session_id = start_with_thinking(app, FABLE)
    assert len(thinking_shown(app, session_id)) == 2

    app.reconfigure(session_id, model=OPUS)

    assert thinking_shown(app, session_id) == []
    (switch,) = downgrades(app, session_id)
    assert switch.reason.startswith(f"the model changed from {FABLE} to {OPUS}")
    assert len(switch.blocks) == 2
    assert audit_session(app, session_id).ok


def test_a_model_that_reads_the_thinking_keeps_it(app: Sessions) -> None:
    session_id = start_with_thinking(app, OPUS_5)

    app.reconfigure(session_id, model=FABLE)

    assert len(thinking_shown(app, session_id)) == 2
    assert downgrades(app, session_id) == []
    assert audit_session(app, session_id).ok


def test_the_hosts_rows_say_who_reads_whom(make_app: MakeApp) -> None:
    app = make_app(model_capabilities={"acme-reader": {"reads_thinking_of": [FABLE]}})
    session_id = start_with_thinking(app, FABLE)

    app.reconfigure(session_id, model="acme-reader-2")

    assert len(thinking_shown(app, session_id)) == 2
    assert audit_session(app, session_id).ok


def test_the_audit_names_unreadable_thinking_left_in_view(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A service that leaves the thinking in view at the switch (as abridged did before).
    monkeypatch.setattr(app.compactor, "drop_unreadable", lambda session, producer: None)
    session_id = start_with_thinking(app, FABLE)
    app.reconfigure(session_id, model=OPUS)
    app.record_reply(session_id, Message.assistant("On it."))

    audit = audit_events(app.history(session_id))

    (finding,) = audit.mismatches
    assert finding.event == "MessageAppended"
    assert f"2 thinking block(s) of {FABLE} still shown to {OPUS}" in finding.detail


def test_a_bound_model_is_not_sent_thinking_written_before_the_prefix_changed(
    app: Sessions,
) -> None:
    """Opus 5 keeps its recent thinking through a compaction (it does not bind thinking to
    its prefix); Fable 5 reads that thinking but checks each block against the prefix it was
    written under, which the compaction changed: at the switch those blocks go too."""
    session_id = start_with_thinking(app, OPUS_5)
    app.record_reply(session_id, Message.assistant("The lexer next. " + words(200)))
    app.append_message(session_id, Message.user("And its tests. " + words(200)))
    call, result = thinking_exchange(words(20), thought="Start with the lexer's tests.")
    app.record_reply(session_id, call)  # an open tool loop, led by thinking
    app.append_message(session_id, result)
    app.compact(session_id)
    assert thinking_shown(app, session_id), "Opus 5 kept its loop's thinking through it"

    app.reconfigure(session_id, model="claude-fable-5")

    assert thinking_shown(app, session_id) == []
    assert any("prefix changed" in e.reason for e in downgrades(app, session_id))
    app.record_reply(session_id, Message.assistant("On it."))
    assert audit_session(app, session_id).ok


def test_a_bound_model_keeps_the_thinking_written_under_the_prefix_it_is_sent(
    app: Sessions,
) -> None:
    session_id = start_with_thinking(app, OPUS_5)

    app.reconfigure(session_id, model="claude-fable-5")  # nothing changed the prefix

    assert len(thinking_shown(app, session_id)) == 2
    assert downgrades(app, session_id) == []
    assert audit_session(app, session_id).ok


def test_a_downgrade_on_a_bound_model_takes_every_block_whose_prefix_it_changes(
    app: Sessions,
) -> None:
    """A resumed session carries its parent's thinking, written under the parent's prefix,
    and adds its own. At a switch to another model that binds thinking, the carried blocks
    go; that changes the prefix of the blocks after them, so those go too, or the next
    request would send them under a prefix they were not written under."""
    parent = start_with_thinking(app, OPUS)
    app.record_reply(parent, Message.assistant("The lexer next."))
    session_id = app.resume_session(parent, model=OPUS)
    app.append_message(session_id, Message.user("Go on with the lexer."))
    call, result = thinking_exchange(words(20), thought="The lexer's tokens first.")
    app.record_reply(session_id, call)
    app.append_message(session_id, result)
    app.record_reply(session_id, Message.assistant("Tokens done."))
    app.append_message(session_id, Message.user("Now its tests."))
    assert len(thinking_shown(app, session_id)) == 3

    app.reconfigure(session_id, model=FABLE)

    assert thinking_shown(app, session_id) == []
    app.record_reply(session_id, Message.assistant("On it."))
    assert audit_session(app, session_id).ok
