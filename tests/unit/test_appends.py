"""A bad append gets a typed error naming the problem, and writes nothing."""

from __future__ import annotations

from uuid import uuid4

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.application.service import Sessions
from abridged.domain.errors import (
    DuplicateToolIdError,
    EmptyContentError,
    InvalidMessageError,
    MalformedBlockError,
    MalformedToolIdError,
    MisplacedBlockError,
    OrphanToolResultError,
    RoleOrderError,
    UnansweredToolUseError,
    UnknownSessionError,
    UnsignedThinkingError,
)
from abridged.domain.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tests.support.anthropic_rules import violations


@pytest.fixture
def started(app: Sessions) -> tuple[Sessions, object]:
    session_id = app.start_session(
        model="m", context_window=10_000, max_output_tokens=1_000, tools=RUN
    )
    app.append_message(session_id, Message.user("Fix the parser."))
    app.append_message(
        session_id,
        Message.assistant(
            "Running both.",
            ToolUseBlock("call_a", "run_command", {"command": "pytest"}),
            ToolUseBlock("call_b", "read_file", {"path": "parser.py"}),
        ),
    )
    return app, session_id


BAD_AFTER_PARALLEL_CALLS = [
    pytest.param(Message.assistant("again?"), RoleOrderError, id="two assistant messages"),
    pytest.param(
        Message.user(ToolResultBlock("call_a", "ok")),
        UnansweredToolUseError,
        id="one call of a parallel batch left unanswered",
    ),
    pytest.param(
        Message.user(
            ToolResultBlock("call_a", "ok"),
            ToolResultBlock("call_b", "ok"),
            ToolResultBlock("call_zzz", "?"),
        ),
        OrphanToolResultError,
        id="result for a call that was never made",
    ),
    pytest.param(
        Message.user(ToolResultBlock("call_a", "ok"), ToolResultBlock("call_a", "ok")),
        DuplicateToolIdError,
        id="the same call answered twice",
    ),
    pytest.param(
        Message.user(
            TextBlock("first"), ToolResultBlock("call_a", "ok"), ToolResultBlock("call_b", "ok")
        ),
        MisplacedBlockError,
        id="text before the tool results",
    ),
    pytest.param(
        Message.user(
            ToolResultBlock("call_a", "ok"), ToolResultBlock("call_b", "ok"), TextBlock("   \n")
        ),
        EmptyContentError,
        id="white-space-only text",
    ),
    pytest.param(Message.user(), EmptyContentError, id="no blocks at all"),
    pytest.param(
        Message.user(ToolResultBlock("call a!", "ok")),
        MalformedToolIdError,
        id="malformed tool id",
    ),
    pytest.param(
        Message.user(
            ToolResultBlock("call_a", "ok"),
            ToolResultBlock("call_b", "ok"),
            ToolUseBlock("call_c", "x", {}),
        ),
        MisplacedBlockError,
        id="tool_use in a user message",
    ),
]


@pytest.mark.parametrize(("message", "error"), BAD_AFTER_PARALLEL_CALLS)
def test_bad_reply_to_parallel_calls_is_refused_and_nothing_is_written(
    started: tuple[Sessions, object], message: Message, error: type[Exception]
) -> None:
    app, session_id = started
    before = app.history(session_id)  # type: ignore[arg-type]

    with pytest.raises(error) as raised:
        app.append_message(session_id, message)  # type: ignore[arg-type]

    assert isinstance(raised.value, InvalidMessageError)
    assert str(raised.value)
    assert len(app.history(session_id)) == len(before)  # type: ignore[arg-type]


BAD_ASSISTANT_MESSAGES = [
    pytest.param(
        Message.assistant(ThinkingBlock("hmm", ""), TextBlock("ok")),
        UnsignedThinkingError,
        id="thinking without signature",
    ),
    pytest.param(
        Message.assistant(TextBlock("ok"), ThinkingBlock("hmm", "sig")),
        MisplacedBlockError,
        id="thinking after text",
    ),
    pytest.param(
        Message.assistant(ThinkingBlock("only thoughts", "sig")),
        MisplacedBlockError,
        id="thinking as the last block",
    ),
    pytest.param(
        Message.assistant(ToolUseBlock("dup_1", "a", {}), ToolUseBlock("dup_1", "a", {})),
        DuplicateToolIdError,
        id="repeated tool id in one message",
    ),
    pytest.param(
        Message.assistant(ToolUseBlock("call_old", "a", {})),
        DuplicateToolIdError,
        id="tool id already used in the context",
    ),
    pytest.param(
        Message.assistant(ToolUseBlock("ok_id", "bad name!", {})),
        MalformedToolIdError,
        id="malformed tool name",
    ),
    pytest.param(
        Message.assistant(ToolUseBlock("ok_id", "x" * 65, {})),
        MalformedToolIdError,
        id="tool name too long",
    ),
    pytest.param(Message.assistant(""), EmptyContentError, id="empty text"),
    pytest.param(
        Message.assistant(ToolResultBlock("call_old", "x")),
        MisplacedBlockError,
        id="tool_result in an assistant message",
    ),
]


@pytest.mark.parametrize(("message", "error"), BAD_ASSISTANT_MESSAGES)
def test_bad_assistant_message_is_refused_and_nothing_is_written(
    app: Sessions, message: Message, error: type[Exception]
) -> None:
    session_id = app.start_session(
        model="m", context_window=10_000, max_output_tokens=1_000, tools=RUN
    )
    app.append_message(session_id, Message.user("go"))
    app.append_message(session_id, Message.assistant(ToolUseBlock("call_old", "a", {})))
    app.append_message(session_id, Message.user(ToolResultBlock("call_old", "done")))
    before = len(app.history(session_id))

    with pytest.raises(error):
        app.append_message(session_id, message)

    assert len(app.history(session_id)) == before


RUN = [{"name": "run", "input_schema": {"type": "object"}}]


def test_a_session_starts_with_a_user_message(app: Sessions) -> None:
    session_id = app.start_session(
        model="m", context_window=10_000, max_output_tokens=1_000, tools=RUN
    )

    with pytest.raises(RoleOrderError):
        app.append_message(session_id, Message.assistant("Hello"))
    with pytest.raises(OrphanToolResultError):
        app.append_message(session_id, Message.user(ToolResultBlock("call_x", "?")))

    assert len(app.history(session_id)) == 1


@pytest.mark.parametrize(
    "wire",
    [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": [{"type": "document", "source": {"type": "url"}}]},
        {"role": "user", "content": [{"url": "x"}]},
        {"role": "user", "content": [{"type": "text"}]},
        {"role": "user", "content": 42},
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/bmp", "data": "AAAA"},
                }
            ],
        },
    ],
)
def test_malformed_wire_messages_get_typed_errors(app: Sessions, wire: dict[str, object]) -> None:
    session_id = app.start_session(
        model="m", context_window=10_000, max_output_tokens=1_000, tools=RUN
    )

    with pytest.raises(InvalidMessageError):
        app.append_message(session_id, wire)

    assert len(app.history(session_id)) == 1


def test_malformed_block_is_a_malformed_block_error(app: Sessions) -> None:
    session_id = app.start_session(
        model="m", context_window=10_000, max_output_tokens=1_000, tools=RUN
    )
    with pytest.raises(MalformedBlockError, match="a search_result needs a non-blank source"):
        app.append_message(session_id, {"role": "user", "content": [{"type": "search_result"}]})


def test_unknown_session_is_a_typed_error(app: Sessions) -> None:
    missing = uuid4()
    with pytest.raises(UnknownSessionError, match=str(missing)):
        app.append_message(missing, Message.user("hello"))
    with pytest.raises(UnknownSessionError):
        app.prepare_request(missing)
    with pytest.raises(UnknownSessionError):
        app.history(missing)


def test_valid_parallel_results_are_accepted(started: tuple[Sessions, object]) -> None:
    app, session_id = started
    position = app.append_message(
        session_id,  # type: ignore[arg-type]
        Message.user(
            ToolResultBlock("call_a", "1 failed", is_error=True),
            ToolResultBlock("call_b", "def parse(): ..."),
            TextBlock("Also check the tests."),
        ),
    )
    assert position == 2


def test_a_document_the_api_produced_with_an_empty_text_is_taken_and_sent_unchanged(
    app: Sessions,
) -> None:
    # A web fetch of an empty page comes back as a text document with empty data, and a
    # field this version does not know: the session keeps both as they came.
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": ""},
        "title": "https://example.org/empty",
        "citations": {"enabled": True},
        "retrieved_at": "2026-11-20T10:15:00Z",
    }
    session_id = app.start_session(
        model="m", context_window=10_000, max_output_tokens=1_000, tools=RUN
    )
    app.append_message(
        session_id, {"role": "user", "content": [{"type": "text", "text": "Read it."}, document]}
    )

    prepared = app.prepare_request(session_id)
    sent = prepared.context.messages[-1].to_wire()

    assert sent["content"][-1] == document
    # and the request holding it is one the API takes
    body = render_request(prepared.context, model="m", max_tokens=prepared.max_tokens)
    assert violations(body) == []
