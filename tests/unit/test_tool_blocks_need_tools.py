"""A session without tools takes no tool calls or results: the Messages API refuses every
request holding `tool_use` or `tool_result` blocks without `tools` (rule 10). They are
refused where they enter, with `InvalidMessageError` and nothing written, as `reconfigure`
refuses to remove the last tool while they are in view; server tools' blocks need none."""

from __future__ import annotations

from uuid import UUID

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidMessageError
from abridged.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, WireBlock
from tests.support.anthropic_rules import violations
from tests.support.fakes import FakeSummarizer

TOOL = {"name": "run_command", "description": "Run a command.", "input_schema": {"type": "object"}}
CALL = Message.assistant(ToolUseBlock("toolu_1", "run_command", {"command": "ls"}))
RESULT = Message.user(ToolResultBlock("toolu_1", "a.txt"), TextBlock("Thanks, go on."))


def service() -> Sessions:
    return Sessions(
        counter=TiktokenCounter(),
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )


def valid_next_request(app: Sessions, session_id: UUID) -> None:
    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
    assert [v.rule for v in violations(body)] == []


def test_a_conversation_with_tool_calls_brought_in_without_tools_starts_no_session() -> None:
    app = service()
    with pytest.raises(InvalidMessageError, match="defines no tools"):
        app.start_session(
            model="claude-sonnet-4-5",
            max_output_tokens=1_000,
            messages=[Message.user("Run ls."), CALL, RESULT],
        )
    assert not app.list_sessions().sessions


def test_a_tool_call_after_the_last_tool_was_removed_is_refused_and_writes_nothing() -> None:
    app = service()
    session_id = app.start_session(model="claude-sonnet-4-5", max_output_tokens=1_000, tools=[TOOL])
    app.append_message(session_id, Message.user("Run ls."))
    app.prepare_request(session_id)
    app.reconfigure(session_id, tools=[])
    events = len(app.history(session_id))
    with pytest.raises(InvalidMessageError, match="defines no tools"):
        app.record_reply(session_id, CALL)
    assert len(app.history(session_id)) == events
    app.record_reply(session_id, Message.assistant("I have no tool to run it with."))
    app.append_message(session_id, Message.user("Fine."))
    valid_next_request(app, session_id)


def test_server_tools_blocks_need_no_tool_of_the_host() -> None:
    app = service()
    session_id = app.start_session(model="claude-sonnet-4-5", max_output_tokens=1_000)
    app.append_message(session_id, Message.user("What is new in Python?"))
    app.prepare_request(session_id)
    search = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "python"},
    }
    found = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://python.org", "title": "Python",
                     "encrypted_content": "abc"}],
    }  # fmt: skip
    app.record_reply(
        session_id, Message.assistant(WireBlock.of(search), WireBlock.of(found), TextBlock("3.14."))
    )


def test_tools_given_inline_on_a_model_that_takes_them_define_tools() -> None:
    # On a model that takes tool changes mid-conversation, tools added to a session started
    # without any go inline; the model's call of one of them is a call of a defined tool.
    app = service()
    session_id = app.start_session(
        model="claude-opus-4-8", context_window=200_000, max_output_tokens=1_000
    )
    app.append_message(session_id, Message.user("List the files."))
    app.reconfigure(session_id, tools=[TOOL])
    assert app.session(session_id).instructed_tools

    app.record_reply(session_id, CALL)

    assert app.session(session_id).entries[-1].message.tool_uses
