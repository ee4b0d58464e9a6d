"""`simulate`'s recent depth: how many of the last messages a request sends whole."""

from __future__ import annotations

from typing import Any

from abridged.adapters.simulation.run import recent_depth
from abridged.domain.messages import Message, TextBlock


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
