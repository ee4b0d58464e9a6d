"""A host that sends its own requests: overflow reports, provider counts, request options and
streaming, through the real anthropic SDK against the local fake Messages API server."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import anthropic
import pytest

from abridged.adapters.anthropic.chat_model import AnthropicChatModel
from abridged.adapters.anthropic.errors import translate_error
from abridged.adapters.anthropic.request import count_tokens_body, render_request
from abridged.adapters.anthropic.usage import as_usage
from abridged.application.ports import PromptTooLongError, RequestOptions
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.errors import (
    InvalidRequestOptionsError,
    NotAnOverflowError,
    UnknownSessionError,
)
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support import fake_anthropic as api
from tests.support.builders import TOOLS, exchange, turn, words
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fakes import FakeChatModel


def start(app: Sessions, window: int = 200_000, **settings: Any) -> UUID:
    return app.start_session(
        model="claude-sonnet-4-6",
        context_window=window,
        max_output_tokens=1_000,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),
    )


def grow(app: Sessions, session_id: UUID, turns: int, size: int = 120) -> None:
    for i in range(turns):
        for message in turn(f"Request {i}", [words(size)]):
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("And now?"))


def body_of(prepared: PreparedRequest) -> dict[str, Any]:
    return render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)


def kinds(app: Sessions, session_id: UUID) -> list[str]:
    return [type(e).__name__ for e in app.history(session_id)]


def test_a_host_recovers_from_prompt_too_long_through_the_public_api(
    make_app: MakeApp, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.context_window = 6_000
    client = fake_anthropic.client()
    app = make_app(read_provider_error=translate_error)
    session_id = start(app)
    grow(app, session_id, turns=25)

    prepared = app.prepare_request(session_id)
    with pytest.raises(anthropic.BadRequestError) as rejected:
        client.messages.create(**body_of(prepared))
    prepared = app.report_overflow(session_id, rejected.value)
    reply = client.messages.create(**body_of(prepared))
    app.record_reply(
        session_id,
        reply.model_dump(),
        usage=as_usage(reply.usage),
        request_estimate=prepared.context.raw_estimate,
    )

    assert fake_anthropic.violations == []
    hits = [e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)]
    assert [h.decision.trigger for h in hits] == ["overflow"]
    session = app.session(session_id)
    assert session.provider_window == 6_000
    assert session.entries[-1].message.role is Role.ASSISTANT
    assert prepared.context_status == "summarized"
    assert [n.kind for n in prepared.notices][:3] == [
        "overflow",
        "compaction_started",
        "compaction_completed",
    ]


def test_the_providers_error_numbers_and_plain_numbers_are_accepted(make_app: MakeApp) -> None:
    app = make_app()
    for reported in (
        PromptTooLongError("prompt is too long", tokens=9_000, maximum=6_000),
        6_000,
    ):
        session_id = start(app, window=20_000, threshold_ratio=1.0)
        grow(app, session_id, turns=20, size=150)

        prepared = app.report_overflow(session_id, reported, tokens=9_000)

        session = app.session(session_id)
        assert session.provider_window == 6_000
        assert session.calibration > 1.0
        assert prepared.context.estimate <= prepared.context.budget <= 6_000 - 1_000


def test_a_learned_window_outlives_another_reservation_but_not_another_model(
    make_app: MakeApp,
) -> None:
    # A proxied client asks for its own max_tokens at every request: the window the provider
    # enforced must not be forgotten each time the reservation moves, or the next request
    # overflows again.
    app = make_app()
    session_id = start(app, window=20_000, threshold_ratio=1.0)
    grow(app, session_id, turns=20, size=150)
    app.report_overflow(session_id, 6_000, tokens=9_000)

    app.reconfigure(session_id, max_output_tokens=2_000)
    assert app.session(session_id).provider_window == 6_000
    assert app.prepare_request(session_id).context.budget <= 6_000 - 2_000

    app.reconfigure(session_id, model="claude-opus-4-6", context_window=20_000)
    assert app.session(session_id).provider_window is None


def test_an_error_that_is_not_an_overflow_is_refused_and_records_nothing(
    make_app: MakeApp, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.invalid_request("messages.0.content: Field required"))
    app = make_app(read_provider_error=translate_error)
    session_id = start(app)
    grow(app, session_id, turns=2)
    before = len(app.history(session_id))
    with pytest.raises(anthropic.BadRequestError) as rejected:
        fake_anthropic.client().messages.create(**body_of(app.prepare_request(session_id)))

    for wrong in (rejected.value, ValueError("boom"), -5, "6000"):
        with pytest.raises(NotAnOverflowError):
            app.report_overflow(session_id, wrong)  # type: ignore[arg-type]

    with pytest.raises(NotAnOverflowError):
        app.report_overflow(session_id, 6_000, tokens="9000")  # type: ignore[arg-type]
    assert len(app.history(session_id)) == before
    with pytest.raises(UnknownSessionError):
        app.report_overflow(UUID(int=1), 6_000)


def test_a_provider_count_over_the_budget_compacts_and_keeps_the_window(
    make_app: MakeApp, fake_anthropic: FakeAnthropic
) -> None:
    app = make_app()
    session_id = start(app, window=20_000, threshold_ratio=1.0)
    grow(app, session_id, turns=1)
    while app.session(session_id).estimate() < 0.9 * 19_000:
        app.record_reply(session_id, Message.assistant("Go on."))
        app.append_message(session_id, Message.user(words(400)))
    prepared = app.prepare_request(session_id)
    assert prepared.needs_count
    fake_anthropic.enqueue(api.token_count(25_000), path=api.COUNT_TOKENS_PATH)

    counted = fake_anthropic.client().messages.count_tokens(**count_tokens_body(body_of(prepared)))
    again = app.check_count(session_id, counted.input_tokens)

    assert again is not None
    assert again.context.estimate < prepared.context.estimate
    assert "OverflowReported" in kinds(app, session_id)
    assert app.session(session_id).provider_window is None
    assert app.check_count(session_id, 100) is None
    with pytest.raises(NotAnOverflowError):
        app.check_count(session_id, 0)


def test_complete_passes_request_options_and_streams_text(
    make_app: MakeApp, fake_anthropic: FakeAnthropic
) -> None:
    chat = AnthropicChatModel(fake_anthropic.client(), max_retries=0)
    app = make_app(chat_model=chat)
    session_id = app.start_session(model="claude-sonnet-4-6", max_output_tokens=4_000)
    app.append_message(session_id, Message.user("Hello"))
    pieces: list[str] = []

    reply = app.complete(
        session_id,
        thinking={"type": "enabled", "budget_tokens": 2_048},
        tool_choice={"type": "auto"},
        metadata={"user_id": "user-42"},
        stop_sequences=["END"],
        on_text=pieces.append,
    )

    body = fake_anthropic.requests_to()[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2_048}
    assert body["tool_choice"] == {"type": "auto"}
    assert "temperature" not in body
    assert body["metadata"] == {"user_id": "user-42"}
    assert body["stop_sequences"] == ["END"]
    assert body["stream"] is True
    assert len(pieces) > 1
    assert "".join(pieces) == reply.message.text
    app.append_message(session_id, Message.user("Once more, briefly."))
    app.complete(session_id, temperature=0.2)
    assert fake_anthropic.requests_to()[-1].body["temperature"] == 0.2
    assert fake_anthropic.violations == []


@pytest.mark.parametrize(
    "options",
    [
        {"temperature": 1.5},
        {"thinking": {"type": "enabled", "budget_tokens": 100}},
        {"thinking": {"type": "enabled", "budget_tokens": 8_000}},  # not below max_tokens
        {"thinking": {"type": "enabled", "budget_tokens": 2_048}, "temperature": 1},
        {"thinking": {"type": "enabled", "budget_tokens": 2_048}, "tool_choice": {"type": "any"}},
        {"tool_choice": {"type": "tool"}},
        {"stop_sequences": "END"},
        {"stop_sequences": [""]},
        {"stop_sequences": ["END \ud800"]},  # no UTF-8 encodes a lone surrogate
        {"metadata": {"user_id": "user-\udfff"}},
        {"tool_choice": {"type": "tool", "name": "search"}},  # the session has no such tool
    ],
)
def test_options_the_api_would_refuse_fail_before_anything_is_sent(
    make_app: MakeApp, options: dict[str, Any]
) -> None:
    chat = FakeChatModel()
    app = make_app(chat_model=chat)
    session_id = app.start_session(model="claude-sonnet-4-6", max_output_tokens=4_000)
    app.append_message(session_id, Message.user("Hello"))
    before = len(app.history(session_id))

    with pytest.raises(InvalidRequestOptionsError):
        app.complete(session_id, **options)

    assert chat.sent == []
    assert len(app.history(session_id)) == before


def test_rendering_refuses_a_thinking_budget_not_below_max_tokens(make_app: MakeApp) -> None:
    app = make_app()
    session_id = app.start_session(model="claude-sonnet-4-6", max_output_tokens=4_096)
    app.append_message(session_id, Message.user("Hello"))
    prepared = app.prepare_request(session_id)
    thinking = {"type": "enabled", "budget_tokens": 4_096}

    with pytest.raises(InvalidRequestOptionsError, match="below max_tokens"):
        render_request(
            prepared.context,
            model=prepared.model,
            max_tokens=prepared.max_tokens,
            options=RequestOptions(thinking=thinking),
        )
    body = render_request(
        prepared.context,
        model=prepared.model,
        max_tokens=8_192,
        options=RequestOptions(thinking=thinking),
    )
    assert body["thinking"] == thinking


def test_thinking_cannot_start_in_the_middle_of_a_tool_loop(
    make_app: MakeApp, fake_anthropic: FakeAnthropic
) -> None:
    chat = AnthropicChatModel(fake_anthropic.client(), max_retries=0)
    app = make_app(chat_model=chat)
    session_id = app.start_session(model="claude-sonnet-4-6", max_output_tokens=4_000, tools=TOOLS)
    call, result = exchange([words(20)])
    app.append_message(session_id, Message.user("Run the tests."))
    app.record_reply(session_id, call)
    app.append_message(session_id, result)
    thinking = {"type": "enabled", "budget_tokens": 2_048}

    with pytest.raises(InvalidRequestOptionsError, match="tool loop"):
        app.complete(session_id, thinking=thinking)

    assert fake_anthropic.requests_to() == []
    app.complete(session_id)  # the loop goes on without thinking
    app.append_message(session_id, Message.user("Now the docs."))
    app.complete(session_id, thinking=thinking)  # a new prompt may turn it on
    assert fake_anthropic.requests_to()[-1].body["thinking"] == thinking
    assert fake_anthropic.violations == []


def test_rendering_refuses_a_forced_tool_the_request_does_not_define(make_app: MakeApp) -> None:
    app = make_app()
    session_id = start(app)
    app.append_message(session_id, Message.user("Hello"))
    prepared = app.prepare_request(session_id)
    defined = str(TOOLS[0]["name"])

    def render(name: str) -> dict[str, Any]:
        options = RequestOptions(tool_choice={"type": "tool", "name": name})
        return render_request(
            prepared.context, model=prepared.model, max_tokens=1_000, options=options
        )

    with pytest.raises(InvalidRequestOptionsError, match="not one of the session's tools"):
        render("no_such_tool")
    assert render(defined)["tool_choice"] == {"type": "tool", "name": defined}
    # An MCP toolset's tools are its server's to name: not checked here.
    toolset = {"type": "mcp_toolset", "mcp_server_name": "docs"}
    app.reconfigure(session_id, tools=[*TOOLS, toolset])
    prepared = app.prepare_request(session_id)
    assert render("search_docs")["tool_choice"]["name"] == "search_docs"
