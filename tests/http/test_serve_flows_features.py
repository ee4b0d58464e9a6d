"""A working day through `abridged serve`, continued: one Claude Code conversation using
what today's API offers: interleaved thinking between tool calls, parallel tool calls,
tool results holding an image and a document, `context_management` edits, cache
breakpoints of its own (an hour long), and a `/model` switch with the previous model's
thinking in the history.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.harness_traffic import (
    CONTEXT_BETA,
    INTERLEAVED_BETA,
    MAIN_MODEL,
    SWITCHED_MODEL,
    TOOLS,
    Harness,
    call,
    claude_code_system,
    harness_day,
    result,
    text,
    thinking,
    user,
)
from tests.support.images import b64, png

HOUR = {"type": "ephemeral", "ttl": "1h"}
EDITS = {
    "edits": [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 100_000},
            "keep": {"type": "tool_uses", "value": 3},
        },
    ]
}
HOUR_TOOLS = [
    {**tool, "cache_control": HOUR} if "cache_control" in tool else tool for tool in TOOLS
]
SCREENSHOT = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": b64(png(64, 48))},
}
REPORT = {
    "type": "document",
    "source": {"type": "text", "media_type": "text/plain", "data": "row,total\n1,10\n2,20\n"},
    "title": "export.csv",
}


@pytest.fixture
def day(fake_anthropic: FakeAnthropic, tmp_path: Path) -> Iterator[Harness]:
    with harness_day(fake_anthropic, str(tmp_path / "sessions.sqlite3")) as harness:
        yield harness


def marked(message: dict[str, Any]) -> dict[str, Any]:
    """`message` with Claude Code's breakpoint (an hour long) on its last block."""
    *rest, last = message["content"]
    return {**message, "content": [*rest, {**last, "cache_control": HOUR}]}


class Conversation:
    """Claude Code's main loop: each request is the history so far, the last message
    marked; the model's answers are scripted."""

    def __init__(self, day: Harness) -> None:
        self.day = day
        self.history: list[Any] = []
        self.model = MAIN_MODEL
        self.system = claude_code_system(ttl="1h")

    def send(self, message: dict[str, Any], *reply: Any, stop: str = "end_turn") -> None:
        self.history.append(message)
        sent = [*self.history[:-1], marked(message)]
        content = self.day.send(
            "main",
            sent,
            model=self.model,
            system=self.system,
            tools=HOUR_TOOLS,
            reply=reply,
            stop_reason=stop,
            thinking={"type": "adaptive"},
            context_management=EDITS,
            extra_headers={"anthropic-beta": f"{CONTEXT_BETA},{INTERLEAVED_BETA}"},
        )
        self.history.append({"role": "assistant", "content": content})


def upstream_marks(body: Any) -> list[Any]:
    return [
        block["cache_control"]
        for message in body["messages"]
        for block in message["content"]
        if isinstance(block, dict) and "cache_control" in block
    ]


def test_a_turn_with_every_feature_and_a_model_switch_stays_one_session(day: Harness) -> None:
    chat = Conversation(day)
    chat.send(
        user(text("The export page renders wrong; here is a screenshot."), SCREENSHOT),
        thinking("Look at the template, then run the test.", 1),
        call("toolu_a1", "Read", file_path="templates/export.html"),
        stop="tool_use",
    )
    # Interleaved thinking: the model thinks again after each result, and calls two tools
    # at once.
    chat.send(
        user(result("toolu_a1", "<table>{% for row in rows[:-1] %}</table>")),
        thinking("The template slices too; check both files at once.", 2),
        call("toolu_a2", "Bash", command="pytest tests/test_export.py -q"),
        call("toolu_a3", "Read", file_path="out/export.csv"),
        stop="tool_use",
    )
    chat.send(
        user(
            result("toolu_a2", [text("1 failed"), SCREENSHOT], is_error=True),
            result("toolu_a3", [REPORT]),
        ),
        thinking("Row 3 is missing from the CSV as well.", 3),
        text("Both the template and the CSV drop the last row; I will fix the slice."),
    )
    chat.send(
        user(text("Fix it.")),
        thinking("One edit.", 4),
        call("toolu_a4", "Edit", file_path="templates/export.html", old="[:-1]", new=""),
        stop="tool_use",
    )
    chat.send(user(result("toolu_a4", "Edited.")), thinking("Done.", 5), text("Fixed."))
    # `/model`: the rest of the day on another model, the first one's thinking in history.
    chat.model = SWITCHED_MODEL
    chat.send(user(text("Now explain the change for the changelog.")), text("The slice..."))
    chat.send(user(text("Shorter, please.")), text("Fixed the export's last row."))

    day.check()
    costs = day.costs()
    assert (costs.sessions, costs.branches) == (1, 0)
    assert costs.prefix_breaks == 0
    assert costs.compactions == costs.summarizer_calls == costs.prunes == 0
    for sent in day.log:
        body = sent.upstream
        assert body["context_management"] == EDITS  # forwarded as the client sent it
        assert body["system"] == chat.system
        assert 1 <= len(upstream_marks(body)) <= 1  # the client set three of the four
    # The session recorded the switch, and the thinking stayed in the stored history.
    session_id = day.finals["main"][0]
    assert day.store.session(session_id).model == SWITCHED_MODEL
    stored = day.stored(session_id)
    assert sum(b["type"] == "thinking" for m in stored for b in m["content"]) == 5


def test_the_clients_hour_long_breakpoints_stay_an_hour_long(day: Harness) -> None:
    """Claude Code asked for an hour-long cache on its system prompt and on its messages:
    the proxy's own breakpoints on the messages it sends must not shorten that to five
    minutes (an idle user would pay the whole prompt again after five)."""
    chat = Conversation(day)
    chat.send(user(text("Read the export module.")), text("It slices rows."))
    chat.send(user(text("And the template?")), text("It slices too."))

    assert day.fake.violations == []
    for sent in day.log:
        assert upstream_marks(sent.upstream)
        assert all(mark.get("ttl") == "1h" for mark in upstream_marks(sent.upstream))
