"""Sessions.complete: the service calls the model itself, and recovers from an overflow."""

from __future__ import annotations

from uuid import UUID

import pytest

from abridged.adapters.anthropic.chat_model import AnthropicChatModel
from abridged.application.ports import ModelReply, PromptTooLongError, ProviderUnavailableError
from abridged.application.service import Sessions
from abridged.domain.errors import ContextOverflowError
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
from tests.conftest import MakeApp
from tests.support import fake_anthropic as api
from tests.support.builders import TOOLS, turn, words
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fakes import FakeChatModel


def grow(app: Sessions, session_id: UUID, turns: int, size: int = 150) -> None:
    for i in range(turns):
        for message in turn(f"Request {i}", [words(size)]):
            if message.role is Role.ASSISTANT:
                app.record_reply(session_id, message)
            else:
                app.append_message(session_id, message)
    app.append_message(session_id, Message.user("And now?"))


def start(app: Sessions, window: int = 20_000, **settings: object) -> UUID:
    return app.start_session(
        model="claude-sonnet-4-6",
        context_window=window,
        max_output_tokens=1_000,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def kinds(app: Sessions, session_id: UUID) -> list[str]:
    return [type(e).__name__ for e in app.history(session_id)]


def test_a_prompt_too_long_answer_compacts_and_retries_once(make_app: MakeApp) -> None:
    chat = FakeChatModel([PromptTooLongError("prompt is too long", tokens=9_000, maximum=6_000)])
    app = make_app(chat_model=chat)
    session_id = start(app, threshold_ratio=1.0)
    grow(app, session_id, turns=20)

    reply = app.complete(session_id)

    assert reply.message.text == "Done."
    names = kinds(app, session_id)
    assert names.index("OverflowReported") < names.index("CompactionThresholdHit")
    hit = next(e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit))
    assert hit.decision.trigger == "overflow"
    session = app.session(session_id)
    assert session.provider_window == 6_000
    assert session.calibration > 1.0
    assert len(chat.sent) == 2
    assert chat.sent[1][0].estimate <= 6_000 - 1_000
    assert session.entries[-1].message == reply.message


def test_a_second_overflow_is_a_typed_error_and_no_reply_is_recorded(make_app: MakeApp) -> None:
    too_long = PromptTooLongError("prompt is too long", tokens=9_000, maximum=200_000)
    chat = FakeChatModel([too_long, too_long])
    app = make_app(chat_model=chat)
    session_id = start(app, threshold_ratio=1.0)
    grow(app, session_id, turns=20)

    with pytest.raises(ContextOverflowError, match="still found the request too long"):
        app.complete(session_id)

    assert app.session(session_id).awaiting_reply
    assert "CompactionCompleted" in kinds(app, session_id)


def test_near_the_limit_the_provider_counts_first(make_app: MakeApp) -> None:
    chat = FakeChatModel(tokens=50_000)
    app = make_app(chat_model=chat)
    session_id = start(app, threshold_ratio=1.0)
    grow(app, session_id, turns=1)
    while app.session(session_id).estimate() < 0.9 * 19_000:
        app.record_reply(session_id, Message.assistant("Go on."))
        app.append_message(session_id, Message.user(words(400)))

    app.complete(session_id)

    assert chat.counted
    assert "OverflowReported" in kinds(app, session_id)
    assert chat.sent[-1][0].estimate < chat.counted[0][0].estimate


def test_provider_errors_after_retries_reach_the_caller_and_lose_nothing(
    make_app: MakeApp,
) -> None:
    chat = FakeChatModel([ProviderUnavailableError("overloaded")])
    app = make_app(chat_model=chat)
    session_id = start(app)
    grow(app, session_id, turns=2)
    before = len(app.history(session_id))

    with pytest.raises(ProviderUnavailableError):
        app.complete(session_id)

    assert len(app.history(session_id)) == before
    assert app.complete(session_id).message.text == "Done."


def test_usage_from_the_reply_is_recorded_and_calibrates(make_app: MakeApp) -> None:
    chat = FakeChatModel(
        [
            ModelReply(
                message=Message.assistant("Sure."),
                usage=Usage(input_tokens=100, cache_read_input_tokens=900, output_tokens=5),
                model="claude-sonnet-4-6",
            )
        ]
    )
    app = make_app(chat_model=chat)
    session_id = start(app)
    grow(app, session_id, turns=1)

    app.complete(session_id)

    appended = [e for e in app.history(session_id) if isinstance(e, Session.MessageAppended)]
    assert appended[-1].usage is not None
    assert appended[-1].usage.prompt_tokens == 1_000
    assert app.session(session_id).calibration != 1.0


def test_through_the_real_sdk_an_overflow_is_recovered(
    make_app: MakeApp, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.context_window = 6_000
    chat = AnthropicChatModel(fake_anthropic.client(), max_retries=0)
    app = make_app(chat_model=chat)
    session_id = start(app, window=200_000)
    grow(app, session_id, turns=25, size=120)

    reply = app.complete(session_id)

    assert reply.message.role is Role.ASSISTANT
    bodies = [r for r in fake_anthropic.requests if r.path == "/v1/messages"]
    assert len(bodies) == 2
    assert fake_anthropic.violations == []
    hits = [e for e in app.history(session_id) if isinstance(e, Session.CompactionThresholdHit)]
    assert [h.decision.trigger for h in hits] == ["overflow"]
    assert app.session(session_id).provider_window == 6_000


def test_through_the_real_sdk_overloaded_is_retried(
    make_app: MakeApp, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.overloaded(), api.api_error())
    chat = AnthropicChatModel(fake_anthropic.client(), max_retries=2)
    app = make_app(chat_model=chat)
    session_id = start(app)
    grow(app, session_id, turns=1)

    reply = app.complete(session_id)

    assert reply.message.role is Role.ASSISTANT
    assert len([r for r in fake_anthropic.requests if r.path == "/v1/messages"]) == 3


def test_counting_over_our_own_budget_recalibrates_but_keeps_the_window(
    make_app: MakeApp,
) -> None:
    chat = FakeChatModel(tokens=25_000)
    app = make_app(chat_model=chat)
    session_id = start(app, threshold_ratio=1.0)
    grow(app, session_id, turns=1)
    for _ in range(4):
        while app.session(session_id).estimate() < 0.9 * 19_000:
            app.record_reply(session_id, Message.assistant("Go on."))
            app.append_message(session_id, Message.user(words(400)))
        app.complete(session_id)
        app.append_message(session_id, Message.user(words(400)))

    session = app.session(session_id)
    assert session.provider_window is None
    assert session.limits.budget == 19_000
