"""The audit view: every event type has its facts, dispatched by class."""

from __future__ import annotations

from eventsourcing.domain import Aggregate

from abridged.application.audit import event_facts, facts
from abridged.application.service import Sessions
from abridged.domain.session import Session
from tests.support.builders import TOOLS, turn, words


def event_classes() -> list[type]:
    return [
        value
        for name, value in vars(Session).items()
        if isinstance(value, type)
        and issubclass(value, Aggregate.Event)
        and name not in {"Event", "Created"}  # the bases of its events
    ]


def test_every_session_event_has_its_own_facts() -> None:
    # A new or renamed event must not fall back silently to the empty default.
    default = facts.dispatch(object)
    missing = [cls.__name__ for cls in event_classes() if facts.dispatch(cls) is default]
    assert missing == []


def test_the_facts_of_a_session_name_each_event_and_its_version(app: Sessions) -> None:
    session_id = app.start_session(
        model="claude-test", context_window=4_000, max_output_tokens=500, tools=TOOLS
    )
    for message in turn("Fix the parser", [words(30)]):
        if message.role.value == "assistant":
            app.prepare_request(session_id)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    rows = [event_facts(e) for e in app.history(session_id)]
    assert [r["version"] for r in rows] == list(range(1, len(rows) + 1))
    assert rows[0]["event"] == "Started"
    assert rows[0]["window"] == 4_000
    appended = [r for r in rows if r["event"] == "MessageAppended"]
    assert [r["role"] for r in appended] == ["user", "assistant", "user", "assistant"]
    assert all(r["shown_tokens"] <= r["tokens"] for r in appended)
