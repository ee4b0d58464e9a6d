"""`Sessions.append_messages`: a conversation brought in whole is one write, all or nothing."""

from __future__ import annotations

import asyncio
from uuid import UUID

import pytest

from abridged.application.async_service import AsyncSessions
from abridged.application.service import Sessions
from abridged.domain.errors import MessageTooLargeError, OrphanToolResultError
from abridged.domain.messages import Message, ToolResultBlock
from tests.conftest import MakeApp
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import counted_writes, stored_version
from tests.support.fakes import FakeSummarizer, FakeTokenCounter


def started(app: Sessions) -> UUID:
    return app.start_session(
        model="claude-sonnet-4-5", context_window=12_000, max_output_tokens=400, tools=TOOLS
    )


def conversation(turns: int) -> list[Message]:
    return [m for i in range(turns) for m in turn(f"Request {i}", [words(300)])]


def test_a_whole_conversation_is_one_transaction(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = started(app)
    messages = conversation(6)
    inserts = counted_writes(app, monkeypatch)

    positions = app.append_messages(session_id, [m.to_wire() for m in messages])

    assert positions == tuple(range(len(messages)))
    assert len(inserts) == 1
    assert [e.message for e in app.session(session_id).entries] == messages


def test_a_refused_message_leaves_the_session_as_it_was(app: Sessions) -> None:
    session_id = started(app)
    app.append_messages(session_id, conversation(1))
    before = stored_version(app, session_id)
    orphan = Message.user(ToolResultBlock("toolu_never_called", "no call made this"))
    later = [Message.user("Next."), Message.assistant("Sure."), orphan, Message.user("More.")]

    with pytest.raises(OrphanToolResultError) as refused:
        app.append_messages(session_id, later)

    assert stored_version(app, session_id) == before
    assert "message 2 of 4 (it would have been at position 6)" in refused.value.__notes__[0]
    # The session is usable as it was: the same messages without the bad one are accepted.
    assert app.append_messages(session_id, later[:2]) == (4, 5)


def test_nothing_to_append_writes_nothing(app: Sessions) -> None:
    session_id = started(app)
    before = stored_version(app, session_id)

    assert app.append_messages(session_id, []) == ()
    assert stored_version(app, session_id) == before


def test_the_async_service_appends_several_too() -> None:
    async def main() -> tuple[int, ...]:
        async with AsyncSessions(
            counter=FakeTokenCounter(),
            summarizer=FakeSummarizer("A summary."),
            env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        ) as sessions:
            session_id = await sessions.start_session(
                model="claude-sonnet-4-5", context_window=12_000, max_output_tokens=400
            )
            return await sessions.append_messages(
                session_id, [Message.user("Hi."), Message.assistant("Hello.")]
            )

    assert asyncio.run(main()) == (0, 1)


ORPHAN = Message.user(ToolResultBlock("toolu_never_called", "no call made this"))


def test_a_session_starts_with_its_messages_in_one_write_or_not_at_all(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = conversation(2)
    inserts = counted_writes(app, monkeypatch)

    session_id = app.start_session(
        model="claude-sonnet-4-5", context_window=12_000, max_output_tokens=400, tools=TOOLS,
        messages=messages,
    )  # fmt: skip

    assert len(inserts) == 1
    assert [e.message for e in app.session(session_id).entries] == messages
    with pytest.raises(OrphanToolResultError) as refused:
        app.start_session(
            model="claude-sonnet-4-5",
            max_output_tokens=400,
            tools=TOOLS,
            messages=[*messages, ORPHAN],
        )
    assert "message 8 of 9" in refused.value.__notes__[0]
    assert len(inserts) == 1
    assert len(app.list_sessions().sessions) == 1


def test_a_reconfiguration_and_its_messages_are_recorded_together_or_not_at_all(
    app: Sessions,
) -> None:
    session_id = started(app)
    app.append_messages(session_id, conversation(1))
    before = stored_version(app, session_id)

    with pytest.raises(OrphanToolResultError):
        app.reconfigure(
            session_id,
            system="Be brief.",
            messages=[Message.user("Hi."), Message.assistant("Hey."), ORPHAN],
        )

    assert stored_version(app, session_id) == before
    assert app.session(session_id).system == ""
    changed = app.reconfigure(
        session_id, system="Be brief.", messages=[Message.user("Hi."), Message.assistant("Hey.")]
    )
    assert changed == ["SystemPromptChanged"]
    assert stored_version(app, session_id) == before + 3
    assert app.session(session_id).system == "Be brief."


def test_a_message_too_large_is_named_and_nothing_is_written(make_app: MakeApp) -> None:
    app = make_app(max_message_bytes=2_000)
    session_id = started(app)
    before = stored_version(app, session_id)

    with pytest.raises(MessageTooLargeError) as refused:
        app.append_messages(session_id, [Message.user("Hi."), Message.assistant("x" * 5_000)])

    assert "message 1 of 2" in refused.value.__notes__[0]
    assert stored_version(app, session_id) == before
