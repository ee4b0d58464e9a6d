"""Shapes today's Messages API returns or takes that earlier checks did not know: progress
updates between tool calls, the models that take `role: "system"` messages, cache
breakpoints a host set on its own blocks, and server tools across replies
(docs/current-api.md#request-rules-and-their-sources).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.application.ports import RequestOptions
from abridged.application.service import Sessions
from abridged.domain.capabilities import capabilities_for
from abridged.domain.errors import InvalidMessageError
from abridged.domain.messages import Message
from abridged.domain.tokens import SYSTEM_MESSAGE_OPEN
from tests.support.anthropic_rules import assert_valid_request
from tests.support.builders import TOOLS, words

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E"
    "rkJggg=="
)


def start(app: Sessions, model: str = "claude-fable-5-1", tools: Any = TOOLS) -> UUID:
    return app.start_session(
        model=model,
        context_window=50_000,
        max_output_tokens=2_000,
        system="You are a careful coding agent.",
        tools=tools,
    )


def body_of(app: Sessions, session_id: UUID, **options: Any) -> dict[str, Any]:
    prepared = app.prepare_request(session_id)
    body = render_request(
        prepared.context, model=prepared.model, max_tokens=prepared.max_tokens, **options
    )
    assert_valid_request(body)
    return body


@pytest.mark.parametrize("model", ["claude-sonnet-5", "claude-haiku-5"])
def test_a_model_the_api_gives_no_system_messages_gets_them_as_marked_text(
    app: Sessions, model: str
) -> None:
    # "This feature is not available on Claude Sonnet 5" (build-with-claude/mid-conversation-
    # system-messages), where `role: "system"` is a 400; Haiku 5 is not on the page's list.
    assert not capabilities_for(model).system_messages
    session_id = start(app, model)
    app.append_message(session_id, Message.user("Fix the parser."))
    app.append_message(session_id, Message.system("Answer in French."))
    messages = body_of(app, session_id)["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert messages[0]["content"][-1]["text"].startswith(SYSTEM_MESSAGE_OPEN)


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-haiku-5-5"])
def test_sonnet_and_haiku_5_5_get_system_messages_and_tool_changes_as_sent(
    app: Sessions, model: str
) -> None:
    # The page's list names them (as of 2026-11): a tool added mid-conversation is added,
    # not described in the user's text.
    assert capabilities_for(model).system_messages
    assert capabilities_for(model).tool_changes
    session_id = start(app, model)
    app.append_message(session_id, Message.user("Fix the parser."))
    addition = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "run_command"}}
    french = {"type": "text", "text": "Answer in French."}
    app.append_message(session_id, {"role": "system", "content": [french, addition]})
    messages = body_of(app, session_id)["messages"]
    assert [m["role"] for m in messages] == ["user", "system"]
    assert [b["type"] for b in messages[1]["content"]] == ["text", "tool_addition"]
    assert messages[1]["content"][1]["tool"] == addition["tool"]


def document(n: int, ttl: str | None = None) -> dict[str, Any]:
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    source = {"type": "text", "media_type": "text/plain", "data": f"Document {n}. " + words(40)}
    return {"type": "document", "source": source, "cache_control": control}


def test_breakpoints_on_the_hosts_documents_do_not_add_to_the_four(app: Sessions) -> None:
    # Kept on a document, a host's breakpoints came on top of the ones abridged places: three
    # documents made five in all, a 400 ("You can define up to 4 cache breakpoints").
    session_id = start(app)
    docs = [document(1), document(2), document(3, "1h")]
    app.append_message(
        session_id, {"role": "user", "content": [*docs, {"type": "text", "text": "Compare them."}]}
    )
    body = body_of(app, session_id)
    assert all("cache_control" not in block for block in body["messages"][0]["content"][:3])
    assert app.history(session_id)  # the documents are kept, without the breakpoints


def test_a_tool_result_holding_documents_and_an_error_image_is_sent_as_it_came(
    app: Sessions,
) -> None:
    session_id = start(app)
    app.append_message(session_id, Message.user("Render it."))
    app.record_reply(
        session_id,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_r", "name": "run_command", "input": {}}],
        },
    )
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_r",
        "is_error": True,
        "content": [document(1), document(2), document(3), image],
    }
    app.append_message(session_id, {"role": "user", "content": [result]})
    sent = body_of(app, session_id)["messages"][-1]["content"][0]
    assert sent["is_error"] is True
    assert [b["type"] for b in sent["content"]] == ["document", "document", "document", "image"]


def test_a_hosts_five_minute_tool_breakpoint_keeps_ours_at_five_minutes(app: Sessions) -> None:
    # "Cache entries with longer TTL must appear before shorter TTLs": the tools come first,
    # so a one-hour breakpoint of ours after the host's five-minute one was a 400.
    tools = [{**TOOLS[0], "cache_control": {"type": "ephemeral"}}, TOOLS[1]]
    session_id = start(app, tools=tools)
    app.append_message(session_id, Message.user("Hi"))
    body = body_of(app, session_id, ttl="1h")
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    long_tools = [{**TOOLS[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}, TOOLS[1]]
    session_id = start(app, tools=long_tools)
    app.append_message(session_id, Message.user("Hi"))
    body = body_of(app, session_id, ttl="1h")
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_a_progress_update_before_the_second_call_is_recorded_and_sent_back(
    app: Sessions,
) -> None:
    # Fable 5.1 and Opus 5.5 write a thinking block right before each tool call they
    # introduce, so a reply with parallel calls has thinking between them (build-with-claude/
    # thinking, "Progress updates between tool calls"). Such a reply was refused as misplaced.
    session_id = start(app)
    app.append_message(session_id, Message.user("Read both files."))
    reply = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "", "signature": "sig-reasoning"},
            {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}},
            {"type": "thinking", "thinking": "Now the other one.", "signature": "sig-update"},
            {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {}},
        ],
    }
    app.record_reply(session_id, reply)
    app.append_message(
        session_id,
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "b"},
            ],
        },
    )
    assert body_of(app, session_id)["messages"][1] == reply


WEB_SEARCH: dict[str, Any] = {"type": "web_search_20250305", "name": "web_search"}
SERVER_TOOLS: tuple[dict[str, Any], ...] = (*TOOLS, WEB_SEARCH)


def search(call_id: str) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": call_id, "name": "web_search", "input": {}}


def found(call_id: str) -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": call_id, "content": []}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks],
    }


def unmarked(message: dict[str, Any]) -> dict[str, Any]:
    """`message` without the cache breakpoints a request puts on its blocks."""
    blocks = [{k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]]
    return {**message, "content": blocks}


class Clock:
    """Per-turn content that changes at every request (the host's `ContextProvider`)."""

    def __init__(self) -> None:
        self.ticks = 0

    def content(self, session_id: UUID) -> str:
        self.ticks += 1
        return f"It is {self.ticks} o'clock."


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "claude-fable-5-1"])
def test_a_server_call_beside_client_calls_waits_for_their_results(
    make_app: Any, model: str
) -> None:
    # A reply that calls a server tool and a client tool at once holds no result for the
    # server call: the API runs it when the client results come back, in a user message that
    # holds nothing else, and the next reply starts with its result (agents-and-tools/
    # tool-use/server-tools, "Mixing server tools and client tools in one turn"). Such a reply
    # was refused; per-turn content after those results would end the turn (a 400).
    app = make_app(context_provider=Clock())
    session_id = start(app, model, tools=SERVER_TOOLS)
    app.append_message(session_id, Message.user("Find the article and run uname."))
    body_of(app, session_id)
    mixed = assistant(
        "Both at once.",
        search("srvtoolu_1"),
        {"type": "tool_use", "id": "toolu_1", "name": "run_command", "input": {}},
    )
    app.record_reply(session_id, mixed)
    results = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Linux"}],
    }
    app.append_message(session_id, results)
    sent = body_of(app, session_id)["messages"]
    assert unmarked(sent[-1])["content"] == results["content"]  # nothing after the results
    app.record_reply(session_id, assistant(found("srvtoolu_1"), "The article says..."))
    app.append_message(session_id, Message.user("Thanks."))
    body_of(app, session_id)


def test_a_paused_turn_is_sent_back_as_it_is_and_its_continuation_follows(
    app: Sessions,
) -> None:
    # stop_reason "pause_turn": "continue the conversation by sending the response back
    # as-is" (build-with-claude/handling-stop-reasons); the API joins the reply that follows
    # to the paused one. Both were refused: a request needed a user message last, and a
    # reply after a reply was two assistant messages in a row.
    session_id = start(app, "claude-opus-5-5", tools=SERVER_TOOLS)
    app.append_message(session_id, Message.user("Search the news."))
    paused = assistant(search("srvtoolu_1"), found("srvtoolu_1"), search("srvtoolu_2"))
    app.record_reply(session_id, paused)
    sent = body_of(app, session_id)["messages"]
    assert unmarked(sent[-1]) == paused  # the request ends with the paused reply, as it came
    app.record_reply(session_id, assistant(found("srvtoolu_2"), "Here is the news."))
    app.append_message(session_id, Message.user("Thanks."))
    assert [m["role"] for m in body_of(app, session_id)["messages"]] == [
        "user",
        "assistant",
        "assistant",
        "user",
    ]


BROKEN_SERVER_TURNS = [
    pytest.param(
        [assistant(search("srvtoolu_1")), Message.user("Never mind.")],
        "UnansweredToolUseError",
        id="a prompt instead of the paused turn's continuation",
    ),
    pytest.param(
        [
            assistant(
                search("srvtoolu_1"),
                {"type": "tool_use", "id": "toolu_1", "name": "run_command", "input": {}},
            ),
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
                    {"type": "text", "text": "And hurry."},
                ],
            },
        ],
        "MisplacedBlockError",
        id="text after the client results while a server call waits",
    ),
    pytest.param(
        [assistant(search("srvtoolu_1")), assistant("Nothing found.")],
        "UnansweredToolUseError",
        id="a continuation without the waited-for result",
    ),
    pytest.param(
        [assistant(found("srvtoolu_9"), "Found.")],
        "OrphanToolResultError",
        id="a server result for a call no reply made",
    ),
]


@pytest.mark.parametrize(("messages", "error"), BROKEN_SERVER_TURNS)
def test_a_server_turn_the_api_would_refuse_is_refused_and_writes_nothing(
    app: Sessions, messages: list[Any], error: str
) -> None:
    session_id = start(app, tools=SERVER_TOOLS)
    app.append_message(session_id, Message.user("Search."))
    *first, last = messages
    for message in first:
        if isinstance(message, dict) and message["role"] == "assistant":
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    before = len(app.history(session_id))
    adding = (
        app.record_reply
        if isinstance(last, dict) and last["role"] == "assistant"
        else app.append_message
    )
    with pytest.raises(InvalidMessageError) as refused:
        adding(session_id, last)
    assert type(refused.value).__name__ == error
    assert len(app.history(session_id)) == before


def test_a_loop_whose_thinking_a_model_switch_took_out_goes_on_with_manual_thinking_off(
    app: Sessions,
) -> None:
    # Sonnet 4.6 to Opus 4.8 (which cannot read Sonnet's thinking, so the switch takes it
    # out of view) and back, inside one tool loop led by thinking. With manual thinking the
    # API requires the loop's first reply to open with thinking; the request was refused
    # ("thinking cannot be turned on in the middle of a tool loop") at every step until the
    # next prompt. It now goes with manual thinking left out, as after a cut inside the loop.
    session_id = start(app, "claude-sonnet-4-6")
    app.append_message(session_id, Message.user("Fix the parser."))
    manual = RequestOptions(thinking={"type": "enabled", "budget_tokens": 1_024})
    for step, model in enumerate(["claude-sonnet-4-6", "claude-opus-4-8", "claude-sonnet-4-6"]):
        app.reconfigure(session_id, model=model)
        body = body_of(app, session_id, options=manual)
        assert ("thinking" in body) == (step == 0)
        app.record_reply(
            session_id,
            assistant(
                {"type": "thinking", "thinking": "Look first.", "signature": f"sig{step}"},
                {"type": "tool_use", "id": f"toolu_{step}", "name": "read_file", "input": {}},
            ),
        )
        app.append_message(
            session_id,
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{step}", "content": "x"}
                ],
            },
        )
    assert "thinking" not in body_of(app, session_id, options=manual)
    app.record_reply(session_id, assistant("Fixed."))
    app.append_message(session_id, Message.user("Thanks."))
    assert body_of(app, session_id, options=manual)["thinking"] == manual.thinking


def test_a_paused_reply_holding_an_earlier_replys_result_is_never_stuck(app: Sessions) -> None:
    # No cut falls between a reply and the one holding its server call's result, so the two
    # and the results between go together. The second was capped as if alone: beside the
    # first one's thinking (never reduced) the three outgrew the budget, and the paused
    # turn's continuation, which must send them, could not be requested (ContextOverflowError
    # at every try). It is now capped to fit beside the other two.
    session_id = app.start_session(
        model="claude-opus-4-8",
        context_window=6_000,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=SERVER_TOOLS,
    )
    app.append_message(session_id, Message.user("Find the article and run the tests."))
    run = {"type": "tool_use", "id": "toolu_1", "name": "run_command", "input": {}}
    run["input"] = {"command": words(3_000)}
    thinking = {"type": "thinking", "thinking": words(2_800), "signature": "sig-1"}
    app.record_reply(session_id, assistant(thinking, search("srvtoolu_1"), run))
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": words(3_000)}
    app.append_message(session_id, {"role": "user", "content": [result]})
    body_of(app, session_id)
    app.record_reply(session_id, assistant(found("srvtoolu_1"), words(3_000), search("srvtoolu_2")))
    body_of(app, session_id)  # the continuation of the paused turn
