"""A session's lifecycle: the system prompt, tools, model and settings change mid-session as
events; a session is cleared or resumed into a new one linked to its parent."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import persistence_env
from abridged.application.audit import event_facts
from abridged.application.service import Sessions
from abridged.domain.errors import (
    CompactionFailedError,
    InvalidArgumentError,
    InvalidMessageError,
    InvalidSettingsError,
    InvalidToolDefinitionError,
    SessionError,
)
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.integration.test_stored_sessions import open_store
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import check_request, system_text
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
SEARCH = {"name": "search", "description": "Search.", "input_schema": {"type": "object"}}


def service(summarizer: FakeSummarizer | None = None, db: Path | None = None) -> Sessions:
    env = persistence_env(db) if db else {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    if db:
        env["AGGREGATE_CACHE_MAXSIZE"] = "0"  # every read replays from the store
    return Sessions(
        counter=COUNTER, summarizer=summarizer or FakeSummarizer(words(30, "fact")), env=env
    )


def start(app: Sessions, window: int = 3_000, **settings: Any) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=window,
        max_output_tokens=400,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, **settings),
    )


def feed(app: Sessions, session_id: UUID, turns: int, first: int = 0) -> None:
    for i in range(first, first + turns):
        for message in turn(f"Request {i}", [words(100)]):
            if message.role is Role.ASSISTANT:
                check_request(app.prepare_request(session_id), COUNTER)
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)


def names(app: Sessions, session_id: UUID) -> list[str]:
    return [type(e).__name__ for e in app.history(session_id)]


def test_changes_are_events_the_next_request_uses_and_a_replay_re_derives(
    tmp_path: Path,
) -> None:
    app = service(db=tmp_path / "s.sqlite3")
    session_id = start(app)
    feed(app, session_id, 2)
    version = app.session(session_id).version

    recorded = app.reconfigure(
        session_id,
        system="You review code tersely.",
        tools=[*TOOLS, SEARCH],
        model="claude-sonnet-4-5",
        max_output_tokens=1_000,
        settings=CompactionSettings(threshold_floor_tokens=0, threshold_ratio=0.5),
    )

    assert recorded == ["SystemPromptChanged", "ToolsChanged", "ModelChanged", "SettingsChanged"]
    app.append_message(session_id, Message.user("Review it."))
    prepared = app.prepare_request(session_id)
    body = check_request(prepared, COUNTER)
    assert system_text(body) == "You review code tersely."
    assert [t["name"] for t in body["tools"]] == ["run_command", "read_file", "search"]
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 1_000
    assert prepared.context.window == 200_000  # the new model's own window
    reopened = service(db=tmp_path / "s.sqlite3").session(session_id)
    assert reopened.settings.threshold_ratio == 0.5
    assert reopened.system == "You review code tersely."
    assert reopened.tools_tokens == app.session(session_id).tools_tokens
    before = app.session(session_id, version=version)
    assert (before.system, before.model) == ("You are a careful coding agent.", "claude-test")


def test_nothing_that_differs_records_nothing() -> None:
    app = service()
    session_id = start(app)
    count = len(app.history(session_id))
    assert app.reconfigure(session_id, system="You are a careful coding agent.", tools=TOOLS) == []
    assert app.reconfigure(session_id) == []
    assert len(app.history(session_id)) == count


def test_a_smaller_window_compacts_at_the_next_request() -> None:
    app = service()
    session_id = start(app, window=20_000, tool_output_mode="keep_all")
    feed(app, session_id, 8)
    assert app.session(session_id).generation == 0
    window = int(app.session(session_id).estimate() * 1.2)
    app.reconfigure(session_id, context_window=window)
    app.append_message(session_id, Message.user("Go on."))
    prepared = app.prepare_request(session_id)
    check_request(prepared, COUNTER)
    assert prepared.compaction is not None
    assert prepared.context.window == window


def test_bad_changes_are_typed_errors_and_record_nothing() -> None:
    app = service()
    session_id = start(app)
    feed(app, session_id, 1)
    count = len(app.history(session_id))
    with pytest.raises(InvalidMessageError, match="tools"):
        app.reconfigure(session_id, tools=[])
    with pytest.raises(InvalidSettingsError, match="would not fit"):
        app.reconfigure(session_id, system=words(3_000))
    with pytest.raises(InvalidSettingsError):
        app.reconfigure(session_id, context_window=300)
    with pytest.raises(InvalidSettingsError):
        app.reconfigure(session_id, system="Fine.", max_output_tokens=0)
    with pytest.raises(InvalidArgumentError, match="only white space"):
        app.reconfigure(session_id, system=" \n ")  # the API refuses a blank system text
    # The tools `start_session` refuses, the next request would carry to the API.
    for tools in (
        [SEARCH, SEARCH],
        [{"name": "two words", "input_schema": {"type": "object"}}],
        [{"name": "search"}],
    ):
        with pytest.raises(InvalidToolDefinitionError):
            app.reconfigure(session_id, tools=tools)
    assert len(app.history(session_id)) == count


LONE = "text \ud800 cut"
"""A lone surrogate: no UTF-8 encodes it, so no event can store it and no request carry it."""
COMMANDS: dict[str, Any] = {
    "reconfigure system": lambda app, s: app.reconfigure(s, system=LONE),
    "reconfigure tools": lambda app, s: app.reconfigure(s, tools=[dict(SEARCH, description=LONE)]),
    "reconfigure model": lambda app, s: app.reconfigure(s, model=LONE),
    "compact": lambda app, s: app.compact(s, instructions=LONE),
    "clear_session": lambda app, s: app.clear_session(s, instructions=LONE),
    "withdraw_turn": lambda app, s: app.withdraw_turn(s, reason=LONE),
    "delete_session": lambda app, s: app.delete_session(s, LONE),
    "request_compaction": lambda app, s: app.request_compaction(s, LONE),
    "record_reply model": lambda app, s: app.record_reply(s, Message.assistant("a"), model=LONE),
    "a reply's model": lambda app, s: app.record_reply(
        s, {"role": "assistant", "content": "a", "model": LONE}
    ),
}


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_text_no_utf8_encodes_is_a_typed_error_and_records_nothing(command: Any) -> None:
    app = service()
    session_id = start(app)
    feed(app, session_id, 1)
    app.append_message(session_id, Message.user("One more."))
    count = len(app.history(session_id))
    with pytest.raises(SessionError, match="surrogate"):
        command(app, session_id)
    assert len(app.history(session_id)) == count
    assert len(app.list_sessions().sessions) == 1


def test_a_model_name_no_utf8_encodes_is_refused_at_start() -> None:
    app = service()
    with pytest.raises(InvalidArgumentError, match="surrogate"):
        app.start_session(model=f"claude-{LONE}", max_output_tokens=500)
    assert app.list_sessions().sessions == ()


@pytest.mark.parametrize("blank", [" ", "\n", "\t \r\n"])
def test_a_system_prompt_of_white_space_alone_is_refused_and_none_is_empty(blank: str) -> None:
    app = service()
    with pytest.raises(InvalidArgumentError, match="only white space"):
        app.start_session(model="claude-sonnet-4-6", max_output_tokens=500, system=blank)
    assert app.list_sessions().sessions == ()
    session_id = app.start_session(model="claude-sonnet-4-6", max_output_tokens=500, system="")
    app.append_message(session_id, Message.user("Hi"))
    body = render_request(app.prepare_request(session_id).context, model="m", max_tokens=500)
    assert "system" not in body


def test_clear_starts_a_linked_session_from_the_parents_summary() -> None:
    summarizer = FakeSummarizer(words(30, "fact"))
    app = service(summarizer)
    parent = start(app)
    feed(app, parent, 3)
    parent_events = names(app, parent)

    child = app.clear_session(parent, instructions="keep the file names")

    assert names(app, parent) == parent_events  # the parent is left as it was
    started = app.history(child)[0]
    assert isinstance(started, Session.Started)
    assert (started.parent_id, started.origin) == (parent, "clear")
    assert started.parent_summary is not None
    assert summarizer.calls[-1][2] == "keep the file names"
    assert len(summarizer.calls[-1][0]) == app.session(parent).message_count
    session = app.session(child)
    assert (session.message_count, session.system, session.tools) == (
        0,
        app.session(parent).system,
        app.session(parent).tools,
    )
    app.append_message(child, Message.user("Next task."))
    prepared = app.prepare_request(child)
    check_request(prepared, COUNTER)
    assert prepared.context.summaries == (started.parent_summary,)
    facts = event_facts(started)
    assert facts["parent"] == str(parent)
    assert facts["origin"] == "clear"


def test_a_failed_summary_starts_no_session() -> None:
    app = service(FakeSummarizer(words(30, "fact"), fail=1))
    parent = start(app)
    feed(app, parent, 2)
    with pytest.raises(CompactionFailedError):
        app.clear_session(parent)
    log = app.recorder.select_notifications(start=1, limit=1_000)
    assert {n.originator_id for n in log} == {parent}


def test_resume_is_whole_when_it_fits_and_from_the_summary_otherwise() -> None:
    app = service()
    parent = start(app, tool_output_mode="keep_all")
    feed(app, parent, 20)
    assert app.session(parent).generation >= 1  # the parent itself was compacted
    all_messages = [
        e.message for e in app.history(parent) if isinstance(e, Session.MessageAppended)
    ]

    whole = app.resume_session(parent, context_window=100_000)
    from_summary = app.resume_session(parent)

    resumed = app.session(whole)
    assert [e.message for e in resumed.entries] == all_messages
    assert resumed.summaries == []
    assert app.history(whole)[0].origin == "resume"  # type: ignore[attr-defined]
    short = app.session(from_summary)
    assert (short.message_count, len(short.summaries)) == (0, 1)
    for session_id in (whole, from_summary):
        app.append_message(session_id, Message.user("Where were we?"))
        check_request(app.prepare_request(session_id), COUNTER)
    with pytest.raises(InvalidSettingsError, match="cannot change"):
        app.resume_session(parent, colour="blue")


def test_an_old_started_event_upcasts_with_no_parent(tmp_path: Path) -> None:
    app, session_id, _ = open_store(tmp_path / "old.sqlite3")
    started = app.history(session_id)[0]
    assert isinstance(started, Session.Started)
    assert (started.parent_id, started.origin, started.parent_summary) == (None, None, None)
    assert "parent" not in event_facts(started)


CHANGES = st.one_of(
    st.tuples(st.just("system"), st.sampled_from(["Be brief.", "Be thorough.", ""])),
    st.tuples(st.just("tools"), st.sampled_from([TOOLS, (*TOOLS, SEARCH)])),
    st.tuples(st.just("context_window"), st.sampled_from([2_500, 3_000, 6_000])),
    st.tuples(
        st.just("settings"),
        st.builds(
            CompactionSettings,
            threshold_floor_tokens=st.just(0),
            threshold_ratio=st.sampled_from([0.5, 0.7, 0.9]),
            keep_recent_turns=st.integers(1, 4),
        ),
    ),
    st.tuples(st.just("turn"), st.integers(20, 200)),
)


@settings(max_examples=25)
@given(steps=st.lists(CHANGES, max_size=12))
def test_replay_re_derives_the_state_changes_leave(steps: list[tuple[str, Any]]) -> None:
    app = service()
    session_id = start(app)
    for index, (kind, value) in enumerate(steps):
        if kind == "turn":
            feed_one(app, session_id, index, value)
        else:
            app.reconfigure(session_id, **{kind: value})
    live = app.session(session_id)
    replayed = None
    for event in app.history(session_id):
        replayed = event.mutate(replayed)
    assert isinstance(replayed, Session)
    assert vars(replayed) == vars(live)


def feed_one(app: Sessions, session_id: UUID, index: int, size: int) -> None:
    for message in turn(f"Request {index}", [words(size)]):
        if message.role is Role.ASSISTANT:
            check_request(app.prepare_request(session_id), COUNTER)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
