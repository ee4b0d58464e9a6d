"""The API's on-demand compaction on a model that binds thinking to its prefix, through the
real `anthropic` SDK (beta types) against the local fake Messages server.

The compaction request holds the prefix exactly as requests sent it (same `system` and
`tools`, every message before the kept turns, thinking included), and the kept turns follow
the returned block with nothing between: their thinking stays valid and is sent, with no
refusal (platform.claude.com/docs/en/build-with-claude/compaction-thinking-blocks). The fake
signs the block over the prefix it summarized and accepts later thinking only through it:
a changed system prompt, or a compaction request that left the thinking out, is refused
(or the blocks dropped with `drop_block`), as the API does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast
from uuid import UUID

import anthropic
import pytest

from abridged.adapters.anthropic.compaction import COMPACTION_BETA, ApiCompactionSummarizer
from abridged.adapters.anthropic.request import render_request
from abridged.application.auditing import audit_session
from abridged.application.ports import RequestOptions
from abridged.application.service import Sessions
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, words
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    FakeAnthropic,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
    message,
)
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.thinking_binding import PREFIX_MISMATCH

COUNTER = FakeTokenCounter()
MODEL = "claude-fable-5"
THINKING = {"type": "adaptive"}  # Fable 5.x takes adaptive thinking only (a 400 for "enabled")
OPTIONS = RequestOptions(thinking=THINKING)
SYSTEM = "You are a careful coding agent."


@pytest.fixture
def server(fake_anthropic: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """The fake API; every request body it received must be valid."""
    yield fake_anthropic
    assert not fake_anthropic.violations


def client(server: FakeAnthropic) -> Any:
    """The SDK's client, untyped: these requests carry beta fields."""
    return server.client()


def service(server: FakeAnthropic) -> Sessions:
    summarizer = ApiCompactionSummarizer(server.client(), fallback=FakeSummarizer(words(30)))
    return Sessions(
        counter=COUNTER, summarizer=summarizer, env={"PERSISTENCE_MODULE": "eventsourcing.popo"}
    )


def start(app: Sessions) -> UUID:
    return app.start_session(
        model=MODEL,
        context_window=40_000,
        max_output_tokens=2_048,
        system=SYSTEM,
        tools=TOOLS,
        settings=CompactionSettings(
            threshold_floor_tokens=0, keep_recent_tokens=600, keep_recent_turns=1
        ),
    )


def send(app: Sessions, server: FakeAnthropic, session_id: UUID, reply: str) -> dict[str, Any]:
    """One request as a host sends it, with thinking on; the reply (thinking signed by the
    fake API over its prefix) is recorded. Returns the request's body."""
    body = render_request(
        app.prepare_request(session_id).context, model=MODEL, max_tokens=2_048, options=OPTIONS
    )
    server.enqueue(
        message(
            [
                {"type": "thinking", "thinking": f"Thinking about {reply}", "signature": ""},
                {"type": "text", "text": reply},
            ]
        )
    )
    answer = client(server).beta.messages.create(**body, betas=[COMPACTION_BETA])
    assert answer.input_transformations is None  # nothing dropped: every block passed
    app.record_reply(session_id, answer)
    return body


def converse(app: Sessions, server: FakeAnthropic, session_id: UUID, turns: int) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for i in range(turns):
        app.append_message(session_id, {"role": "user", "content": f"Task {i}: {words(400)}"})
        body = send(app, server, session_id, f"Task {i} is done.")
    return body


def uncached(value: Any) -> Any:
    """`value` without its cache breakpoints (they move; the check leaves them out)."""
    if isinstance(value, dict):
        return {k: uncached(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [uncached(v) for v in value]
    return value


def thinking_in(messages: list[dict[str, Any]]) -> int:
    return sum(
        1 for m in messages for b in m["content"] if isinstance(b, dict) and b["type"] == "thinking"
    )


def test_the_kept_turns_thinking_survives_the_apis_compaction(server: FakeAnthropic) -> None:
    app = service(server)
    session_id = start(app)
    last = converse(app, server, session_id, 6)
    app.append_message(session_id, {"role": "user", "content": "Go on."})

    app.compact(session_id)

    history = app.history(session_id)
    (done,) = [e for e in history if isinstance(e, Session.CompactionCompleted)]
    assert done.summary.block is not None
    assert done.summary.chained_revision is not None
    after = history[history.index(done) :]
    assert not [e for e in after if isinstance(e, Session.ReasoningDowngraded)]
    # The compaction request: the prefix exactly as the last request sent it.
    (asked,) = [r.body for r in server.requests_to() if "compaction" in (r.body or {})]
    assert uncached(asked["system"]) == uncached(last["system"])
    assert asked["tools"] == last["tools"]
    summarized = len(asked["messages"])
    assert uncached(asked["messages"]) == uncached(last["messages"][:summarized])
    assert thinking_in(asked["messages"]) > 0
    # The facts ledger went to the API as instructions, not between the block and the turns.
    assert "Task 0" in asked["compaction"]["instructions"]

    body = send(app, server, session_id, "Going on.")

    lead = body["messages"][0]
    assert lead["content"][0]["type"] == "compaction"
    # The kept turns follow the block verbatim (joined to its message when they start with
    # a reply), with their thinking, which the fake API accepted.
    joined = [{**lead, "content": lead["content"][1:]}] if len(lead["content"]) > 1 else []
    shown = joined + body["messages"][1:]
    then = last["messages"][summarized:]
    assert uncached(shown[: len(then)]) == uncached(then)
    assert thinking_in(shown) >= 1
    assert server.requests_to()[-1].violations == ()
    converse(app, server, session_id, 2)  # later requests keep it valid
    assert audit_session(app, session_id).ok


def reply_to(
    server: FakeAnthropic, messages: list[dict[str, Any]], thought: str, text: str
) -> dict[str, Any]:
    """The model's reply to `messages`, with thinking the fake API signs over its prefix."""
    thinking = {"type": "thinking", "thinking": thought, "signature": ""}
    server.enqueue(message([thinking, {"type": "text", "text": text}]))
    reply = client(server).messages.create(
        model=MODEL, max_tokens=2_048, thinking=THINKING, system=SYSTEM, messages=messages
    )
    return {"role": "assistant", "content": [b.model_dump() for b in reply.content]}


def compacted_conversation(
    server: FakeAnthropic, *, with_thinking: bool = True
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A first turn with signed thinking, then the API's compaction of that request's own
    messages (with their thinking, or not): the block and the kept reply."""
    first = [{"role": "user", "content": "Fix the CSV export."}]
    kept = reply_to(server, first, "The slice drops a row.", "Fixed.")
    second = [*first, kept, {"role": "user", "content": "Add a test."}]
    answer = reply_to(server, second, "A test per row.", "Added.")
    summarized = second if with_thinking else [*first, {**kept, "content": kept["content"][1:]}]
    if not with_thinking:
        summarized.append(second[-1])
    compacted = client(server).beta.messages.create(
        model=MODEL,
        max_tokens=2_048,
        system=SYSTEM,
        messages=summarized,
        betas=[COMPACTION_BETA],
        extra_body={"compaction": {"type": "summarize"}},
    )
    assert compacted.stop_reason == "compaction"
    (block,) = [b.model_dump(exclude_none=True) for b in compacted.content]
    # The kept reply joins the block's assistant message, as the API joins them.
    lead = {"role": "assistant", "content": [block, *answer["content"]]}
    return [lead, {"role": "user", "content": "Thanks."}], block


def test_the_fake_api_accepts_kept_thinking_after_a_block_written_over_its_prefix(
    server: FakeAnthropic,
) -> None:
    messages, block = compacted_conversation(server)
    assert json.dumps(block).count("chain-v1.") == 1

    reply = client(server).messages.create(
        model=MODEL, max_tokens=2_048, thinking=THINKING, system=SYSTEM, messages=messages
    )

    assert reply.content


def test_a_system_prompt_changed_after_the_compaction_is_refused(
    fake_anthropic: FakeAnthropic,
) -> None:
    messages, _ = compacted_conversation(fake_anthropic)

    with pytest.raises(anthropic.BadRequestError) as caught:
        client(fake_anthropic).messages.create(
            model=MODEL,
            max_tokens=2_048,
            thinking=THINKING,
            system="You are a terse coding agent.",
            messages=messages,
        )

    assert PREFIX_MISMATCH in str(caught.value)
    assert "messages.0.content.1" in str(caught.value)  # the kept reply's thinking


def test_with_drop_block_a_changed_system_prompt_drops_the_kept_thinking(
    fake_anthropic: FakeAnthropic,
) -> None:
    messages, _ = compacted_conversation(fake_anthropic)

    raw = client(fake_anthropic).messages.with_raw_response.create(
        model=MODEL,
        max_tokens=2_048,
        thinking={**THINKING, "block_binding": {"prefix_mismatch_behavior": "drop_block"}},
        system="You are a terse coding agent.",
        messages=messages,
        extra_headers={"anthropic-beta": "thinking-binding-controls-2026-08-01"},
    )

    assert [
        (t["message_index"], t["block_index"])
        for t in raw.http_response.json()["input_transformations"]
    ] == [(0, 1)]


def test_a_compaction_that_left_the_thinking_out_does_not_keep_it_valid(
    fake_anthropic: FakeAnthropic,
) -> None:
    messages, _ = compacted_conversation(fake_anthropic, with_thinking=False)

    with pytest.raises(anthropic.BadRequestError) as caught:
        client(fake_anthropic).messages.create(
            model=MODEL, max_tokens=2_048, thinking=THINKING, system=SYSTEM, messages=messages
        )

    assert PREFIX_MISMATCH in str(caught.value)


def test_where_the_prefix_cannot_be_summarized_as_sent_the_kept_thinking_is_dropped(
    server: FakeAnthropic,
) -> None:
    # A system message is carried, never summarized: it would sit between the block and the
    # kept turns, so the API's block is written over the messages alone and the kept
    # thinking, whose prefix that changes, leaves the view (recorded, and re-derived).
    app = service(server)
    session_id = start(app)
    converse(app, server, session_id, 2)
    app.reconfigure(session_id, system="You are a terse coding agent.")
    converse(app, server, session_id, 4)
    app.append_message(session_id, {"role": "user", "content": "Go on."})

    app.compact(session_id)

    history = app.history(session_id)
    (done,) = [e for e in history if isinstance(e, Session.CompactionCompleted)]
    assert done.summary.block is not None
    assert done.summary.chained_revision is None
    (dropped,) = [
        e for e in history[history.index(done) :] if isinstance(e, Session.ReasoningDowngraded)
    ]
    assert "prefix changed" in dropped.reason
    body = send(app, server, session_id, "Going on.")  # the fake API refuses no block
    assert thinking_in(body["messages"]) == 0
    assert audit_session(app, session_id).ok


def loop(app: Sessions, server: FakeAnthropic, session_id: UUID, steps: int) -> None:
    """A turn that calls a tool `steps` times, each reply led by signed thinking."""
    app.append_message(session_id, {"role": "user", "content": f"Refactor: {words(50)}"})
    for step in range(steps):
        body = render_request(
            app.prepare_request(session_id).context, model=MODEL, max_tokens=2_048, options=OPTIONS
        )
        call = {"type": "tool_use", "id": f"toolu_{step:04d}", "name": "read_file", "input": {}}
        thinking = {"type": "thinking", "thinking": f"Step {step}.", "signature": ""}
        server.enqueue(message([thinking, call], stop_reason="tool_use"))
        app.record_reply(session_id, client(server).messages.create(**body))
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": words(300)}
        app.append_message(session_id, {"role": "user", "content": [result]})
    send(app, server, session_id, "Refactored.")


def test_kept_turns_that_start_with_a_reply_keep_its_thinking_after_the_block(
    server: FakeAnthropic,
) -> None:
    app = service(server)
    session_id = start(app)
    converse(app, server, session_id, 2)
    loop(app, server, session_id, 4)
    app.append_message(session_id, {"role": "user", "content": "Go on."})

    app.compact(session_id)

    (done,) = [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]
    assert done.summary.chained_revision is not None
    body = send(app, server, session_id, "Going on.")
    lead = [b["type"] for b in body["messages"][0]["content"]]
    assert lead[:2] == ["compaction", "thinking"]  # the kept reply joins the block's message
    assert audit_session(app, session_id).ok


def test_the_prefix_as_sent_goes_only_to_a_summarizer_that_names_it() -> None:
    from abridged.application.ports import SentPrefix, with_sent

    sent = cast(SentPrefix, object())

    def named(messages: object, *, max_tokens: int, sent: SentPrefix | None = None) -> None: ...

    def passes_on(messages: object, **options: object) -> None: ...

    def older(messages: object, *, max_tokens: int) -> None: ...

    # A wrapper that passes every keyword on would hand it to one that does not take it.
    assert with_sent(named, sent) == {"sent": sent}
    assert with_sent(passes_on, sent) == {}
    assert with_sent(older, sent) == {}
    assert with_sent(named, None) == {}


def test_the_async_service_keeps_the_kept_thinking_the_same_way(server: FakeAnthropic) -> None:
    import asyncio

    from abridged.adapters.anthropic.async_clients import AsyncAnthropicChatModel
    from abridged.adapters.anthropic.compaction import AsyncApiCompactionSummarizer
    from abridged.application.async_service import AsyncSessions
    from tests.support.async_fakes import AsyncFakeSummarizer

    def reply(text: str) -> Any:
        thinking = {"type": "thinking", "thinking": f"Thinking about {text}", "signature": ""}
        return message([thinking, {"type": "text", "text": text}])

    async def run() -> tuple[AsyncSessions, UUID]:
        client = anthropic.AsyncAnthropic(
            api_key="sk-ant-test", base_url=server.base_url, max_retries=0, timeout=10.0
        )
        app = AsyncSessions(
            counter=COUNTER,
            summarizer=AsyncApiCompactionSummarizer(
                client, fallback=AsyncFakeSummarizer(FakeSummarizer())
            ),
            chat_model=AsyncAnthropicChatModel(client),
            env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
        )
        session_id = await app.start_session(
            model=MODEL,
            context_window=40_000,
            max_output_tokens=2_048,
            system=SYSTEM,
            settings=CompactionSettings(
                threshold_floor_tokens=0, keep_recent_tokens=600, keep_recent_turns=1
            ),
        )
        for i in range(5):
            await app.append_message(session_id, {"role": "user", "content": words(400)})
            server.enqueue(reply(f"Task {i} is done."))
            await app.complete(session_id, thinking=THINKING)
        await app.append_message(session_id, {"role": "user", "content": "Go on."})
        await app.compact(session_id)
        server.enqueue(reply("Going on."))
        await app.complete(session_id, thinking=THINKING)  # the fake API refuses no block
        return app, session_id

    app, session_id = asyncio.run(run())

    history = app.sync.history(session_id)
    (done,) = [e for e in history if isinstance(e, Session.CompactionCompleted)]
    assert done.summary.chained_revision is not None
    assert not [e for e in history if isinstance(e, Session.ReasoningDowngraded)]
    assert thinking_in(server.requests_to()[-1].body["messages"]) >= 1
    assert audit_session(app.sync, session_id).ok
