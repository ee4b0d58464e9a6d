"""`Sessions.withdraw_turn`: the end of the conversation leaves the view, history keeps it.

The API refuses every request that still holds a turn its classifier refused
(`stop_reason: "refusal"`); chat hosts let people edit their last prompt or ask again; an
agent may give a tool's result again. Each case here is one of those.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import persistence_env
from abridged.application.async_service import AsyncSessions
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.errors import (
    InvalidArgumentError,
    SessionDeletedError,
    TurnNotWithdrawableError,
    UnknownSessionError,
)
from abridged.domain.guards import guards_holding
from abridged.domain.messages import Message, Role, ToolResultBlock, ToolUseBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import check_request, stored_version
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()


def service(db: Path | None = None) -> Sessions:
    env = persistence_env(db) if db else {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    return Sessions(counter=COUNTER, summarizer=FakeSummarizer(words(30, "fact")), env=env)


def start(app: Sessions, model: str = "claude-sonnet-4-5", window: int = 20_000) -> UUID:
    return app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=400,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )


def body(app: Sessions, session_id: UUID) -> dict[str, Any]:
    prepared = app.prepare_request(session_id)
    check_request(prepared, COUNTER)
    return render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)


def feed(app: Sessions, session_id: UUID, messages: Any) -> None:
    for message in messages:
        if message.role is Role.ASSISTANT:
            body(app, session_id)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)


def refusal(text: str = "I can") -> dict[str, Any]:
    """A reply the streaming classifier stopped, as the API returns it."""
    return {
        "id": "msg_refused",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "refusal",
        "stop_sequence": None,
        "stop_details": {"type": "refusal", "category": "cyber", "explanation": "Declined."},
        "usage": {"input_tokens": 120, "output_tokens": 2},
    }


def texts(request: dict[str, Any]) -> str:
    return str(request["messages"])


def test_a_refused_turn_is_withdrawn_and_the_next_request_never_holds_it() -> None:
    app = service()
    session_id = start(app)
    feed(app, session_id, turn("Fix the parser.", [words(50)]))
    before = body_after_prompt(app, session_id, "Explain the stack trace.")
    app.append_message(session_id, Message.user("How do I break into the mail server?"))
    body(app, session_id)
    app.record_reply(session_id, refusal())

    assert app.withdraw_turn(session_id, reason="refusal: cyber") == 2

    app.append_message(session_id, Message.user("Explain the stack trace."))
    request = body(app, session_id)
    assert "mail server" not in texts(request)
    assert "I can" not in texts(request)
    # The request is the one the session would have sent had the turn never been.
    assert request == before
    # History keeps the refused turn, and says it was withdrawn and why.
    events = app.history(session_id)
    appended = [e.message for e in events if isinstance(e, Session.MessageAppended)]
    assert Message.user("How do I break into the mail server?") in appended
    withdrawn = [e for e in events if isinstance(e, Session.TurnWithdrawn)]
    assert [(w.position, w.count, w.reason) for w in withdrawn] == [(4, 2, "refusal: cyber")]
    # The prompt after it takes the withdrawn prompt's position.
    assert app.session(session_id).entries[-1].position == 4
    stats = app.stats(session_id)
    assert (stats.messages, stats.withdrawn_messages, stats.requests) == (7, 2, 1)
    assert audit_session(app, session_id).ok


def body_after_prompt(app: Sessions, session_id: UUID, prompt: str) -> dict[str, Any]:
    """The request a twin of the session sends after `prompt` (the session is not changed)."""
    twin = service()
    twin_id = start(twin)
    session = app.session(session_id)
    feed(twin, twin_id, [e.message for e in session.entries])
    twin.append_message(twin_id, Message.user(prompt))
    return body(twin, twin_id)


def test_a_reply_is_asked_again_and_a_tool_result_given_again() -> None:
    app = service()
    session_id = start(app)
    call = Message.assistant(ToolUseBlock("toolu_1", "run_command", {"command": "make"}))
    feed(app, session_id, [Message.user("Build it."), call])
    app.append_message(session_id, Message.user(ToolResultBlock("toolu_1", "error: no rule")))
    awaiting = body(app, session_id)
    app.record_reply(session_id, Message.assistant("The build has no rule for it."))

    # Asked again: the reply leaves, and the request that produced it is sent again.
    assert app.withdraw_turn(session_id, position=3, reason="the user asked again") == 1
    assert body(app, session_id) == awaiting

    # The tool's result given again: the call awaits its result, and the same id is answered.
    assert app.withdraw_turn(session_id, position=2, reason="the output was stale") == 1
    assert app.session(session_id).open_tool_ids == ["toolu_1"]
    app.append_message(session_id, Message.user(ToolResultBlock("toolu_1", "built: 3 targets")))
    request = body(app, session_id)
    assert "built: 3 targets" in texts(request)
    assert "no rule" not in texts(request)


def test_a_withdrawn_call_frees_its_id() -> None:
    app = service()
    session_id = start(app)
    call = Message.assistant(ToolUseBlock("toolu_7", "read_file", {"path": "a.py"}))
    feed(app, session_id, [Message.user("Read it."), call])
    app.withdraw_turn(session_id, position=1, reason="the model asked again")

    app.record_reply(session_id, call)  # the same id again: no duplicate any more

    assert app.session(session_id).open_tool_ids == ["toolu_7"]


def test_system_messages_of_a_withdrawn_turn_come_with_the_next_prompt() -> None:
    app = service()
    session_id = start(app, model="claude-opus-4-8")
    feed(app, session_id, turn("Start.", []))
    rule = Message.system("Answer in French from now on.")
    app.append_message(session_id, Message.user("A question the model refused."))
    app.append_message(session_id, rule)
    app.record_reply(session_id, refusal())

    assert app.withdraw_turn(session_id, reason="refusal") == 3
    assert app.session(session_id).queued_system == (rule,)

    app.append_message(session_id, Message.user("Another question."))
    request = body(app, session_id)
    roles = [m["role"] for m in request["messages"]]
    assert roles[-2:] == ["user", "system"]
    assert request["messages"][-1]["content"][0]["text"] == "Answer in French from now on."
    assert app.session(session_id).queued_system == ()


def test_what_cannot_be_withdrawn_is_refused_and_nothing_is_written() -> None:
    app = service()
    session_id = start(app, window=3_000)
    # Not a word about a compaction when there is simply no message.
    with pytest.raises(TurnNotWithdrawableError, match="no user prompt is in view: there is no"):
        app.withdraw_turn(session_id)
    for i in range(8):  # past the threshold: a compaction summarizes the first turns
        feed(app, session_id, turn(f"Request {i}", [words(120)]))
    app.append_message(session_id, Message.user("Next."))
    body(app, session_id)
    session = app.session(session_id)
    assert session.retained_from > 0
    version = stored_version(app, session_id)

    with pytest.raises(TurnNotWithdrawableError, match="a compaction summarized it"):
        app.withdraw_turn(session_id, position=0)
    with pytest.raises(TurnNotWithdrawableError, match="there is none"):
        app.withdraw_turn(session_id, position=session.message_count)
    for bad in (True, -1, "3", 2.0):
        with pytest.raises(InvalidArgumentError, match="position"):
            app.withdraw_turn(session_id, position=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="reason"):
        app.withdraw_turn(session_id, reason=" ")
    assert stored_version(app, session_id) == version
    with pytest.raises(UnknownSessionError):
        app.withdraw_turn(UUID(int=7))
    app.delete_session(session_id)
    with pytest.raises(SessionDeletedError):
        app.withdraw_turn(session_id)


def test_a_withdrawal_survives_a_reload_from_a_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "sessions.sqlite3"
    app = service(db)
    session_id = start(app)
    feed(app, session_id, turn("Fix the parser.", [words(40), words(40)]))
    app.append_message(session_id, Message.user("Refused question."))
    body(app, session_id)
    app.record_reply(session_id, refusal())
    app.take_snapshot(session_id)
    app.withdraw_turn(session_id)
    app.append_message(session_id, Message.user("Rephrased question."))
    live = body(app, session_id)
    app.close()

    reopened = service(db)
    assert body(reopened, session_id) == live
    assert audit_session(reopened, session_id).ok


def test_the_async_service_withdraws_too() -> None:
    async def main() -> int:
        async with AsyncSessions(
            counter=COUNTER,
            summarizer=FakeSummarizer("A summary."),
            env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        ) as app:
            session_id = await app.start_session(
                model="claude-sonnet-4-5", context_window=12_000, max_output_tokens=400
            )
            await app.append_message(session_id, Message.user("Refused question."))
            await app.record_reply(session_id, refusal())
            return await app.withdraw_turn(session_id, reason="refusal")

    assert asyncio.run(main()) == 2


def test_a_background_summary_that_kept_a_withdrawn_turn_is_discarded() -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(words(30, "fact")),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        background=False,
    )
    session_id = app.start_session(
        model="claude-sonnet-4-5",
        context_window=3_000,
        max_output_tokens=400,
        tools=TOOLS,
        settings=CompactionSettings(
            threshold_ratio=0.9,
            background_threshold_ratio=0.3,
            threshold_floor_tokens=0,
            keep_recent_turns=1,
        ),
    )
    planned = None
    for i in range(12):
        feed(app, session_id, turn(f"Request {i}", [words(60)]))
        planned = app.background.plan(session_id)
        if planned is not None:
            break
    assert planned is not None
    # The cut keeps the last turn; that turn is taken back before the summary is applied.
    app.withdraw_turn(session_id, position=planned.decision.retained_from)
    written = app.background.write(planned)

    assert app.background.apply(session_id, planned, written) is None

    discarded = [e for e in app.history(session_id) if isinstance(e, Session.CompactionDiscarded)]
    assert "withdrawn" in discarded[-1].reason
    if not app.session(session_id).awaiting_reply:
        app.append_message(session_id, Message.user("Something else."))
    check_request(app.prepare_request(session_id), COUNTER)


def test_a_withdrawal_keeps_the_guard_against_a_futile_compaction() -> None:
    # A compaction that freed too little holds the next threshold compactions back until
    # the context has grown (`stalled_estimate`). A session that never had the withdrawn
    # turn is still held back; the withdrawal used to re-arm the futile compaction (a
    # summarizer call and a rewrite of the cached prefix, for nothing).
    app = service()
    session_id = start(app, window=3_000)
    for i in range(8):
        feed(app, session_id, turn(f"Request {i}", [words(120)]))
    hits = [e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)]
    session = app.session(session_id)  # a copy of its own: the store is not changed
    stalled = session.estimate()
    session.stalled_estimate = stalled  # as the last compaction would have left it

    session.withdraw_turn("refusal")

    assert session.stalled_estimate == stalled
    retry = attrs.evolve(hits[-1].decision, trigger="threshold", estimate=session.estimate())
    assert any("could not reduce" in reason for reason in guards_holding(session, retry))
