"""The catalogue of bad inputs to the API: each case, the typed error it must get, and a note
of what is wrong. `test_catalogue.py` runs every case against a SQLite file and checks the
store is unchanged; `docs/reliability.md` lists them."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any
from uuid import UUID, uuid4

import attrs

from abridged.application.service import Sessions
from abridged.domain import errors
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock
from abridged.domain.settings import CompactionSettings

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(16)).decode()


@attrs.frozen
class Bases:
    """Sessions the cases act on: `replied` ends with the model's reply (a user message comes
    next), `asking` with a user message (a reply comes next), `pending` with a tool call."""

    replied: UUID
    asking: UUID
    pending: UUID
    single: UUID
    """Holds one user message."""


def make_bases(app: Sessions) -> Bases:
    def new() -> UUID:
        return app.start_session(
            model="claude-sonnet-4-5",
            context_window=20_000,
            max_output_tokens=1_000,
            system="You are terse.",
            tools=[{"name": "run", "input_schema": {"type": "object"}}],
        )

    replied = new()
    app.append_message(replied, Message.user("hello"))
    app.record_reply(replied, Message.assistant("hi"))
    asking = new()
    app.append_message(asking, Message.user("hello"))
    app.record_reply(asking, Message.assistant(ToolUseBlock("toolu_base", "run", {})))
    app.append_message(asking, Message.user(ToolResultBlock("toolu_base", "ok")))
    pending = new()
    app.append_message(pending, Message.user("hello"))
    app.record_reply(pending, Message.assistant(ToolUseBlock("toolu_pending", "run", {})))
    single = new()
    app.append_message(single, Message.user("hello"))
    return Bases(replied, asking, pending, single)


Act = Callable[[Sessions, Bases], Any]


@attrs.frozen
class Case:
    name: str
    act: Act
    error: type[errors.SessionError]


def _user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _reply(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def _image(data: str, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def append(message: Any) -> Act:
    return lambda app, b: app.append_message(b.replied, message)


def reply(message: Any) -> Act:
    return lambda app, b: app.record_reply(b.asking, message)


def start(**arguments: Any) -> Act:
    values: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "context_window": 20_000,
        "max_output_tokens": 1_000,
    }
    values.update(arguments)
    return lambda app, b: app.start_session(**values)


def tools(*definitions: Any) -> Act:
    return start(tools=list(definitions))


E = errors
API_CASES: tuple[Case, ...] = (
    # Messages that are not of the Messages API's shape.
    Case("role 'system'", append({"role": "system", "content": "x"}), E.InvalidMessageError),
    Case("no role", append({"content": "x"}), E.InvalidMessageError),
    Case("message is a list", append([{"role": "user"}]), E.MalformedBlockError),
    Case("content is null", append({"role": "user", "content": None}), E.MalformedBlockError),
    Case("content is a number", append({"role": "user", "content": 3}), E.MalformedBlockError),
    Case("content is an empty list", append(_user()), E.EmptyContentError),
    Case("empty text", append(_user({"type": "text", "text": ""})), E.EmptyContentError),
    Case("blank text", append(_user({"type": "text", "text": " \n\t"})), E.EmptyContentError),
    Case("block is a string", append(_user("hi")), E.MalformedBlockError),
    # A block of a type not known yet passes through unchanged (issue 7); one with no type
    # at all cannot be anything.
    Case("block without a type", append(_user({"kind": "video"})), E.MalformedBlockError),
    Case("block type not a string", append(_user({"type": 5})), E.MalformedBlockError),
    Case("text block without text", append(_user({"type": "text"})), E.MalformedBlockError),
    Case("text is a number", append(_user({"type": "text", "text": 5})), E.MalformedBlockError),
    # Images.
    Case(
        "image by url without url",
        append(_user({"type": "image", "source": {"type": "url", "url": ""}})),
        E.MalformedBlockError,
    ),
    Case(
        "image source type 'ftp'",
        append(_user({"type": "image", "source": {"type": "ftp", "url": "ftp://x/y.png"}})),
        E.MalformedBlockError,
    ),
    Case(
        "image by file without file_id",
        append(_user({"type": "image", "source": {"type": "file", "file_id": ""}})),
        E.MalformedBlockError,
    ),
    Case("image media type bmp", append(_user(_image(PNG, "image/bmp"))), E.MalformedBlockError),
    Case("image data not base64", append(_user(_image("!!not base64!!"))), E.MalformedBlockError),
    Case("image data not ASCII", append(_user(_image("ïïïï"))), E.MalformedBlockError),
    Case("image base64 padding wrong", append(_user(_image("iVBORw0KGgo"))), E.MalformedBlockError),
    Case(
        "PNG bytes said to be JPEG", append(_user(_image(PNG, "image/jpeg"))), E.MalformedBlockError
    ),
    Case("JPEG bytes said to be PNG", append(_user(_image(JPEG))), E.MalformedBlockError),
    Case(
        "text said to be a GIF",
        append(_user(_image(base64.b64encode(b"hello world").decode(), "image/gif"))),
        E.MalformedBlockError,
    ),
    Case(
        "GIF bytes said to be WebP",
        append(_user(_image(base64.b64encode(b"GIF89a" + bytes(10)).decode(), "image/webp"))),
        E.MalformedBlockError,
    ),
    Case("image without data", append(_user(_image(""))), E.MalformedBlockError),
    # Blocks in the wrong message or place.
    Case(
        "tool_use in a user message",
        append(_user({"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}})),
        E.MisplacedBlockError,
    ),
    Case(
        "thinking in a user message",
        append(_user({"type": "thinking", "thinking": "x", "signature": "s"})),
        E.MisplacedBlockError,
    ),
    Case(
        "tool_result answering nothing",
        append(_user({"type": "tool_result", "tool_use_id": "toolu_nope", "content": "x"})),
        E.OrphanToolResultError,
    ),
    Case(
        "tool_result id ending in a newline",
        append(_user({"type": "tool_result", "tool_use_id": "toolu_1\n", "content": "x"})),
        E.MalformedToolIdError,
    ),
    Case(
        "tool_result id with a space",
        append(_user({"type": "tool_result", "tool_use_id": "toolu 1", "content": "x"})),
        E.MalformedToolIdError,
    ),
    Case(
        "tool_result content a number",
        append(_user({"type": "tool_result", "tool_use_id": "toolu_1", "content": 7})),
        E.MalformedBlockError,
    ),
    Case(
        "tool_result is_error 'yes'",
        append(
            _user({"type": "tool_result", "tool_use_id": "t", "content": "", "is_error": "yes"})
        ),
        E.MalformedBlockError,
    ),
    Case(
        "tool_result holding thinking",
        append(
            _user(
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "thinking", "thinking": "x", "signature": "s"}],
                }
            )
        ),
        E.MalformedBlockError,
    ),
    Case(
        "tool_result after text",
        lambda app, b: app.append_message(
            b.pending,
            _user(
                {"type": "text", "text": "here"},
                {"type": "tool_result", "tool_use_id": "toolu_pending", "content": "x"},
            ),
        ),
        E.MisplacedBlockError,
    ),
    Case(
        "one tool call answered twice",
        lambda app, b: app.append_message(
            b.pending,
            _user(
                {"type": "tool_result", "tool_use_id": "toolu_pending", "content": "x"},
                {"type": "tool_result", "tool_use_id": "toolu_pending", "content": "y"},
            ),
        ),
        E.DuplicateToolIdError,
    ),
    Case(
        "tool call left unanswered",
        lambda app, b: app.append_message(b.pending, Message.user("and then?")),
        E.UnansweredToolUseError,
    ),
    Case(
        "tool_result for another call",
        lambda app, b: app.append_message(b.pending, Message.user(ToolResultBlock("toolu_x", "x"))),
        E.OrphanToolResultError,
    ),
    # Order and identity.
    Case("two replies in a row", append(Message.assistant("again")), E.RoleOrderError),
    Case(
        "two user messages in a row",
        lambda app, b: app.append_message(b.asking, Message.user("again")),
        E.RoleOrderError,
    ),
    Case("a reply that is a user message", reply(Message.user("x")), E.RoleOrderError),
    Case(
        "unknown session",
        lambda app, b: app.append_message(uuid4(), Message.user("x")),
        E.UnknownSessionError,
    ),
    Case(
        "session id not a UUID",
        lambda app, b: app.append_message("not-a-uuid", Message.user("x")),
        E.UnknownSessionError,
    ),
    Case(
        "session id a number",
        lambda app, b: app.append_message(42, Message.user("x")),  # type: ignore[arg-type]
        E.UnknownSessionError,
    ),
    Case(
        "history of an unknown session", lambda app, b: app.history(uuid4()), E.UnknownSessionError
    ),
    # What JSON cannot carry, and what is too large.
    Case(
        "a lone surrogate in text",
        append(Message.user("bad \ud800 text")),
        E.UnencodableContentError,
    ),
    Case(
        "a message over max_message_bytes",
        append(Message.user("x" * 6_000_001)),
        E.MessageTooLargeError,
    ),
    Case(
        "a tool output over max_message_bytes",
        lambda app, b: app.append_message(
            b.pending, Message.user(ToolResultBlock("toolu_pending", "y " * 3_100_000))
        ),
        E.MessageTooLargeError,
    ),
    # Model replies.
    Case(
        "tool_use id ending in a newline",
        reply(_reply({"type": "tool_use", "id": "toolu_2\n", "name": "run", "input": {}})),
        E.MalformedToolIdError,
    ),
    Case(
        "tool name ending in a newline",
        reply(_reply({"type": "tool_use", "id": "toolu_2", "name": "run\n", "input": {}})),
        E.MalformedToolIdError,
    ),
    Case(
        "tool name of 65 characters",
        reply(_reply({"type": "tool_use", "id": "toolu_2", "name": "r" * 65, "input": {}})),
        E.MalformedToolIdError,
    ),
    Case(
        "tool input a list",
        reply(_reply({"type": "tool_use", "id": "toolu_2", "name": "run", "input": [1]})),
        E.MalformedBlockError,
    ),
    Case(
        "tool input nested 100,000 deep",
        reply(Message.assistant(ToolUseBlock("toolu_2", "run", _nested(100_000)))),
        E.UnencodableContentError,
    ),
    Case(
        "tool input with a lone surrogate",
        reply(Message.assistant(ToolUseBlock("toolu_2", "run", {"path": "\udcff"}))),
        E.UnencodableContentError,
    ),
    Case(
        "unsigned thinking before text",
        reply(_reply({"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "ok"})),
        E.UnsignedThinkingError,
    ),
    Case(
        "thinking between texts",
        reply(
            _reply(
                {"type": "text", "text": "a"},
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "text", "text": "b"},
            )
        ),
        E.MisplacedBlockError,
    ),
    Case(
        "redacted thinking without data",
        reply(_reply({"type": "redacted_thinking", "data": ""}, {"type": "text", "text": "ok"})),
        E.MalformedBlockError,
    ),
    Case(
        "tool_result in a reply",
        reply(_reply({"type": "tool_result", "tool_use_id": "toolu_base", "content": "x"})),
        E.MisplacedBlockError,
    ),
    Case(
        "one tool_use id twice in a reply",
        reply(
            Message.assistant(
                ToolUseBlock("toolu_d", "run", {}), ToolUseBlock("toolu_d", "run", {})
            )
        ),
        E.DuplicateToolIdError,
    ),
    Case(
        "a tool_use id already in the context",
        reply(Message.assistant(ToolUseBlock("toolu_base", "run", {}))),
        E.DuplicateToolIdError,
    ),
    # Starting a session.
    Case("context_window a string", start(context_window="8000"), E.InvalidArgumentError),
    Case("context_window true", start(context_window=True), E.InvalidArgumentError),
    Case("max_output_tokens a string", start(max_output_tokens="100"), E.InvalidArgumentError),
    Case("max_output_tokens 0", start(max_output_tokens=0), E.InvalidSettingsError),
    Case(
        "max_output_tokens over the window", start(max_output_tokens=30_000), E.InvalidSettingsError
    ),
    Case("negative context_window", start(context_window=-5), E.InvalidSettingsError),
    Case("model empty", start(model=""), E.InvalidArgumentError),
    Case("model None", start(model=None), E.InvalidArgumentError),
    Case("system a number", start(system=123), E.InvalidArgumentError),
    Case("system with a lone surrogate", start(system="a\ud800b"), E.UnencodableContentError),
    Case("session_id not a UUID", start(session_id="abc"), E.InvalidArgumentError),
    Case(
        "session_id of an existing session",
        lambda app, b: start(session_id=b.replied)(app, b),
        E.SessionExistsError,
    ),
    Case(
        "tool without a name",
        tools({"input_schema": {"type": "object"}}),
        E.InvalidToolDefinitionError,
    ),
    Case(
        "tool name with a space",
        tools({"name": "run it", "input_schema": {"type": "object"}}),
        E.InvalidToolDefinitionError,
    ),
    Case(
        "tool definition name ending in a newline",
        tools({"name": "run\n", "input_schema": {"type": "object"}}),
        E.InvalidToolDefinitionError,
    ),
    Case("tool without input_schema", tools({"name": "run"}), E.InvalidToolDefinitionError),
    Case(
        "tool input_schema of type array",
        tools({"name": "run", "input_schema": {"type": "array"}}),
        E.InvalidToolDefinitionError,
    ),
    Case(
        "tool input_schema a list",
        tools({"name": "run", "input_schema": [{"type": "object"}]}),
        E.InvalidToolDefinitionError,
    ),
    Case(
        "tool defined twice",
        tools(
            {"name": "run", "input_schema": {"type": "object"}},
            {"name": "run", "input_schema": {"type": "object"}},
        ),
        E.InvalidToolDefinitionError,
    ),
    Case("tool a string", tools("run"), E.InvalidToolDefinitionError),
    Case("tools a string", start(tools="run"), E.InvalidToolDefinitionError),
    Case(
        "a system prompt leaving no room for the summaries' share",
        lambda app, b: app.reconfigure(
            b.asking,
            system="word " * 10_000,
            settings=CompactionSettings(summaries_share=0.5, summary_share=0.1),
        ),
        E.ContextTooSmallError,
    ),
    Case(
        "tool calls brought into a session without tools",
        start(
            messages=[
                Message.user("hello"),
                Message.assistant(ToolUseBlock("toolu_new", "run", {})),
                Message.user(ToolResultBlock("toolu_new", "ok")),
            ]
        ),
        E.InvalidMessageError,
    ),
    # Requests and compactions.
    Case(
        "a request after the model's reply",
        lambda app, b: app.prepare_request(b.replied),
        E.RoleOrderError,
    ),
    Case(
        "compacting a short session", lambda app, b: app.compact(b.single), E.NothingToCompactError
    ),
    Case(
        "compacting an unknown session", lambda app, b: app.compact(uuid4()), E.UnknownSessionError
    ),
    Case("complete without a chat model", lambda app, b: app.complete(b.asking), E.SessionError),
)
