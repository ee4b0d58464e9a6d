"""Per-turn content on a model that binds thinking to its prefix: recorded when first shown,
then shown at that place, unchanged, on every later request, so that requests only append;
it leaves with its message at a compaction; the audit re-derives it and flags content
recorded where it would change what an earlier reply was produced under."""

from __future__ import annotations

from itertools import pairwise
from typing import Any
from uuid import UUID

from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.messages import Message, TextBlock, ToolResultBlock
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, thinking_exchange, words

BOUND = "claude-fable-5-1"
UNBOUND = "claude-opus-5"


class Changing:
    """Content that changes at every request, as a clock or an open-files list does."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls = 0

    def content(self, session_id: UUID) -> str | None:
        self.calls += 1
        if self.texts:
            return self.texts[min(self.calls, len(self.texts)) - 1]
        return f"Open files: src/module_{self.calls}.py"


def start(app: Sessions, model: str = BOUND, window: int = 100_000) -> UUID:
    return app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )


def shown(app: Sessions, session_id: UUID) -> list[dict[str, Any]]:
    """The messages of the next request, as the API would get them."""
    return [m.to_wire() for m in app.prepare_request(session_id).context.messages]


def recorded(app: Sessions, session_id: UUID) -> list[Session.TurnContextShown]:
    return [e for e in app.history(session_id) if isinstance(e, Session.TurnContextShown)]


def test_each_request_appends_to_the_one_before(make_app: MakeApp) -> None:
    app = make_app(context_provider=Changing())
    session_id = start(app)
    app.append_message(session_id, Message.user("Fix the parser."))
    requests = []
    for step in range(3):
        requests.append(shown(app, session_id))
        call, result = thinking_exchange(words(20), thought=f"step {step}")
        app.record_reply(session_id, call)
        app.append_message(session_id, result)
    requests.append(shown(app, session_id))

    for before, after in pairwise(requests):
        # Everything the earlier request sent is sent again byte for byte, then more.
        assert after[: len(before)] == before
    last = requests[-1]
    texts = [b["text"] for m in last for b in m["content"] if b["type"] == "text"]
    assert texts == [
        "Fix the parser.",
        "Open files: src/module_1.py",
        "Open files: src/module_2.py",
        "Open files: src/module_3.py",
        "Open files: src/module_4.py",
    ]
    # Each after the last block of the user message it was first shown with.
    assert last[2]["content"][-1] == {"type": "text", "text": "Open files: src/module_2.py"}
    assert [e.position for e in recorded(app, session_id)] == [0, 2, 4, 6]
    assert audit_session(app, session_id).ok


def test_it_is_counted_in_every_estimate(make_app: MakeApp) -> None:
    app = make_app(context_provider=Changing())
    session_id = start(app)
    app.append_message(session_id, Message.user("Fix the parser."))
    prepared = app.prepare_request(session_id)
    session = app.session(session_id)
    (event,) = recorded(app, session_id)

    assert session.turn_context_tokens == event.tokens > 0
    assert prepared.context.raw_estimate == session.raw_estimate()
    assert prepared.breakdown is not None
    assert prepared.breakdown.extra == event.tokens


def test_the_same_content_is_not_recorded_again(make_app: MakeApp) -> None:
    app = make_app(context_provider=Changing("Today is Monday."))
    session_id = start(app)
    app.append_message(session_id, Message.user("Fix the parser."))
    for _ in range(3):
        shown(app, session_id)
        app.record_reply(session_id, Message.assistant("Done."))
        app.append_message(session_id, Message.user("And the lexer?"))
    last = shown(app, session_id)

    assert len(recorded(app, session_id)) == 1
    assert last[0]["content"][-1] == {"type": "text", "text": "Today is Monday."}
    assert sum(1 for m in last for b in m["content"] if b.get("text") == "Today is Monday.") == 1


def test_a_request_prepared_again_before_its_reply_replaces_the_content(
    make_app: MakeApp,
) -> None:
    app = make_app(context_provider=Changing())
    session_id = start(app)
    app.append_message(session_id, Message.user("Fix the parser."))
    shown(app, session_id)
    again = shown(app, session_id)

    assert again[-1]["content"] == [
        {"type": "text", "text": "Fix the parser."},
        {"type": "text", "text": "Open files: src/module_2.py"},
    ]
    assert app.session(session_id).turn_context_tokens == recorded(app, session_id)[-1].tokens
    assert audit_session(app, session_id).ok


def test_a_model_that_does_not_bind_thinking_records_nothing(make_app: MakeApp) -> None:
    app = make_app(context_provider=Changing())
    session_id = start(app, UNBOUND)
    app.append_message(session_id, Message.user("Fix the parser."))
    shown(app, session_id)
    app.record_reply(session_id, Message.assistant("Done."))
    app.append_message(session_id, Message.user("And the lexer?"))
    last = shown(app, session_id)

    assert recorded(app, session_id) == []
    assert [b.get("text") for m in last for b in m["content"] if b["type"] == "text"] == [
        "Fix the parser.",
        "Done.",
        "And the lexer?",
        "Open files: src/module_2.py",
    ]


def test_a_compaction_takes_it_out_with_its_message(make_app: MakeApp) -> None:
    app = make_app(context_provider=Changing())
    session_id = start(app, window=4_000)
    for turn in range(8):
        app.append_message(session_id, Message.user(f"Task {turn}: {words(150)}"))
        shown(app, session_id)
        app.record_reply(session_id, Message.assistant(words(120)))
    app.append_message(session_id, Message.user("What next?"))
    last = app.prepare_request(session_id).context
    session = app.session(session_id)

    assert session.generation > 0
    assert session.turn_context
    assert all(position >= session.retained_from for position, _, _ in session.turn_context)
    texts = [b.text for m in last.messages for b in m.content if isinstance(b, TextBlock)]
    assert sum(1 for t in texts if t.startswith("Open files:")) == len(session.turn_context)
    audit = audit_session(app, session_id)
    assert audit.ok, audit.mismatches


def test_the_audit_flags_content_that_changes_what_a_reply_was_produced_under(
    make_app: MakeApp,
) -> None:
    app = make_app(context_provider=Changing())
    session_id = start(app)
    app.append_message(session_id, Message.user("Fix the parser."))
    shown(app, session_id)
    call, result = thinking_exchange(words(20))
    app.record_reply(session_id, call)
    app.append_message(session_id, result)
    # A service that put new content after the first message, which the reply followed.
    session: Session = app.repository.get(session_id)
    session.trigger_event(Session.TurnContextShown, position=0, text="Moved on.", tokens=4)
    app.save(session)

    (finding,) = audit_session(app, session_id).mismatches

    assert finding.event == "TurnContextShown"
    assert "shown after message 1, but the request awaited a reply to message 3" in finding.detail


def test_tool_results_come_first_in_the_message_it_follows(make_app: MakeApp) -> None:
    app = make_app(context_provider=Changing())
    session_id = start(app)
    app.append_message(session_id, Message.user("Fix the parser."))
    shown(app, session_id)
    call, result = thinking_exchange(words(20))
    app.record_reply(session_id, call)
    app.append_message(session_id, result)
    context = app.prepare_request(session_id).context

    results = context.messages[2].content
    assert isinstance(results[0], ToolResultBlock)
    assert results[-1] == TextBlock("Open files: src/module_2.py")
