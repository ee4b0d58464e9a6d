"""`AnthropicChatModel` through the real SDK, against a local server that speaks the API."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from abridged.adapters.anthropic.chat_model import CONTEXT_MANAGEMENT_BETA, AnthropicChatModel
from abridged.adapters.anthropic.errors import ModelNotFoundError
from abridged.adapters.anthropic.request import render_request
from abridged.application.ports import (
    PromptTooLongError,
    ProviderError,
    ProviderUnavailableError,
    RequestOptions,
)
from abridged.domain.context import Context
from abridged.domain.messages import Message, ThinkingBlock, ToolResultBlock, ToolUseBlock
from abridged.domain.usage import Usage
from tests.contract.test_chat_model_contract import make_context
from tests.support import fake_anthropic as api
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    COUNT_TOKENS_PATH,
    TEST_API_KEY,
    FakeAnthropic,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
)

MODEL = "claude-sonnet-4-6"
CLEAR_TOOL_USES = {
    "edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}]
}


@pytest.fixture
def server(fake_anthropic: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """The fake API; every request body it received must be valid."""
    yield fake_anthropic
    assert not fake_anthropic.violations


def chat_model(
    server: FakeAnthropic, max_retries: int = 2, **options: object
) -> AnthropicChatModel:
    return AnthropicChatModel(server.client(), max_retries=max_retries, **options)  # type: ignore[arg-type]


def agent_context() -> Context:
    """A prompt, a failed tool call, and its result: the model is asked for the next step."""
    return make_context(
        [
            Message.user("Run the tests and fix what fails."),
            Message.assistant(
                ThinkingBlock("The test command first.", "sig-abc"),
                ToolUseBlock("toolu_01", "bash", {"command": "pytest -x", "timeout": 60}),
            ),
            Message.user(
                ToolResultBlock("toolu_01", "E   AssertionError: 2 != 3", is_error=True),
                "Keep going.",
            ),
        ]
    )


def test_sends_the_rendered_context_and_reads_the_reply_and_its_usage(
    server: FakeAnthropic,
) -> None:
    usage = {
        "input_tokens": 21,
        "output_tokens": 7,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 4_000,
    }
    server.enqueue(api.message("The assertion is off by one.", usage=usage))
    context = agent_context()

    reply = chat_model(server).send(context, model=MODEL, max_tokens=1_024)

    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.api_key == TEST_API_KEY
    assert "anthropic-version" in request.headers
    assert "anthropic-beta" not in request.headers
    # Streamed (see the module docstring of the adapter), otherwise exactly the rendering.
    assert request.body == {
        **render_request(context, model=MODEL, max_tokens=1_024),
        "stream": True,
    }
    assert request.body["model"] == MODEL
    assert request.body["max_tokens"] == 1_024
    system = request.body["system"]  # a string, or text blocks (with a cache breakpoint)
    assert (system if isinstance(system, str) else system[0]["text"]) == context.system
    assert request.body["tools"] == [dict(tool) for tool in context.tools]
    assert reply.message == Message.assistant("The assertion is off by one.")
    assert reply.usage == Usage(
        input_tokens=21,
        output_tokens=7,
        cache_creation_input_tokens=300,
        cache_read_input_tokens=4_000,
    )
    assert reply.model == MODEL
    assert reply.stop_reason == "end_turn"


def test_a_tool_use_reply_round_trips_into_the_next_request(server: FakeAnthropic) -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "Look at the slice.\n  Exactly.", "signature": "Eq0C+/="},
        {"type": "text", "text": "Reading the file.", "citations": None},
        {
            "type": "tool_use",
            "id": "toolu_02",
            "name": "bash",
            "input": {"command": "cat report.py", "env": {"LANG": "C"}, "limit": None, "n": 1.5},
            "caller": {"type": "direct"},
        },
    ]
    server.enqueue(api.message(blocks, stop_reason="tool_use"))
    context = agent_context()
    model = chat_model(server)

    reply = model.send(context, model=MODEL, max_tokens=1_024)

    assert reply.stop_reason == "tool_use"
    sent_back = [
        {key: value for key, value in block.items() if key not in ("citations", "caller")}
        for block in blocks
    ]
    assert reply.message.to_wire() == {"role": "assistant", "content": sent_back}
    follow_up = make_context(
        [*context.messages, reply.message, Message.user(ToolResultBlock("toolu_02", "rows[:-1]"))]
    )
    model.send(follow_up, model=MODEL, max_tokens=1_024)
    assert server.requests[-1].body["messages"][-2] == {"role": "assistant", "content": sent_back}


def test_a_server_tool_call_answered_twice_is_a_provider_error(server: FakeAnthropic) -> None:
    # A call with no result yet is a paused turn, or a call beside client calls, which the
    # next reply answers (agents-and-tools/tool-use/server-tools): only a pairing no reply
    # can have is refused.
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    server.enqueue(
        api.message(
            [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                result,
                result,
            ]
        )
    )
    with pytest.raises(ProviderError, match="srvtoolu_1 answered twice"):
        chat_model(server).send(agent_context(), model=MODEL, max_tokens=1_024)


def test_server_tools_and_citations_in_a_reply_are_kept_as_sent(server: FakeAnthropic) -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://example.com",
                    "title": "Example",
                    "encrypted_content": "RW5j",
                    "page_age": None,
                }
            ],
        },
        {
            "type": "text",
            "text": "It says x.",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": "https://example.com",
                    "title": "Example",
                    "encrypted_index": "RW5j",
                    "cited_text": "x",
                }
            ],
        },
    ]
    server.enqueue(api.message(blocks))

    reply = chat_model(server).send(agent_context(), model=MODEL, max_tokens=1_024)

    # Key order aside (the SDK's own), every block comes back as the API sent it.
    assert [dict(sorted(b.items())) for b in reply.message.to_wire()["content"]] == [
        dict(sorted(b.items())) for b in blocks
    ]


def test_max_tokens_beyond_the_sdk_limit_for_unstreamed_requests_works(
    server: FakeAnthropic,
) -> None:
    # Unstreamed, the SDK refuses max_tokens over ~21,333 before sending anything.
    reply = chat_model(server).send(agent_context(), model=MODEL, max_tokens=64_000)
    assert reply.message.text
    assert server.requests[-1].body["max_tokens"] == 64_000


@pytest.mark.parametrize(
    "failure",
    [api.rate_limited(), api.api_error(), api.overloaded()],
    ids=["429-rate-limited", "500-api-error", "529-overloaded"],
)
def test_a_transient_failure_is_retried(server: FakeAnthropic, failure: api.Response) -> None:
    server.enqueue(failure, api.message("Recovered."))

    reply = chat_model(server, max_retries=2).send(agent_context(), model=MODEL, max_tokens=64)

    assert reply.message.text == "Recovered."
    assert [r.headers.get("x-stainless-retry-count") for r in server.requests] == ["0", "1"]
    assert server.requests[0].body == server.requests[1].body


def test_persistent_overload_is_unavailable_after_the_configured_retries(
    server: FakeAnthropic,
) -> None:
    server.fail_model(MODEL, api.overloaded())

    with pytest.raises(ProviderUnavailableError, match="529 overloaded_error") as raised:
        chat_model(server, max_retries=3).send(agent_context(), model=MODEL, max_tokens=64)

    assert len(server.requests) == 4
    assert isinstance(raised.value.__cause__, anthropic.InternalServerError)
    assert raised.value.__cause__.status_code == 529


def test_no_retries_when_told_none(server: FakeAnthropic) -> None:
    server.fail_model(MODEL, api.rate_limited())
    with pytest.raises(ProviderUnavailableError, match="429 rate_limit_error"):
        chat_model(server, max_retries=0).send(agent_context(), model=MODEL, max_tokens=64)
    assert len(server.requests) == 1


def test_the_server_can_forbid_a_retry(server: FakeAnthropic) -> None:
    server.enqueue(api.overloaded(should_retry=False), api.message())
    with pytest.raises(ProviderUnavailableError):
        chat_model(server, max_retries=2).send(agent_context(), model=MODEL, max_tokens=64)
    assert len(server.requests) == 1


def test_retry_after_is_waited_for(server: FakeAnthropic) -> None:
    server.enqueue(api.rate_limited(retry_after="0.3"), api.message())
    started = time.monotonic()
    chat_model(server, max_retries=1).send(agent_context(), model=MODEL, max_tokens=64)
    assert time.monotonic() - started >= 0.3
    assert len(server.requests) == 2


def test_prompt_too_long_is_typed_and_not_retried(server: FakeAnthropic) -> None:
    server.enqueue(api.prompt_too_long(), api.message())

    with pytest.raises(PromptTooLongError) as raised:
        chat_model(server).send(agent_context(), model=MODEL, max_tokens=64)

    assert raised.value.tokens == 208_656
    assert raised.value.maximum == 200_000
    assert "prompt is too long: 208656 tokens > 200000 maximum" in str(raised.value)
    assert isinstance(raised.value.__cause__, anthropic.BadRequestError)
    assert len(server.requests) == 1


def test_prompt_plus_max_tokens_over_the_window_is_prompt_too_long(
    server: FakeAnthropic,
) -> None:
    server.enqueue(
        api.invalid_request(
            "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, "
            "decrease input length or `max_tokens` and try again"
        )
    )
    with pytest.raises(PromptTooLongError) as raised:
        chat_model(server).send(agent_context(), model=MODEL, max_tokens=21_333)
    assert (raised.value.tokens, raised.value.maximum) == (188_240, 200_000)


def test_authentication_failure_is_a_provider_error_and_not_retried(
    server: FakeAnthropic,
) -> None:
    server.enqueue(api.authentication_error(), api.message())

    with pytest.raises(ProviderError) as raised:
        chat_model(server).send(agent_context(), model=MODEL, max_tokens=64)

    error = raised.value
    assert not isinstance(error, ProviderUnavailableError | PromptTooLongError)
    assert "401 authentication_error: invalid x-api-key" in str(error)
    assert "(request req_fake" in str(error)
    assert isinstance(error.__cause__, anthropic.AuthenticationError)
    assert len(server.requests) == 1


def test_an_unknown_model_is_model_not_found(server: FakeAnthropic) -> None:
    server.enqueue(api.model_not_found("claude-nope"))
    with pytest.raises(ModelNotFoundError, match="model: claude-nope"):
        chat_model(server).send(agent_context(), model="claude-nope", max_tokens=64)
    assert len(server.requests) == 1


def test_another_invalid_request_is_a_provider_error(server: FakeAnthropic) -> None:
    server.enqueue(api.invalid_request("temperature: Input should be less than or equal to 1"))
    with pytest.raises(ProviderError, match="400 invalid_request_error: temperature") as raised:
        chat_model(server).send(agent_context(), model=MODEL, max_tokens=64)
    assert type(raised.value) is ProviderError


@pytest.mark.parametrize(
    "failure", [api.overloaded_midstream(), api.dropped_stream()], ids=["error-event", "dropped"]
)
def test_a_stream_that_fails_after_it_started_is_unavailable(
    server: FakeAnthropic, failure: api.Response
) -> None:
    server.enqueue(failure)
    with pytest.raises(ProviderUnavailableError):
        chat_model(server).send(agent_context(), model=MODEL, max_tokens=64)
    assert len(server.requests) == 1


def test_an_unreachable_api_is_unavailable(server: FakeAnthropic) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    client = server.client().with_options(base_url=f"http://127.0.0.1:{closed_port}")
    with pytest.raises(ProviderUnavailableError, match="unreachable") as raised:
        AnthropicChatModel(client, max_retries=0).send(agent_context(), model=MODEL, max_tokens=64)
    assert isinstance(raised.value.__cause__, anthropic.APIConnectionError)


def test_count_tokens_asks_the_api_without_max_tokens(server: FakeAnthropic) -> None:
    server.enqueue(api.token_count(1_234), path=COUNT_TOKENS_PATH)
    context = agent_context()

    assert chat_model(server).count_tokens(context, model=MODEL) == 1_234

    (request,) = server.requests
    assert request.path == COUNT_TOKENS_PATH
    rendered = render_request(context, model=MODEL, max_tokens=1)
    del rendered["max_tokens"]
    assert request.body == rendered


def test_count_tokens_failures_are_translated(server: FakeAnthropic) -> None:
    server.enqueue(api.overloaded(), api.overloaded(), path=COUNT_TOKENS_PATH)
    with pytest.raises(ProviderUnavailableError):
        chat_model(server, max_retries=1).count_tokens(agent_context(), model=MODEL)
    assert len(server.requests) == 2


def test_context_management_is_sent_with_its_beta_and_reported(server: FakeAnthropic) -> None:
    model = chat_model(server, context_management=CLEAR_TOOL_USES)

    model.send(agent_context(), model=MODEL, max_tokens=64)
    model.count_tokens(agent_context(), model=MODEL)

    assert model.context_management == CLEAR_TOOL_USES
    sent, counted = server.requests
    assert sent.body["context_management"] == CLEAR_TOOL_USES
    assert sent.headers["anthropic-beta"] == CONTEXT_MANAGEMENT_BETA
    # The count is of the context as abridged renders it, before the provider's edits.
    assert "context_management" not in counted.body


def test_context_management_is_a_copy_the_caller_cannot_change(server: FakeAnthropic) -> None:
    config = {"edits": [{"type": "clear_thinking_20251015"}]}
    model = chat_model(server, context_management=config, betas=["context-management-2025-06-27"])
    config["edits"].clear()
    assert model.context_management == {"edits": [{"type": "clear_thinking_20251015"}]}
    with pytest.raises(TypeError):
        model.context_management["edits"] = []  # type: ignore[index]


def test_provider_side_compaction_is_refused(server: FakeAnthropic) -> None:
    with pytest.raises(ValueError, match="compact_20260112"):
        chat_model(server, context_management={"edits": [{"type": "compact_20260112"}]})


def test_send_body_needs_the_required_fields_and_always_streams(server: FakeAnthropic) -> None:
    model = chat_model(server)
    with pytest.raises(ValueError, match="max_tokens"):
        model.send_body({"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]})
    body = {"model": MODEL, "max_tokens": 8, "messages": [], "stream": False}
    model.send_body({**body, "messages": [{"role": "user", "content": "Hi"}]})
    assert server.requests[-1].body["stream"] is True
    with pytest.raises(ValueError, match="max_retries"):
        chat_model(server, max_retries=-1)


def test_a_block_binding_choice_is_sent_with_its_beta(server: FakeAnthropic) -> None:
    binding = {"prefix_mismatch_behavior": "drop_block"}
    options = RequestOptions(
        thinking={"type": "enabled", "budget_tokens": 1024, "block_binding": binding}
    )

    chat_model(server).send(agent_context(), model=MODEL, max_tokens=2048, options=options)

    (sent,) = server.requests
    assert sent.body["thinking"]["block_binding"] == binding
    assert sent.headers["anthropic-beta"] == "thinking-binding-controls-2026-08-01"
