"""What the API says about a request beyond its token counts: why the prompt cache missed
(cache diagnostics) and what it changed in the input (`input_transformations`), recorded
with each reply; stats, the audit and the report show misses by cause and flag those no
recorded change explains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

from abridged.adapters.bootstrap import persistence_env
from abridged.adapters.report import report_html
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
from tests.support.builders import TOOLS, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
DROPPED = {
    "type": "thinking_dropped",
    "path": "messages.1.content.0",
    "reason": "prefix_binding_mismatch",
}


def service(db: Path) -> Sessions:
    env = persistence_env(db)
    env["AGGREGATE_CACHE_MAXSIZE"] = "0"
    return Sessions(counter=COUNTER, summarizer=FakeSummarizer(words(30, "fact")), env=env)


def reply(text: str, cause: str | None = None, **extra: Any) -> dict[str, Any]:
    """A model reply as the API's JSON, with cache diagnostics naming `cause`."""
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 10, "output_tokens": 2, "iterations": [{"type": "message"}]},
        **extra,
    }
    if cause is not None:
        body["diagnostics"] = {
            "cache_miss_reason": {"type": cause, "cache_missed_input_tokens": 1_200}
        }
    return body


def start(app: Sessions, model: str = "claude-opus-5") -> UUID:
    return app.start_session(
        model=model,
        context_window=3_000,
        max_output_tokens=400,
        system="You are terse.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )


def test_each_reply_keeps_the_cache_miss_cause_and_what_the_api_changed(tmp_path: Path) -> None:
    app = service(tmp_path / "s.sqlite3")
    session_id = start(app)
    app.append_message(session_id, Message.user("Hi"))
    sent = reply("Hello.", "messages_changed", input_transformations=[DROPPED])

    app.record_reply(session_id, sent)

    event = service(tmp_path / "s.sqlite3").history(session_id)[-1]
    assert isinstance(event, Session.MessageAppended)
    usage = event.usage
    assert isinstance(usage, Usage)
    assert usage.cache_miss_reason == "messages_changed"
    assert usage.cache_missed_input_tokens == 1_200
    assert [json.loads(t) for t in usage.input_transformations] == [DROPPED]
    assert [json.loads(i) for i in usage.iterations] == [{"type": "message"}]


def test_a_miss_no_recorded_change_explains_is_flagged_and_a_planned_one_is_not(
    tmp_path: Path,
) -> None:
    app = service(tmp_path / "s.sqlite3")
    # A model that rewrites `tools` when they change (a newer one adds them by a message).
    session_id = start(app, model="claude-sonnet-4-5")
    app.append_message(session_id, Message.user("Hi"))
    app.record_reply(session_id, reply("Hello.", None))
    app.reconfigure(
        session_id, tools=[*TOOLS, {"name": "search", "input_schema": {"type": "object"}}]
    )
    app.append_message(session_id, Message.user("Search."))
    app.record_reply(session_id, reply("Found.", "tools_changed"))  # the reconfiguration
    app.append_message(session_id, Message.user("Again."))
    app.record_reply(session_id, reply("Same.", "system_changed"))  # nothing abridged did

    stats = app.stats(session_id)
    audit = audit_session(app, session_id)

    assert stats.cache_misses_by_cause == {"tools_changed": 1, "system_changed": 1}
    assert stats.unplanned_cache_misses == 1
    assert [m.detail for m in audit.mismatches] == [
        "a prompt-cache miss (system_changed, about 1,200 tokens) that no recorded change explains"
    ]
    page = report_html(audit)
    assert "Prompt-cache misses" in page
    assert "1 not planned" in page


def test_a_reply_without_diagnostics_records_no_cause(tmp_path: Path) -> None:
    app = service(tmp_path / "s.sqlite3")
    session_id = start(app)
    app.append_message(session_id, Message.user("Hi"))
    app.record_reply(session_id, reply("Hello."))
    assert app.stats(session_id).cache_misses_by_cause == {}
    assert audit_session(app, session_id).ok
