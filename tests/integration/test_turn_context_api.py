"""Per-turn content that changes at every request, on a model that binds thinking to its
prefix, through the real SDK against the local Messages API (which checks every thinking
block's prefix as the API does): no request is refused, and every request of an open tool
loop sends back every thinking block the loop produced."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from abridged.adapters.anthropic.request import render_request
from abridged.application.auditing import audit_session
from abridged.application.ports import RequestOptions
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, words
from tests.support.fake_anthropic import FakeAnthropic, message

MODEL = "claude-fable-5-1"
THINKING = {"type": "adaptive"}  # Fable 5.x takes adaptive thinking only (a 400 for "enabled")


class OpenFiles:
    """A different list of open files at every request."""

    def __init__(self) -> None:
        self.calls = 0

    def content(self, session_id: UUID) -> str | None:
        self.calls += 1
        return f"Open files: src/module_{self.calls}.py, tests/test_module_{self.calls}.py"


def loop_thinking(body: dict[str, Any]) -> int:
    """Thinking blocks sent in the assistant messages of the open tool loop."""
    messages = body["messages"]
    start = 0
    for index, m in enumerate(messages):
        content = m["content"] if isinstance(m["content"], list) else []
        if m["role"] == "user" and not any(b.get("type") == "tool_result" for b in content):
            start = index
    return sum(
        1
        for m in messages[start:]
        if m["role"] == "assistant"
        for b in m["content"]
        if b.get("type") == "thinking"
    )


def test_changing_per_turn_content_is_never_refused_and_keeps_the_loops_thinking(
    fake_anthropic: FakeAnthropic, make_app: MakeApp
) -> None:
    provider = OpenFiles()
    app = make_app(context_provider=provider)
    client: Any = fake_anthropic.client()
    session_id = app.start_session(
        model=MODEL,
        context_window=8_000,
        max_output_tokens=2_048,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, threshold_ratio=0.5),
    )
    options = RequestOptions(thinking=THINKING)
    loop_checks = 0
    for turn in range(5):
        app.append_message(session_id, {"role": "user", "content": f"Task {turn}: {words(250)}"})
        for step in range(3):
            body = render_request(
                app.prepare_request(session_id).context,
                model=MODEL,
                max_tokens=2_048,
                options=options,
            )
            # Inside the loop, every thinking block it produced goes back.
            assert loop_thinking(body) == step
            loop_checks += step > 0
            tool_id = f"toolu_{turn}{step}"
            fake_anthropic.enqueue(
                message(
                    [
                        {"type": "thinking", "thinking": f"step {step}", "signature": ""},
                        {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {}},
                    ],
                    stop_reason="tool_use",
                )
            )
            app.record_reply(session_id, client.messages.create(**body))
            result = {"type": "tool_result", "tool_use_id": tool_id, "content": words(150)}
            app.append_message(session_id, {"role": "user", "content": [result]})
        body = render_request(
            app.prepare_request(session_id).context,
            model=MODEL,
            max_tokens=2_048,
            options=options,
        )
        assert loop_thinking(body) == 3
        fake_anthropic.enqueue(message("Done."))
        app.record_reply(session_id, client.messages.create(**body))

    shown = [e for e in app.history(session_id) if isinstance(e, Session.TurnContextShown)]
    assert app.session(session_id).generation > 0
    assert len(shown) == provider.calls == 20  # one per request, each different
    assert loop_checks == 10
    assert fake_anthropic.violations == []
    audit = audit_session(app, session_id)
    assert audit.ok, audit.mismatches
