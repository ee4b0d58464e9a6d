"""Provider faults through the real SDK against the local fake Messages API: every status,
malformed body or stream and timeout ends in a typed `ProviderError`; threshold compaction
fails open at once when the summarizer is dead; every reply the provider returned is kept."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from uuid import UUID

import anthropic
import pytest

from abridged.adapters.anthropic.chat_model import AnthropicChatModel
from abridged.adapters.anthropic.request import render_request
from abridged.adapters.anthropic.summarizer import DEFAULT_MODEL, AnthropicSummarizer
from abridged.application.guard import BreakerSettings
from abridged.application.ports import ProviderError, SummarizerError, Summary
from abridged.application.service import Sessions
from abridged.domain.messages import Message, Role, ThinkingBlock
from abridged.domain.replies import EMPTY_REPLY_TEXT
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support import fake_anthropic as api
from tests.support.anthropic_rules import violations
from tests.support.builders import TOOLS, turn, words
from tests.support.fake_anthropic import COUNT_TOKENS_PATH, FakeAnthropic, Response

FAULTS: dict[str, Response] = {
    "truncated JSON": api.truncated_json(),
    "empty body": api.empty_body(),
    "text/plain body": api.plain_text(),
    "bad event data": api.bad_sse_data(),
    "HTML 502 page": api.html_error(502),
    "400 invalid request": api.invalid_request(),
    "401 authentication": api.authentication_error(),
    "403 permission": api.error(403, "permission_error", "not allowed"),
    "404 model": api.model_not_found(),
    "429 rate limited": api.rate_limited(),
    "500 api error": api.api_error(),
    "529 overloaded": api.overloaded(),
    "overloaded mid-stream": api.overloaded_midstream(),
    "stream dropped": api.dropped_stream(),
    "timeout": api.slow(api.message("late"), 3.0),
}


def chat_model(fake: FakeAnthropic) -> AnthropicChatModel:
    client = fake.client().with_options(timeout=anthropic.Timeout(1.0, connect=1.0))
    return AnthropicChatModel(client, max_retries=0)


def start(app: Sessions, window: int = 20_000, **settings: object) -> UUID:
    return app.start_session(
        model="claude-sonnet-4-6",
        context_window=window,
        max_output_tokens=1_000,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def grow(app: Sessions, session_id: UUID, turns: int, size: int = 150) -> None:
    for i in range(turns):
        for message in turn(f"Request {i}", [words(size)]):
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("And now?"))


def kinds(app: Sessions, session_id: UUID) -> list[str]:
    return [type(e).__name__ for e in app.history(session_id)]


def next_request_is_valid(app: Sessions, session_id: UUID) -> dict[str, object]:
    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
    assert violations(body) == []
    assert prepared.context.estimate <= prepared.context.budget
    return body


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
def test_every_fault_of_a_send_is_a_provider_error(
    fake_anthropic: FakeAnthropic, make_app: MakeApp, fault: Response
) -> None:
    app = make_app(chat_model=chat_model(fake_anthropic))
    session_id = start(app)
    grow(app, session_id, turns=1)
    fake_anthropic.enqueue(fault)
    before = kinds(app, session_id)

    with pytest.raises(ProviderError):
        app.complete(session_id)

    assert kinds(app, session_id) == before, "no reply came, so none is recorded"
    assert app.complete(session_id).message.role is Role.ASSISTANT
    assert fake_anthropic.violations == []


@pytest.mark.parametrize(
    "fault",
    [api.truncated_json(), api.empty_body(), api.plain_text(), api.api_error()],
    ids=["truncated JSON", "empty body", "text/plain", "500"],
)
def test_a_fault_of_count_tokens_does_not_block_the_request(
    fake_anthropic: FakeAnthropic, make_app: MakeApp, fault: Response
) -> None:
    app = make_app(chat_model=chat_model(fake_anthropic))
    session_id = start(app, threshold_ratio=1.0)
    grow(app, session_id, turns=1)
    while app.session(session_id).estimate() < 0.9 * 19_000:
        app.record_reply(session_id, Message.assistant("Go on."))
        app.append_message(session_id, Message.user(words(400)))
    fake_anthropic.enqueue(fault, path=COUNT_TOKENS_PATH)

    reply = app.complete(session_id)

    assert reply.message.role is Role.ASSISTANT
    assert len(fake_anthropic.requests_to(COUNT_TOKENS_PATH)) == 1
    assert app.session(session_id).entries[-1].message == reply.message


def test_a_count_that_cannot_be_read_is_a_provider_error(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(api.truncated_json(), path=COUNT_TOKENS_PATH)
    model = chat_model(fake_anthropic)
    from tests.integration.test_anthropic_chat_model import agent_context

    with pytest.raises(ProviderError):
        model.count_tokens(agent_context(), model="claude-sonnet-4-6")


# Paid replies are kept.


def test_a_reply_cut_inside_its_thinking_is_recorded_and_not_sent_back_as_it_is(
    fake_anthropic: FakeAnthropic, make_app: MakeApp
) -> None:
    fake_anthropic.enqueue(
        api.message(
            [{"type": "thinking", "thinking": "Let me consider the parser and", "signature": ""}],
            stop_reason="max_tokens",
        )
    )
    app = make_app(chat_model=chat_model(fake_anthropic))
    session_id = start(app)
    grow(app, session_id, turns=1)

    reply = app.complete(session_id)

    assert reply.stop_reason == "max_tokens"
    stored = app.session(session_id).entries[-1].message
    assert stored == reply.message
    assert isinstance(stored.content[-1], ThinkingBlock)
    app.append_message(session_id, Message.user("Please go on."))
    body = next_request_is_valid(app, session_id)
    sent = body["messages"]
    assert isinstance(sent, list)
    assert sent[-2]["content"] == [{"type": "text", "text": EMPTY_REPLY_TEXT}]


def test_an_empty_reply_is_recorded_and_shown_as_a_note(
    fake_anthropic: FakeAnthropic, make_app: MakeApp
) -> None:
    fake_anthropic.enqueue(api.message([], stop_reason="end_turn"))
    app = make_app(chat_model=chat_model(fake_anthropic))
    session_id = start(app)
    grow(app, session_id, turns=1)

    reply = app.complete(session_id)

    assert reply.message.content == ()
    appended = [e for e in app.history(session_id) if isinstance(e, Session.MessageAppended)]
    assert appended[-1].message == reply.message
    assert appended[-1].usage is not None
    app.append_message(session_id, Message.user("Hello?"))
    next_request_is_valid(app, session_id)
    assert app.complete(session_id).message.text


def test_text_after_cut_thinking_is_kept_in_the_view(make_app: MakeApp) -> None:
    app = make_app()
    session_id = start(app)
    grow(app, session_id, turns=1)
    reply = Message.assistant(
        ThinkingBlock("first thought", "sig"), "Answer so far", ThinkingBlock("more", "")
    )

    app.record_reply(session_id, reply)
    app.append_message(session_id, Message.user("Go on."))

    body = next_request_is_valid(app, session_id)
    sent = body["messages"]
    assert isinstance(sent, list)
    assert [b["type"] for b in sent[-2]["content"]] == ["thinking", "text"]


# A dead summarizer.


def compaction_due(app: Sessions) -> UUID:
    session_id = start(app, window=8_000, threshold_floor_tokens=0)
    app.append_message(session_id, Message.user("Start."))
    while app.session(session_id).estimate() < app.session(session_id).limits.threshold:
        app.record_reply(session_id, Message.assistant(words(300)))
        app.append_message(session_id, Message.user(words(300)))
    return session_id


@pytest.mark.parametrize(
    "fault",
    [
        api.truncated_json(),
        api.plain_text(),
        api.bad_sse_data(),
        api.overloaded(),
        api.slow(api.message("late"), 3.0),
    ],
    ids=["truncated JSON", "text/plain", "bad event data", "529", "timeout"],
)
def test_threshold_compaction_fails_open_on_any_summarizer_fault(
    fake_anthropic: FakeAnthropic, make_app: MakeApp, fault: Response
) -> None:
    fake_anthropic.fail_model(DEFAULT_MODEL, fault)
    client = fake_anthropic.client().with_options(timeout=anthropic.Timeout(1.0, connect=1.0))
    summarizer = AnthropicSummarizer(client, max_retries=0, fallback_to_session_model=False)
    app = make_app(summarizer=summarizer)
    session_id = compaction_due(app)

    body = next_request_is_valid(app, session_id)

    assert body["messages"]
    names = kinds(app, session_id)
    assert "CompactionFailed" in names
    completed = [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]
    assert completed[-1].strategy == "truncate"


def test_a_dead_summarizer_is_not_called_again_while_its_breaker_is_open(
    fake_anthropic: FakeAnthropic, make_app: MakeApp
) -> None:
    fake_anthropic.fail_model(DEFAULT_MODEL, api.overloaded())
    summarizer = AnthropicSummarizer(
        fake_anthropic.client(), max_retries=2, fallback_to_session_model=False
    )
    app = make_app(summarizer=summarizer, summarizer_breaker=BreakerSettings(failures=1))
    first = compaction_due(app)
    next_request_is_valid(app, first)
    calls = len(fake_anthropic.requests_to())
    assert calls == 3  # one call, with the adapter's two retries

    second = compaction_due(app)
    next_request_is_valid(app, second)

    assert len(fake_anthropic.requests_to()) == calls
    failed = [e for e in app.history(second) if isinstance(e, Session.CompactionFailed)]
    assert "circuit breaker" in failed[-1].error


class StuckSummarizer:
    """Never answers until released: a summarizer whose every retry waits for ever."""

    name = "stuck"

    def __init__(self) -> None:
        self.release = threading.Event()

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        self.release.wait()
        raise SummarizerError("released")


@pytest.fixture
def stuck() -> Iterator[StuckSummarizer]:
    summarizer = StuckSummarizer()
    yield summarizer
    summarizer.release.set()


def test_a_summarizer_call_past_its_time_budget_fails_open(
    make_app: MakeApp, stuck: StuckSummarizer
) -> None:
    app = make_app(summarizer=stuck, summarizer_breaker=BreakerSettings(budget=0.2))
    session_id = compaction_due(app)

    next_request_is_valid(app, session_id)

    failed = [e for e in app.history(session_id) if isinstance(e, Session.CompactionFailed)]
    assert "time budget" in failed[-1].error
