"""Blocks the API refuses in a request are refused at append, with nothing written: stored,
each would make every later request of the session invalid."""

from __future__ import annotations

from typing import Any

import pytest

from abridged.application.service import Sessions
from abridged.domain.errors import MalformedBlockError, MisplacedBlockError
from abridged.domain.messages import Message
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

RUN = {"name": "run", "description": "Run.", "input_schema": {"type": "object"}}
SIGNED = {"type": "compaction", "content": "Summary of the work so far.", "signature": "sig"}


def service() -> Sessions:
    return Sessions(
        counter=FakeTokenCounter(),
        summarizer=FakeSummarizer("summary"),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )


def started(app: Sessions) -> Any:
    session_id = app.start_session(
        model="claude-opus-4-8", context_window=200_000, max_output_tokens=4_096, tools=[RUN]
    )
    app.append_message(session_id, Message.user("First question."))
    app.record_reply(session_id, Message.assistant("First answer."))
    return session_id


REPLIES = {
    "after text": [{"type": "text", "text": "An answer."}, SIGNED],
    "twice": [SIGNED, dict(SIGNED, content="Another summary."), {"type": "text", "text": "Hi."}],
    "unsigned": [{"type": "compaction", "content": "A summary."}, {"type": "text", "text": "Hi."}],
}


@pytest.mark.parametrize("content", REPLIES.values(), ids=REPLIES.keys())
def test_a_compaction_block_out_of_place_or_unsigned_is_refused_in_a_reply(
    content: list[dict[str, Any]],
) -> None:
    app = service()
    session_id = started(app)
    app.append_message(session_id, Message.user("Go on."))
    count = len(app.history(session_id))
    with pytest.raises((MisplacedBlockError, MalformedBlockError), match="compaction block"):
        app.record_reply(session_id, {"role": "assistant", "content": content})
    assert len(app.history(session_id)) == count


def test_a_compaction_block_in_a_user_message_is_refused() -> None:
    app = service()
    session_id = started(app)
    count = len(app.history(session_id))
    with pytest.raises(MisplacedBlockError, match="first block of the model's reply"):
        app.append_message(
            session_id, {"role": "user", "content": [{"type": "text", "text": "Hi."}, SIGNED]}
        )
    assert len(app.history(session_id)) == count


def test_a_reply_that_leads_with_a_signed_compaction_block_is_taken() -> None:
    app = service()
    session_id = started(app)
    app.append_message(session_id, Message.user("Go on."))
    app.record_reply(
        session_id, {"role": "assistant", "content": [SIGNED, {"type": "text", "text": "Done."}]}
    )


BLANK = {
    "tool_reference name": ([{"type": "tool_reference", "tool_name": " "}], True),
    "document url": ([{"type": "document", "source": {"type": "url", "url": " "}}], False),
    "document file id": (
        [{"type": "document", "source": {"type": "file", "file_id": "\t"}}],
        False,
    ),
    "container_upload file id": ([{"type": "container_upload", "file_id": " "}], False),
    "search_result source": (
        [
            {
                "type": "search_result",
                "source": " ",
                "title": "Notes",
                "content": [{"type": "text", "text": "A line."}],
            }
        ],
        False,
    ),
}


@pytest.mark.parametrize(("blocks", "in_result"), BLANK.values(), ids=BLANK.keys())
def test_a_name_id_or_address_of_white_space_alone_is_refused(
    blocks: list[dict[str, Any]], in_result: bool
) -> None:
    app = service()
    session_id = started(app)
    if in_result:
        app.append_message(session_id, Message.user("Look it up."))
        call = {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}}
        app.record_reply(session_id, {"role": "assistant", "content": [call]})
        content: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": blocks}
        ]
    else:
        content = [*blocks, {"type": "text", "text": "Here it is."}]
    count = len(app.history(session_id))
    with pytest.raises(MalformedBlockError, match=r"non-blank|needs its"):
        app.append_message(session_id, {"role": "user", "content": content})
    assert len(app.history(session_id)) == count


def test_an_mcp_tool_listing_without_a_server_name_is_refused_in_a_reply() -> None:
    app = service()
    session_id = started(app)
    app.append_message(session_id, Message.user("Which tools?"))
    listing = {"type": "mcp_tool_listing", "mcp_server_name": "  ", "tools": []}
    with pytest.raises(MalformedBlockError, match="mcp_server_name"):
        app.record_reply(
            session_id,
            {"role": "assistant", "content": [listing, {"type": "text", "text": "These."}]},
        )
