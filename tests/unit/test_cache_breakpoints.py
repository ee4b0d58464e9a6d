"""Cache breakpoints a host set itself count toward the API's four."""

from __future__ import annotations

import json

from abridged.adapters.anthropic.request import render_request
from abridged.application.service import Sessions
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from tests.support.anthropic_rules import assert_valid_request
from tests.support.builders import exchange, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter


def test_breakpoints_on_the_hosts_tool_definitions_leave_fewer_for_the_messages() -> None:
    # The API's guide caches tool definitions with a breakpoint on the last one (or on
    # several). With the system prompt's and those on the summaries, the ledger, the prune
    # boundary and the last message, a request had five or more: a 400.
    tools = [
        {
            "name": name,
            "description": f"The {name} tool.",
            "input_schema": {"type": "object"},
            "cache_control": {"type": "ephemeral"},
        }
        for name in ("run_command", "read_file")
    ]
    app = Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer(words(30, "fact")),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-sonnet-4-5",
        context_window=6_000,
        max_output_tokens=500,
        system="You are a careful agent.",
        tools=tools,
        settings=CompactionSettings(keep_recent_turns=1, threshold_floor_tokens=0),
    )
    marked = 0
    for k in range(12):
        app.append_message(session_id, Message.user(f"Task {k}: {words(60)}"))
        call, result = exchange([words(400)])
        prepared = app.prepare_request(session_id)
        body = render_request(prepared.context, model=prepared.model, max_tokens=500)
        assert_valid_request(body)
        marked = max(marked, json.dumps(body["messages"]).count('"cache_control"'))
        app.record_reply(session_id, call)
        app.append_message(session_id, result)
        prepared = app.prepare_request(session_id)
        body = render_request(prepared.context, model=prepared.model, max_tokens=500)
        assert_valid_request(body)
        assert body["tools"] == tools  # the host's breakpoints are kept
        app.record_reply(session_id, Message.assistant(f"Done {k}."))
    assert app.session(session_id).generation  # compacted on the way
    assert marked == 1  # the four less the host's two and the system prompt's
