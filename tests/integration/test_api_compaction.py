"""The API's own on-demand compaction as a summarizer, through the real `anthropic` SDK
against the local fake Messages server: the signed block is stored with the compaction,
sent first in later requests with a breakpoint on it and the kept turns verbatim after it;
a range that would end in an unanswered tool call is never sent for compaction."""

from __future__ import annotations

import json
from collections.abc import Iterator
from uuid import UUID

import pytest

from abridged.adapters.anthropic.compaction import COMPACTION_BETA, ApiCompactionSummarizer
from abridged.adapters.anthropic.request import render_request
from abridged.application.auditing import audit_session
from abridged.application.ports import Summary
from abridged.application.service import Sessions
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.anthropic_rules import assert_valid_request
from tests.support.api_features import sign
from tests.support.builders import TOOLS, exchange, thinking_exchange, turn, words
from tests.support.checks import check_request
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    CANNED_TEXT,
    FakeAnthropic,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
)
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
MODEL = "claude-opus-5"
OWN_SUMMARY = words(30, "fact")


@pytest.fixture
def server(fake_anthropic: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """The fake API; every request body it received must be valid."""
    yield fake_anthropic
    assert not fake_anthropic.violations


def service(server: FakeAnthropic) -> Sessions:
    summarizer = ApiCompactionSummarizer(
        server.client(),
        fallback=FakeSummarizer(OWN_SUMMARY),
    )
    return Sessions(
        counter=COUNTER, summarizer=summarizer, env={"PERSISTENCE_MODULE": "eventsourcing.popo"}
    )


def start(app: Sessions, model: str = MODEL, ledger_share: float = 0.3) -> UUID:
    return app.start_session(
        model=model,
        context_window=20_000,
        max_output_tokens=400,
        system="You are a careful coding agent.",
        tools=TOOLS,
        # The default cut (recent tokens) may fall inside a turn: the API compacts any range
        # that leaves no tool call unanswered.
        settings=CompactionSettings(threshold_floor_tokens=0, ledger_share=ledger_share),
    )


def converse(app: Sessions, server: FakeAnthropic, session_id: UUID, turns: int) -> None:
    """Turns as a host plays them; each request is checked, then sent to the fake API."""
    client = server.client()
    for i in range(turns):
        for message in turn(f"Request {i}", [words(100)]):
            if message.role is not Role.ASSISTANT:
                app.append_message(session_id, message)
                continue
            prepared = app.prepare_request(session_id)
            body = check_request(prepared, COUNTER)
            client.beta.messages.create(**body, betas=[COMPACTION_BETA])
            app.record_reply(session_id, message)


def compactions(app: Sessions, session_id: UUID) -> list[Session.CompactionCompleted]:
    return [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]


def test_the_signed_block_is_kept_and_leads_later_requests(server: FakeAnthropic) -> None:
    app = service(server)
    session_id = start(app)

    converse(app, server, session_id, 6)
    app.append_message(session_id, Message.user("Go on."))

    app.compact(session_id)

    (first,) = compactions(app, session_id)
    block = json.loads(first.summary.block or "null")
    assert block == {
        "type": "compaction",
        "content": CANNED_TEXT,
        "signature": sign(CANNED_TEXT),
        "encrypted_content": None,
    }
    assert [json.loads(i)["type"] for i in first.summarizer_iterations] == ["compaction"]
    assert first.summarizer_input_tokens > 0
    sent = [r for r in server.requests_to() if "compaction" in (r.body or {})]
    assert sent
    assert all(r.headers.get("anthropic-beta") == COMPACTION_BETA for r in sent)
    # The next request: the block first, byte for byte, with a breakpoint on it.
    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=MODEL, max_tokens=400)
    assert_valid_request(body)
    lead = body["messages"][0]
    assert lead["role"] == "assistant"
    assert {k: v for k, v in lead["content"][0].items() if k != "cache_control"} == json.loads(
        compactions(app, session_id)[-1].summary.block or "null"
    )
    assert lead["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][1]["role"] == "user"
    reply = server.client().beta.messages.create(**body, betas=[COMPACTION_BETA])
    assert reply.stop_reason == "end_turn"  # the fake API verified the block's signature
    app.record_reply(session_id, Message.assistant("Going on."))
    converse(app, server, session_id, 3)  # later requests keep the block first
    assert audit_session(app, session_id).ok


@pytest.mark.parametrize(
    ("ledger_share", "lead"),
    [
        (0.3, [["compaction"], ["text"], ["tool_use"]]),  # the ledger's user message between
        (0.0, [["compaction", "tool_use"]]),  # the block leads the first kept reply
    ],
)
def test_a_cut_inside_a_turn_keeps_the_apis_block_and_the_kept_loop(
    server: FakeAnthropic, ledger_share: float, lead: list[list[str]]
) -> None:
    app = service(server)
    session_id = start(app, ledger_share=ledger_share)
    converse(app, server, session_id, 2)
    app.append_message(session_id, Message.user("Refactor the exporter."))
    for _ in range(12):  # more than the recent tail may keep whole
        call, result = exchange([words(1_000)])
        app.record_reply(session_id, call)
        app.append_message(session_id, result)

    app.compact(session_id)

    (compaction,) = compactions(app, session_id)
    assert compaction.summary.block is not None  # the API wrote it: no fallback
    # The recent-tokens cut fell inside the tool loop, at a reply: its calls keep their results.
    appended = [e for e in app.history(session_id) if isinstance(e, Session.MessageAppended)]
    assert appended[compaction.retained_from].message.role is Role.ASSISTANT
    body = check_request(app.prepare_request(session_id), COUNTER)
    shown = [[b["type"] for b in m["content"]] for m in body["messages"][: len(lead)]]
    assert shown == lead
    reply = server.client().beta.messages.create(**body, betas=[COMPACTION_BETA])
    assert reply.stop_reason == "end_turn"  # the fake API verified the block
    app.record_reply(session_id, Message.assistant("Refactored."))
    assert audit_session(app, session_id).ok


def test_a_changed_block_is_refused_by_the_api_with_its_error_code(
    fake_anthropic: FakeAnthropic,
) -> None:
    import anthropic

    body = {
        "model": MODEL,
        "max_tokens": 100,
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "compaction", "content": "Edited.", "signature": sign("x")}],
            },
            {"role": "user", "content": "Go on."},
        ],
    }
    with pytest.raises(anthropic.BadRequestError) as raised:
        fake_anthropic.client().messages.create(**body)  # type: ignore[call-overload]
    assert raised.value.error_code == "compaction_content_mismatch"


def test_a_range_ending_in_a_tool_call_is_never_sent_for_compaction(
    server: FakeAnthropic,
) -> None:
    summarizer = ApiCompactionSummarizer(
        server.client(),
        fallback=FakeSummarizer(OWN_SUMMARY),
    )
    call, _ = exchange(["ok"])

    summary = summarizer.summarize(
        [Message.user("Run it."), call], max_tokens=200, session_model=MODEL
    )

    assert summary.block is None
    assert summary.text == OWN_SUMMARY
    assert server.requests_to() == []


def test_a_range_ending_inside_a_turn_of_a_session_with_thinking_is_ours(
    server: FakeAnthropic,
) -> None:
    # The kept turns would start with a reply the block may have to lead; a reply with
    # thinking must start with it.
    summarizer = ApiCompactionSummarizer(server.client(), fallback=FakeSummarizer(OWN_SUMMARY))
    call, result = thinking_exchange("ok")

    summary = summarizer.summarize(
        [Message.user("Run it."), call, result], max_tokens=200, session_model=MODEL
    )

    assert summary.block is None
    assert server.requests_to() == []


def test_a_model_without_compaction_keeps_our_own_summarizer(server: FakeAnthropic) -> None:
    summarizer = ApiCompactionSummarizer(
        server.client(),
        fallback=FakeSummarizer(OWN_SUMMARY),
    )
    messages = [Message.user("Hi"), Message.assistant("Hello.")]

    summary = summarizer.summarize(messages, max_tokens=200, session_model="claude-sonnet-4-5")

    assert summary.block is None
    assert server.requests_to() == []


def test_a_reply_compacted_by_the_api_at_its_threshold_leads_the_view(
    server: FakeAnthropic,
) -> None:
    app = service(server)
    session_id = start(app)
    converse(app, server, session_id, 3)
    app.append_message(session_id, Message.user("Carry on."))
    summary = "Three requests were handled; the tests pass."
    reply = {
        "role": "assistant",
        "content": [
            {"type": "compaction", "content": summary, "signature": sign(summary)},
            {"type": "text", "text": "Carrying on."},
        ],
    }

    app.record_reply(session_id, reply)
    app.append_message(session_id, Message.user("Next."))
    body = check_request(app.prepare_request(session_id), COUNTER)

    assert body["messages"][0]["content"][0] == reply["content"][0]
    assert [m["role"] for m in body["messages"]] == ["assistant", "user"]
    (event,) = [e for e in app.history(session_id) if isinstance(e, Session.ApiCompacted)]
    assert event.summary.text == summary
    assert event.tokens_after < event.tokens_before
    server.client().messages.create(**body)  # the fake API takes it: the block leads
    assert app.stats(session_id).compactions_by_trigger == {"api": 1}
    assert audit_session(app, session_id).ok


def test_a_request_with_tool_changes_goes_with_their_betas(server: FakeAnthropic) -> None:
    from abridged.adapters.anthropic.calls import TOOL_CHANGE_BETAS
    from abridged.adapters.anthropic.chat_model import AnthropicChatModel

    app = service(server)
    session_id = start(app)
    converse(app, server, session_id, 1)
    search = {"name": "search", "input_schema": {"type": "object"}}
    app.reconfigure(session_id, tools=[*TOOLS, search])
    app.append_message(session_id, Message.user("Search it."))
    prepared = app.prepare_request(session_id)

    AnthropicChatModel(server.client(), max_retries=0).send(
        prepared.context, model=MODEL, max_tokens=64
    )

    sent = server.requests_to()[-1]
    assert sent.headers["anthropic-beta"] == ",".join(TOOL_CHANGE_BETAS)
    assert sent.body["messages"][-1]["role"] == "system"


def test_the_async_summarizer_asks_the_api_the_same_way(server: FakeAnthropic) -> None:
    import asyncio

    import anthropic

    from abridged.adapters.anthropic.compaction import AsyncApiCompactionSummarizer

    class Own:
        name = "own"

        async def summarize(self, *_: object, **__: object) -> object:
            raise AssertionError("the API's compaction is available here")

    messages = [Message.user("Fix the export."), Message.assistant("Fixed; tests pass.")]

    async def run() -> object:
        async with anthropic.AsyncAnthropic(
            api_key="sk-ant-test-key", base_url=server.base_url, max_retries=0
        ) as client:
            summarizer = AsyncApiCompactionSummarizer(client, fallback=Own())  # type: ignore[arg-type]
            return await summarizer.summarize(messages, max_tokens=200, session_model=MODEL)

    summary = asyncio.run(run())

    assert isinstance(summary, Summary)
    assert json.loads(summary.block or "null")["signature"] == sign(CANNED_TEXT)
    assert summary.text == CANNED_TEXT
