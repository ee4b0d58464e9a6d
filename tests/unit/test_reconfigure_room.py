"""A reconfiguration never leaves a session stuck: what no compaction reduces (the system
prompt, the tools, the system messages in view, the room kept for summaries, the last
exchange at its smallest, all calibrated) must fit the budget after the change, as at a
start and an append; otherwise `ContextTooSmallError`, and nothing is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.service import Sessions
from abridged.domain.errors import ContextTooSmallError
from abridged.domain.messages import Message, ThinkingBlock, ToolResultBlock, ToolUseBlock
from abridged.domain.settings import CompactionSettings
from tests.support.checks import check_request
from tests.support.counting import MemoCounter
from tests.support.fakes import FakeSummarizer

COUNTER = MemoCounter(TiktokenCounter())
TOOLS = (
    {"name": "run_command", "description": "Run a command.", "input_schema": {"type": "object"}},
)
LONG_PROMPT = "You are an agent. " * 150  # about 750 tokens


def service() -> Sessions:
    return Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )


def start(app: Sessions, model: str, **settings: Any) -> UUID:
    return app.start_session(
        model=model,
        context_window=1_500,
        max_output_tokens=365,
        system="You are an agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings) if settings else None,
    )


def with_system_messages(app: Sessions) -> UUID:
    """Eight instructions in view: never summarized, they go with every request."""
    session_id = start(app, "claude-sonnet-4-5")
    app.append_message(session_id, Message.user("Fix the build."))
    for k in range(8):
        if k:
            app.prepare_request(session_id)
            app.record_reply(
                session_id, Message.assistant(ToolUseBlock(f"toolu_{k}", "run_command", {}))
            )
            app.append_message(session_id, Message.user(ToolResultBlock(f"toolu_{k}", "")))
        app.append_message(
            session_id, Message.system(f"Rule {k}: answer briefly and cite the file you read.")
        )
    return session_id


def calibrated(app: Sessions) -> UUID:
    """An unknown model: its calibration starts at 1.35."""
    session_id = start(app, "claude-test")
    app.append_message(session_id, Message.user("Fix the build."))
    return session_id


def in_a_signed_loop(app: Sessions, thinking_lines: int = 45) -> UUID:
    """The tool loop in progress opened with signed thinking, sent back whole."""
    session_id = start(app, "claude-sonnet-4-5")
    app.append_message(session_id, Message.user("Fix the build."))
    app.prepare_request(session_id)
    thinking = ThinkingBlock(
        "I should look at the failing step first. " * thinking_lines, "c2lnbmVk"
    )
    app.record_reply(
        session_id, Message.assistant(thinking, ToolUseBlock("toolu_1", "run_command", {}))
    )
    app.append_message(session_id, Message.user(ToolResultBlock("toolu_1", "ok")))
    return session_id


CASES: dict[str, tuple[Callable[[Sessions], UUID], dict[str, Any]]] = {
    "system messages in view": (with_system_messages, {"system": LONG_PROMPT}),
    "calibration of an unknown model": (calibrated, {"system": LONG_PROMPT}),
    "signed thinking of the loop": (in_a_signed_loop, {"system": "You are an agent. " * 130}),
    "room for summaries": (
        lambda app: in_a_signed_loop(app, thinking_lines=65),
        {"settings": CompactionSettings(summaries_share=0.5, summary_share=0.1)},
    ),
}


@pytest.mark.parametrize(("build", "change"), CASES.values(), ids=CASES.keys())
def test_a_change_that_would_leave_no_request_sendable_is_refused_and_writes_nothing(
    build: Callable[[Sessions], UUID], change: dict[str, Any]
) -> None:
    app = service()
    session_id = build(app)
    check_request(app.prepare_request(session_id), COUNTER)  # it fits before the change
    events = len(app.history(session_id))
    with pytest.raises(ContextTooSmallError, match="nothing was written"):
        app.reconfigure(session_id, **change)
    assert len(app.history(session_id)) == events
    check_request(app.prepare_request(session_id), COUNTER)  # and goes on as it was


def test_a_change_that_fits_is_recorded_and_the_next_request_is_sent() -> None:
    app = service()
    session_id = calibrated(app)
    assert app.reconfigure(session_id, system="You are an agent. " * 30) == ["SystemPromptChanged"]
    check_request(app.prepare_request(session_id), COUNTER)
