"""The Messages proxy, driven by the real `anthropic` SDK against the fake Messages API.

Each test is a client's conversation: it sends its whole history every time, as SDK hosts
and Claude Code do, and checks what the upstream received, what the client got back and
what the session recorded.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import httpx2
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import ServeConfig
from abridged.adapters.http.app import create_app
from abridged.adapters.http.branches import BRANCH_KEY, TENANT_KEY
from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served

MODEL = "claude-sonnet-4-6"
SYSTEM = "You are a careful coding agent."


def stored_messages(store: Sessions, session_id: Any) -> list[Any]:
    return [
        e.message.to_wire() for e in store.history(session_id) if isinstance(e, MessageAppended)
    ]


def only_session(store: Sessions) -> Any:
    page = store.list_sessions()
    assert len(page.sessions) == 1, page.sessions
    return page.sessions[0].id


def converse(
    client: anthropic.Anthropic, turns: list[str], **extra: Any
) -> tuple[list[Any], list[Any]]:
    """Sends each prompt with the whole history; returns the history and the replies."""
    history: list[Any] = []
    replies = []
    for prompt in turns:
        history.append({"role": "user", "content": prompt})
        reply = client.messages.create(
            model=MODEL, max_tokens=400, system=SYSTEM, messages=history, **extra
        )
        replies.append(reply)
        history.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
    return history, replies


def test_a_conversation_is_recorded_once_and_forwarded_with_the_clients_key(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    history, replies = converse(client, ["Why do the tests fail?", "Fix it.", "Run them."])

    session_id = only_session(store)
    assert stored_messages(store, session_id) == [
        {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]}
        if isinstance(m["content"], str)
        else {
            "role": m["role"],
            "content": [{"type": "text", "text": b["text"]} for b in m["content"]],
        }
        for m in history
    ]
    assert store.stats(session_id).requests == 3  # every reply recorded with its usage
    sent = fake_anthropic.requests_to()
    assert len(sent) == 3
    assert all(r.api_key == TEST_API_KEY for r in sent)
    assert fake_anthropic.violations == []
    assert [getattr(r.content[0], "text", None) for r in replies] == [fake.CANNED_TEXT] * 3
    # The key reached the upstream and nothing else: no event holds it.
    assert TEST_API_KEY not in repr(store.history(session_id))


def test_the_answer_comes_back_unchanged_with_the_session_named(
    proxy: str, fake_anthropic: FakeAnthropic
) -> None:
    body = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}
    headers = {
        "x-api-key": TEST_API_KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "context-management-2025-06-27",
    }
    answer = httpx2.post(f"{proxy}/v1/messages", json=body, headers=headers)

    assert answer.status_code == 200
    upstream = fake_anthropic.requests_to()[0]
    assert upstream.headers["anthropic-version"] == "2023-06-01"
    assert upstream.headers["anthropic-beta"] == "context-management-2025-06-27"
    assert answer.json()["content"][0]["text"] == " ".join(fake.CANNED_TEXT.split()[:50])
    assert answer.headers["request-id"].startswith("req_fake")
    assert answer.headers["x-abridged-session"]


def test_a_header_sent_on_two_lines_reaches_the_upstream_with_both_values(
    proxy: str, fake_anthropic: FakeAnthropic
) -> None:
    # Two `anthropic-beta` lines (a harness adds its own beside the SDK's): both features
    # go upstream, joined as HTTP joins a header's lines, on both endpoints.
    body = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}
    headers = [
        ("x-api-key", TEST_API_KEY),
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "context-management-2025-06-27"),
        ("anthropic-beta", "interleaved-thinking-2025-05-14"),
    ]
    counted = {k: v for k, v in body.items() if k != "max_tokens"}
    for path, sent in (("/v1/messages", body), ("/v1/messages/count_tokens", counted)):
        assert httpx2.post(f"{proxy}{path}", json=sent, headers=headers).status_code == 200

    assert len(fake_anthropic.requests) == 2
    for upstream in fake_anthropic.requests:
        assert upstream.headers["anthropic-beta"] == (
            "context-management-2025-06-27, interleaved-thinking-2025-05-14"
        )


def test_the_proxys_own_and_hop_by_hop_headers_stay_behind(
    proxy: str, fake_anthropic: FakeAnthropic
) -> None:
    body = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}
    headers = {
        "x-api-key": TEST_API_KEY,
        "anthropic-version": "2023-06-01",
        "x-abridged-session": "ticket-4711",
        "x-abridged-tenant": "someone-else",
        "connection": "keep-alive, x-internal-route",
        "x-internal-route": "billing",
        "x-request-source": "ide",
    }
    answer = httpx2.post(f"{proxy}/v1/messages", json=body, headers=headers)

    assert answer.status_code == 200
    sent = {name.lower() for name in fake_anthropic.requests_to()[0].headers}
    assert not {name for name in sent if name.startswith("x-abridged-")}
    assert "x-internal-route" not in sent  # named by Connection: for this hop only
    assert "x-request-source" in sent  # any other header goes on
    assert "anthropic-version" in sent


def test_a_streamed_reply_passes_through_and_is_recorded(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    thinking = {"type": "thinking", "thinking": "Look at the slice.", "signature": "c2lnbmVk"}
    fake_anthropic.enqueue(fake.message([thinking, {"type": "text", "text": "Found it."}]))
    history: list[Any] = [{"role": "user", "content": "Where is the bug?"}]
    with client.messages.stream(
        model=MODEL,
        max_tokens=2000,
        messages=history,
        thinking={"type": "enabled", "budget_tokens": 1024},
    ) as stream:
        text = "".join(stream.text_stream)
        reply = stream.get_final_message()
    assert text == "Found it."

    history += [
        {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
        {"role": "user", "content": "Fix it."},
    ]
    client.messages.create(
        model=MODEL,
        max_tokens=2000,
        messages=history,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )

    session_id = only_session(store)
    # The streamed reply is recorded once (not again when the client sends it back).
    assert [m["role"] for m in stored_messages(store, session_id)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert stored_messages(store, session_id)[1]["content"][0] == thinking
    second = fake_anthropic.requests_to()[1].body
    assert second["messages"][1]["content"][0] == thinking  # signed thinking, byte for byte
    assert store.stats(session_id).requests == 2
    assert fake_anthropic.violations == []


def test_the_async_client_works_through_the_proxy(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    async def conversation() -> str:
        async with anthropic.AsyncAnthropic(
            api_key=TEST_API_KEY, base_url=proxy, max_retries=0
        ) as sdk:
            first = await sdk.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "One"}]
            )
            second = await sdk.messages.create(
                model=MODEL,
                max_tokens=10,
                messages=[
                    {"role": "user", "content": "One"},
                    {"role": "assistant", "content": getattr(first.content[0], "text", "")},
                    {"role": "user", "content": "Two"},
                ],
            )
            return str(getattr(second.content[0], "text", ""))

    assert asyncio.run(conversation())
    assert len(stored_messages(store, only_session(store))) == 4


def test_a_diverging_history_becomes_a_branch_and_is_never_mixed(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    history, _ = converse(client, ["Fix the parser.", "Now the tests."])
    root = only_session(store)
    # The user edits the second prompt and sends again (a rewind in the client).
    edited = [*history[:2], {"role": "user", "content": "Now the docs."}]
    client.messages.create(model=MODEL, max_tokens=400, system=SYSTEM, messages=edited)

    sessions = {info.id: info for info in store.list_sessions().sessions}
    assert len(sessions) == 2
    branch = next(s for s in sessions if s != root)
    assert sessions[branch].metadata[BRANCH_KEY] == str(root)
    assert [m["content"][0]["text"] for m in stored_messages(store, branch)][::2] == [
        "Fix the parser.",
        "Now the docs.",
    ]
    assert len(stored_messages(store, root)) == 4  # the first branch is left as it was
    sent = fake_anthropic.requests_to()[-1].body["messages"]
    assert [m["content"][0]["text"] for m in sent if m["role"] == "user"] == [
        "Fix the parser.",
        "Now the docs.",
    ]
    # The branch goes on where it is: its next request finds it again.
    client.messages.create(
        model=MODEL,
        max_tokens=400,
        system=SYSTEM,
        messages=[
            *edited,
            {"role": "assistant", "content": fake.CANNED_TEXT},
            {"role": "user", "content": "Thanks."},
        ],
    )
    assert len(store.list_sessions().sessions) == 2
    assert len(stored_messages(store, branch)) == 6


def test_a_request_sent_again_is_never_appended_twice(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    body = {"model": MODEL, "max_tokens": 20, "messages": [{"role": "user", "content": "Hi"}]}
    headers = {"x-api-key": TEST_API_KEY, "x-abridged-session": "retried"}
    for _ in range(3):
        assert httpx2.post(f"{proxy}/v1/messages", json=body, headers=headers).status_code == 200
    # The first answer is recorded; the same request again (a retry whose answer was lost, a
    # regeneration) goes upstream as it went the first time, and its answer is not recorded.
    assert [m["role"] for m in stored_messages(store, only_session(store))] == ["user", "assistant"]
    sent = [r.body["messages"] for r in fake_anthropic.requests_to()]
    assert sent[0] == sent[1] == sent[2]


def test_a_regenerated_answer_the_client_keeps_becomes_a_branch(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    headers = {"x-api-key": TEST_API_KEY, "x-abridged-session": "regenerated"}
    first = [{"role": "user", "content": "Name a colour."}]
    fake_anthropic.enqueue(fake.message("Red."), fake.message("Blue."))
    for _ in range(2):
        body = {"model": MODEL, "max_tokens": 20, "messages": first}
        httpx2.post(f"{proxy}/v1/messages", json=body, headers=headers)
    kept = [*first, {"role": "assistant", "content": "Blue."}, {"role": "user", "content": "Why?"}]
    body = {"model": MODEL, "max_tokens": 20, "messages": kept}
    assert httpx2.post(f"{proxy}/v1/messages", json=body, headers=headers).status_code == 200

    sessions = {info.id: info for info in store.list_sessions().sessions}
    assert len(sessions) == 2
    branch = next(i for i, info in sessions.items() if BRANCH_KEY in info.metadata)
    texts = [m["content"][0]["text"] for m in stored_messages(store, branch)]
    assert texts[:3] == ["Name a colour.", "Blue.", "Why?"]
    root = next(i for i in sessions if i != branch)
    assert [m["content"][0]["text"] for m in stored_messages(store, root)] == [
        "Name a colour.",
        "Red.",
    ]


def test_a_reply_regenerated_on_another_model_is_continued_in_its_branch(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # "Regenerate" on another model, then carry on with that reply (on that model): the
    # conversation goes on in the branch that holds the regenerated reply, not in another
    # branch started with the whole history.
    named = client.with_options(default_headers={"x-abridged-session": "regenerated-on"})
    history: list[Any] = [{"role": "user", "content": "Name a colour."}]
    fake_anthropic.enqueue(fake.message("Red."), fake.message("Blue."))
    named.messages.create(model=MODEL, max_tokens=20, messages=history)
    named.messages.create(model="claude-opus-4-6", max_tokens=20, messages=history)
    for prompt in ("Why?", "And then?"):
        history += [
            {"role": "assistant", "content": "Blue." if prompt == "Why?" else "Because."},
            {"role": "user", "content": prompt},
        ]
        fake_anthropic.enqueue(fake.message("Because."))
        named.messages.create(model="claude-opus-4-6", max_tokens=20, messages=history)

    sessions = {info.id: info for info in store.list_sessions().sessions}
    assert len(sessions) == 2  # the first answer's session and the regenerated one's
    (branch,) = [i for i, info in sessions.items() if BRANCH_KEY in info.metadata]
    texts = [m["content"][0]["text"] for m in stored_messages(store, branch)]
    assert texts == ["Name a colour.", "Blue.", "Why?", "Because.", "And then?", "Because."]
    assert store.session(branch).model == "claude-opus-4-6"


def test_an_upstream_overflow_compacts_and_the_next_request_fits(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    history, _ = converse(client, [f"Step {n}: " + "read the log " * 40 for n in range(6)])
    fake_anthropic.enqueue(fake.prompt_too_long(tokens=210_000, maximum=200_000))
    history.append({"role": "user", "content": "And now?"})
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        client.messages.create(model=MODEL, max_tokens=400, system=SYSTEM, messages=history)

    session_id = only_session(store)
    assert [c.trigger for c in store.compactions(session_id)] == ["overflow"]
    reply = client.messages.create(model=MODEL, max_tokens=400, system=SYSTEM, messages=history)
    assert reply.content
    last = fake_anthropic.requests_to()[-1].body
    # The compacted request, not the client's: it leads with the summary of what was cut.
    assert "conversation-summary" in json.dumps(last["messages"][0])
    assert fake_anthropic.violations == []


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (400, "input length and `max_tokens` exceed context limit: 195000 + 20000 > 200000"),
        (413, "prompt is too long: 210000 tokens > 200000 maximum"),
    ],
    ids=["input and output over the window", "413 prompt too long"],
)
def test_every_overflow_the_api_reports_compacts_as_the_chat_model_reads_it(
    client: anthropic.Anthropic,
    fake_anthropic: FakeAnthropic,
    store: Sessions,
    status: int,
    text: str,
) -> None:
    # The chat model reads both as `PromptTooLongError` (adapters/anthropic/errors.py); the
    # proxy passed them on and learnt nothing, and the client's next request was the same.
    history, _ = converse(client, [f"Step {n}: " + "read the log " * 40 for n in range(6)])
    kind = "invalid_request_error" if status == 400 else "request_too_large"
    fake_anthropic.enqueue(fake.error(status, kind, text))
    history.append({"role": "user", "content": "And now?"})
    with pytest.raises(anthropic.APIStatusError, match=r"exceed context limit|too long"):
        client.messages.create(model=MODEL, max_tokens=400, system=SYSTEM, messages=history)

    session_id = only_session(store)
    assert [c.trigger for c in store.compactions(session_id)] == ["overflow"]
    reply = client.messages.create(model=MODEL, max_tokens=400, system=SYSTEM, messages=history)
    assert reply.content
    assert fake_anthropic.violations == []


@pytest.mark.parametrize(
    ("response", "error", "status"),
    [
        (fake.rate_limited(), anthropic.RateLimitError, 429),
        (fake.overloaded(), anthropic.APIStatusError, 529),
        (fake.api_error(), anthropic.InternalServerError, 500),
    ],
)
def test_upstream_errors_reach_the_client_in_the_apis_shape(
    client: anthropic.Anthropic,
    fake_anthropic: FakeAnthropic,
    store: Sessions,
    response: fake.Response,
    error: type[anthropic.APIStatusError],
    status: int,
) -> None:
    fake_anthropic.enqueue(response)
    with pytest.raises(error) as raised:
        client.messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )
    assert raised.value.status_code == status
    assert raised.value.body["error"]["type"] == response.body["error"]["type"]  # type: ignore[index]
    assert store.stats(only_session(store)).requests == 0  # no reply recorded


def test_a_stuck_upstream_times_out_in_the_apis_shape(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(fake.slow(fake.message(), 3.0))  # the proxy waits 2 s
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )
    assert raised.value.status_code == 504
    assert raised.value.body["error"]["type"] == "timeout_error"  # type: ignore[index]


@pytest.mark.parametrize(
    ("content", "status", "kind"),
    [
        (b"{not json", 400, "invalid_request_error"),
        (b"[1, 2]", 400, "invalid_request_error"),
        (json.dumps({"model": MODEL, "messages": []}).encode(), 400, "invalid_request_error"),
        (
            json.dumps(
                {
                    "model": MODEL,
                    "max_tokens": 5,
                    "messages": [{"role": "assistant", "content": "x"}],
                }
            ).encode(),
            400,
            "invalid_request_error",
        ),
        (
            json.dumps(
                {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": ""}]}
            ).encode(),
            400,
            "invalid_request_error",
        ),
        (b"x" * 5_000, 413, "request_too_large"),
    ],
)
def test_a_refused_request_gets_a_typed_error_and_stores_nothing(
    fake_anthropic: FakeAnthropic, store: Sessions, content: bytes, status: int, kind: str
) -> None:
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, max_body_bytes=4_096)
    with served(config, store) as url:
        answer = httpx2.post(
            f"{url}/v1/messages",
            content=content,
            headers={"x-api-key": TEST_API_KEY, "content-type": "application/json"},
        )
    assert answer.status_code == status
    assert answer.json()["type"] == "error"
    assert answer.json()["error"]["type"] == kind
    assert store.list_sessions().sessions == ()
    assert fake_anthropic.requests_to() == []


def test_new_messages_refused_among_them_write_none_of_them(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    history, _ = converse(client, ["Why do the tests fail?"])
    session_id = only_session(store)
    orphan = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_never", "content": "x"}],
    }
    more: list[Any] = [
        {"role": "user", "content": "Look again."},
        {"role": "assistant", "content": "Looking."},
        orphan,
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "And?"},
    ]

    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model=MODEL, max_tokens=50, messages=[*history, *more])

    assert "toolu_never" in refused.value.message
    assert len(stored_messages(store, session_id)) == len(history)  # not one of the four
    assert len(fake_anthropic.requests_to()) == 1


def test_a_long_conversation_goes_upstream_compacted(
    fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, context_window=6_000)
    with (
        served(config, store) as url,
        anthropic.Anthropic(api_key=TEST_API_KEY, base_url=url, max_retries=0) as sdk,
    ):
        history, _ = converse(sdk, [f"Task {n}: " + "inspect the module " * 60 for n in range(12)])

    session_id = only_session(store)
    assert store.compactions(session_id)  # compacted on the way
    last = fake_anthropic.requests_to()[-1].body
    # Smaller than what the client sent, though its prompts, kept whole in the facts ledger,
    # are most of it.
    assert len(json.dumps(last)) < len(json.dumps(history))
    assert fake_anthropic.violations == []
    assert len(stored_messages(store, session_id)) == len(history)  # all kept in the history


def test_documents_server_tool_blocks_and_unknown_blocks_pass_byte_for_byte(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic
) -> None:
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "Row 1\nRow 2"},
        "title": "export.csv",
    }
    server_call = {
        "type": "server_tool_use",
        "id": "srvtoolu_01",
        "name": "web_search",
        "input": {"query": "csv off by one"},
    }
    server_result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://example.com",
                "title": "Off by one",
                "encrypted_content": "abc",
                "page_age": None,
            }
        ],
    }
    history: list[Any] = [
        {"role": "user", "content": [document, {"type": "text", "text": "Read it."}]},
        {
            "role": "assistant",
            "content": [server_call, server_result, {"type": "text", "text": "Read."}],
        },
        {"role": "user", "content": "Summarize."},
    ]
    client.messages.create(model=MODEL, max_tokens=50, messages=history)

    sent = fake_anthropic.requests_to()[-1].body["messages"]
    assert sent[0]["content"][0] == document
    assert sent[1]["content"][:2] == [server_call, server_result]


def test_count_tokens_is_forwarded_and_stores_nothing(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    counted = client.messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": "How long is this?"}]
    )
    assert counted.input_tokens > 0
    assert fake_anthropic.requests_to(fake.COUNT_TOKENS_PATH)[0].api_key == TEST_API_KEY
    assert store.list_sessions().sessions == ()


def test_a_count_the_upstream_must_judge_is_answered_by_the_upstream(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # The proxy forwards a count as it came; a body the API reads as malformed (a model that
    # is not a string) gets the API's own answer, not a 502 for a dropped connection.
    body = {"model": {}, "messages": [{"role": "user", "content": "Hi"}]}
    answer = httpx2.post(
        f"{proxy}{fake.COUNT_TOKENS_PATH}", json=body, headers={"x-api-key": TEST_API_KEY}
    )
    assert answer.status_code < 500, answer.text
    assert fake_anthropic.requests_to(fake.COUNT_TOKENS_PATH)[0].body == body
    assert store.list_sessions().sessions == ()


CLAUDE_CODE_SYSTEM = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
    {"type": "text", "text": "Be concise.", "cache_control": {"type": "ephemeral"}},
]


def claude_code_request(messages: list[Any]) -> dict[str, Any]:
    return {
        "model": "claude-opus-4-6",  # adaptive thinking: 4.6 on (4.5 takes manual only)
        "max_tokens": 32_000,
        "system": CLAUDE_CODE_SYSTEM,
        "messages": messages,
        "tools": [
            {
                "name": "Bash",
                "description": "Run a command.",
                "input_schema": {"type": "object", "properties": {}},
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "metadata": {"user_id": "user_abc_account_def_session_0123"},
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "stream": True,
    }


def test_a_claude_code_shaped_request_goes_through(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>cwd: /repo</system-reminder>"},
                {"type": "text", "text": "Fix the export.", "cache_control": {"type": "ephemeral"}},
            ],
        }
    ]
    headers = {
        "x-api-key": TEST_API_KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "context-management-2025-06-27",
    }
    answer = httpx2.post(
        f"{proxy}/v1/messages", json=claude_code_request(messages), headers=headers
    )
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert b"event: message_stop" in answer.content

    sent = fake_anthropic.requests_to()[-1].body
    assert sent["system"] == CLAUDE_CODE_SYSTEM  # as the client sent it
    assert sent["context_management"] == claude_code_request([])["context_management"]
    assert sent["thinking"] == {"type": "adaptive"}
    marks = json.dumps(sent).count('"cache_control"')
    assert marks <= 4
    assert fake_anthropic.violations == []
    info = store.list_sessions().sessions[0]
    assert info.metadata["abridged:name"].startswith("user:user_abc_account_def_session_0123|")
    assert info.metadata[TENANT_KEY] == "default"


def test_role_system_messages_pass_through(proxy: str, fake_anthropic: FakeAnthropic) -> None:
    # Where the API takes one: after a user turn, before the reply.
    messages = [
        {"role": "user", "content": "Fix the export."},
        {"role": "assistant", "content": "Which one?"},
        {"role": "user", "content": "The CSV one."},
        {"role": "system", "content": "The user switched to plan mode."},
    ]
    answer = httpx2.post(
        f"{proxy}/v1/messages",
        # A model that takes system messages inside `messages` (older ones get them folded
        # into the user turn as marked text).
        json={**claude_code_request(messages), "model": "claude-opus-4-8"},
        headers={"x-api-key": TEST_API_KEY},
    )
    assert answer.status_code == 200, answer.text
    sent = fake_anthropic.requests_to()[-1].body
    system = sent["messages"][3]
    assert system["role"] == "system"
    assert [b["text"] for b in system["content"]] == ["The user switched to plan mode."]


def test_with_deferred_compaction_no_request_waits_for_a_summary_it_does_not_need(
    fake_anthropic: FakeAnthropic,
) -> None:
    store = bootstrap(defer_compaction=True)
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, context_window=6_000)
    with (
        served(config, store) as url,
        anthropic.Anthropic(api_key=TEST_API_KEY, base_url=url, max_retries=0) as sdk,
    ):
        history, _ = converse(sdk, [f"Task {n}: " + "inspect the module " * 60 for n in range(12)])
        store.background.wait()

    session_id = only_session(store)
    triggers = [c.trigger for c in store.compactions(session_id)]
    assert triggers
    assert set(triggers) <= {"background", "threshold"}  # at once only where it had to fit
    assert "background" in triggers
    assert fake_anthropic.violations == []
    assert len(stored_messages(store, session_id)) == len(history)


def test_the_serve_flag_turns_deferred_compaction_on() -> None:
    for flag in (False, True):
        service = create_app(ServeConfig(db=":memory:", defer_compaction=flag)).state.sessions
        assert service.preparer.defer is flag
        service.close()
