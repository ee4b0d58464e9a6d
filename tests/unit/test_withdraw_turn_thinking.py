"""Withdrawals on a model that binds each thinking block to everything before it.

With per-turn content from a `ContextProvider` (recorded, `TurnContextShown`) and tool loops
led by thinking, a host withdraws mid-loop, at the prompt or the reply alone, then goes on:
no request changes the prefix of a thinking block it sends (the API's check, in
`tests.support.anthropic_rules`), an open loop keeps its thinking, and the audit re-derives
every decision. A loop taken back after a later prompt dropped its thinking (a model that
does not bind it) goes on with manual thinking left out.
"""

from __future__ import annotations

from uuid import UUID

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.application.auditing import audit_session
from abridged.application.ports import RequestOptions
from abridged.application.service import Sessions
from abridged.domain.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from abridged.domain.settings import CompactionSettings
from tests.support.anthropic_rules import violations
from tests.support.bound_replay import BOUND_MODEL, replay_bound
from tests.support.builders import TOOLS, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()


class OpenFiles:
    """Per-turn content that changes at every request."""

    def __init__(self) -> None:
        self.requests = 0

    def content(self, session_id: UUID) -> str | None:
        self.requests += 1
        return f"Open files at request {self.requests}: src/parser.py"


def call(i: int) -> Message:
    return Message.assistant(ToolUseBlock(f"toolu_{i}", "read_file", {"path": f"f{i}.py"}))


def result(i: int, text: str = "contents") -> Message:
    return Message.user(ToolResultBlock(f"toolu_{i}", f"{text} {i} " + words(30)))


OPENING = [Message.user("Start."), call(1), result(1), Message.assistant("Read it.")]
LOOP = [Message.user("Fix the parser."), call(2), result(2), call(3)]
ENDING = [Message.assistant("Fixed."), Message.user("Thanks."), Message.assistant("Welcome.")]

WITHDRAWALS = [
    # (the messages, the step before which the host withdraws, from which position)
    pytest.param([*OPENING, *LOOP, result(2, "again"), call(4), result(4), *ENDING], 8, 6,
                 id="a tool result given again mid-loop"),
    pytest.param([*OPENING, *LOOP, Message.user("Fix the lexer."), call(5), result(5), *ENDING],
                 8, 4, id="an edited prompt"),
    pytest.param([*OPENING, *LOOP, result(3), Message.assistant("Fixed."),
                  Message.assistant("Fixed, again."), Message.user("Thanks."),
                  Message.assistant("Welcome.")], 10, 9, id="a reply asked again"),
    pytest.param([*OPENING, *LOOP, call(6), result(6), *ENDING], 8, 7,
                 id="a call made again"),
]  # fmt: skip


@pytest.mark.parametrize("model", ["claude-opus-4-8", BOUND_MODEL])
@pytest.mark.parametrize(("messages", "step", "position"), WITHDRAWALS)
def test_a_withdrawal_never_changes_the_prefix_of_thinking_it_sends(
    model: str, messages: list[Message], step: int, position: int
) -> None:
    def withdraw(app: Sessions, session_id: UUID, at: int) -> None:
        if at == step:
            app.withdraw_turn(session_id, position=position, reason="taken back")

    replay = replay_bound(
        COUNTER,
        messages,
        system="You are a careful coding agent.",
        tools=TOOLS,
        window=20_000,
        model=model,
        audit=True,
        between=withdraw,
        context_provider=OpenFiles(),
    )

    assert replay.violations == ()
    assert replay.required_missing == 0
    assert replay.thinking_resent > 0
    assert replay.audit_mismatches == ()


MANUAL = RequestOptions(thinking={"type": "enabled", "budget_tokens": 1024})
ADAPTIVE = RequestOptions(thinking={"type": "adaptive"})


@pytest.mark.parametrize(
    ("model", "options", "dropped"),
    [("claude-sonnet-4-5", MANUAL, True), (BOUND_MODEL, ADAPTIVE, False)],
)
def test_a_loop_taken_back_after_a_later_prompt_goes_on_with_its_thinking_or_paused(
    model: str, options: RequestOptions, *, dropped: bool
) -> None:
    # A model that does not bind thinking drops an earlier turn's thinking at the next
    # prompt: the loop taken back goes on with manual thinking left out. Bound thinking is
    # dropped only when earlier content changes anyway: the loop keeps it.
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer("A summary."),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model=model,
        context_window=20_000,
        max_output_tokens=2_000,
        system="You are a careful coding agent.",
        tools=TOOLS,
        # Thinking of earlier turns is dropped as soon as a new prompt comes.
        settings=CompactionSettings(threshold_floor_tokens=0, prune_min_share=0.0),
    )

    def thought(i: int, last: ToolUseBlock | TextBlock) -> Message:
        return Message.assistant(ThinkingBlock(f"Thought {i}. " + words(40), f"sig-{i}"), last)

    def request() -> dict[str, object]:
        prepared = app.prepare_request(session_id)
        body = render_request(
            prepared.context, model=prepared.model, max_tokens=prepared.max_tokens, options=options
        )
        assert violations(body) == []
        return body

    app.append_message(session_id, Message.user("Fix the parser."))
    for i in (1, 2):
        request()
        app.record_reply(session_id, thought(i, ToolUseBlock(f"toolu_{i}", "read_file", {})))
        app.append_message(session_id, Message.user(ToolResultBlock(f"toolu_{i}", words(30))))
    request()
    app.record_reply(session_id, thought(3, TextBlock("Fixed.")))
    app.append_message(session_id, Message.user("A question the model refused."))
    request()  # the new prompt drops the loop's thinking
    app.record_reply(session_id, Message.assistant("I can"))

    # The second result is given again: the loop is open again, its last reply thinking-less.
    app.withdraw_turn(session_id, position=4, reason="the output was stale")
    app.append_message(session_id, Message.user(ToolResultBlock("toolu_2", "fresh " + words(9))))
    body = request()

    assert app.prepare_request(session_id).context.thinking_paused is dropped
    assert ("thinking" in body) is not dropped
    messages = body["messages"]
    assert isinstance(messages, list)
    assert (messages[-2]["content"][0]["type"] == "thinking") is not dropped
    assert audit_session(app, session_id).ok


class Once:
    """Per-turn content given for the first request only (say, files opened then closed)."""

    def __init__(self) -> None:
        self.given = False

    def content(self, session_id: UUID) -> str | None:
        if self.given:
            return None
        self.given = True
        return "Open files: src/mail.py"


def test_the_content_shown_with_a_withdrawn_prompt_leaves_with_it() -> None:
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer("A summary."),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        context_provider=Once(),
    )
    session_id = app.start_session(
        model=BOUND_MODEL,
        context_window=20_000,
        max_output_tokens=2_000,
        system="You are a careful coding agent.",
        tools=TOOLS,
    )
    app.append_message(session_id, Message.user("A question the model refused."))
    app.prepare_request(session_id)  # shows the content after the prompt (TurnContextShown)
    app.record_reply(session_id, Message.assistant("I can"))
    app.withdraw_turn(session_id, reason="refusal")

    app.append_message(session_id, Message.user("Another question."))
    prepared = app.prepare_request(session_id)

    assert "src/mail.py" not in str(prepared.context.messages)
    assert app.session(session_id).turn_context_tokens == 0
