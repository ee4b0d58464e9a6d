"""`simulate`'s recent depth: how many of the last messages a request sends whole."""

from __future__ import annotations

from typing import Any

from abridged.adapters.anthropic.request import folded_system_messages
from abridged.adapters.simulation.run import recent_depth
from abridged.domain.messages import Message, TextBlock
from abridged.domain.replies import shown_reply
from abridged.domain.tokens import message_tokens
from tests.support.builders import exchange, thinking_exchange


def count(text: str) -> int:
    return len(text.split())


def test_a_system_message_carried_out_of_the_summary_is_not_the_tail() -> None:
    # The history: a prompt, a reminder sent mid-conversation (`role: system`), the reply,
    # then the prompt the request answers.
    history = [
        Message.user("Fix the deploy."),
        Message.system("Reminder: CI is slow today."),
        Message.assistant("Deployed stage one."),
        Message.user("Next, stage two."),
        Message.assistant("Done."),
    ]
    # A compaction summarized the first three; the reminder, never compacted, follows the
    # first message, which holds the summary and the prompt.
    summary = TextBlock("<conversation-summary>Earlier: stage one.</conversation-summary>")
    first = Message.user(summary, *history[3].content)
    body: dict[str, Any] = {"messages": [first.to_wire(), history[1].to_wire()]}
    wires: list[dict[str, Any] | None] = [None] * len(history)

    depth, tokens, turns, _ = recent_depth(body, history, 4, wires, count, cap=1_000)

    assert (depth, turns) == (1, 1)
    assert tokens > 0


def test_inside_a_loop_led_by_thinking_a_step_back_reaches_a_reply_that_thinks() -> None:
    # A tool loop that thinks at its first step and at its last: a tail may start only
    # before a reply that starts with thinking, so one step back from the last one is the
    # whole loop back to its first step, not the one call before it.
    history: list[Message] = [Message.user("Port the loader.")]
    for step in range(4):
        history += thinking_exchange("x " * 50) if step in (0, 3) else exchange(["x " * 50])
    summary = TextBlock("<conversation-summary>Earlier: the first steps.</conversation-summary>")
    sent = [Message.user(summary), history[7], history[8]]
    body: dict[str, Any] = {"messages": [m.to_wire() for m in sent]}
    wires: list[dict[str, Any] | None] = [None] * len(history)

    depth, _, _, back = recent_depth(body, history, 9, wires, count, cap=1_000)

    assert depth == 2
    assert back == sum(message_tokens(m, count) for m in history[1:7])


def test_a_reply_sent_as_every_request_must_show_it_counts_as_whole() -> None:
    # Replies as agents record them: a blank text block before a tool call (Claude Code's
    # "\n\n"), and an empty reply. No request may carry either as recorded (blank text is
    # refused; an empty reply leaves the roles unalternated), so abridged sends them without
    # the blank block, and as a note: that is the whole reply, not a cut tail.
    call = {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}}
    history = [
        Message.user("Run it."),
        Message.from_wire(
            {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}, call]}
        ),
        Message.from_wire(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}
        ),
        Message.from_wire({"role": "assistant", "content": []}),
        Message.user("Again?"),
    ]
    body: dict[str, Any] = {"messages": [shown_reply(m).to_wire() for m in history]}
    wires: list[dict[str, Any] | None] = [None] * len(history)

    depth, _, turns, _ = recent_depth(body, history, 5, wires, count, cap=1_000)

    assert (depth, turns) == (5, 2)


def test_system_messages_folded_into_the_user_message_before_them_are_whole() -> None:
    # A model without system messages is sent each one as marked text at the end of the
    # user message before it (`folded_system_messages`), and a turn-scoped one not at all
    # once its turn is over: the requests any strategy must send it. Read as cut tails
    # before, a session with reminders on such a model showed depth 0 and a short tail at
    # nearly every request.
    history = [
        Message.user("Fix the deploy."),
        Message.system("Reminder: never touch vendor/."),
        Message.assistant("Deployed."),
        Message.user("Next, the docs."),
        Message.from_wire(
            {"role": "system", "content": "Answer in one line.", "clear_at": "next_user_message"}
        ),
        Message.assistant("Done."),
        Message.user("And the tests?"),
    ]
    body: dict[str, Any] = {
        "messages": folded_system_messages([m.to_wire() for m in history]),
    }
    assert len(body["messages"]) == 5
    wires: list[dict[str, Any] | None] = [None] * len(history)

    depth, _, turns, _ = recent_depth(body, history, 7, wires, count, cap=1_000)

    assert (depth, turns) == (7, 3)
