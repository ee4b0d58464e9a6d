"""The `complete` loop on its own, without a store or a provider: what it asks for, in
which order, for each answer it gets; and the synchronous and the awaited drivers ask for
the same things given the same answers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from abridged.application.completion import Completion, completion, driven, driven_async
from abridged.application.ports import (
    PromptTooLongError,
    ProviderError,
    ProviderUnavailableError,
    TokenCounterError,
)
from abridged.domain.errors import (
    ContextOverflowError,
    InvalidMessageError,
    InvalidRequestOptionsError,
    SessionError,
    StoreError,
)

NEAR_LIMIT = SimpleNamespace(
    model="m",
    max_tokens=1_000,
    needs_count=True,
    context=SimpleNamespace(estimate=9_500, budget=10_000, raw_estimate=9_000, tools=()),
)
ROOMY = SimpleNamespace(**{**vars(NEAR_LIMIT), "needs_count": False})
REPLY = SimpleNamespace(message="the reply", usage="its usage", model="claude-test")


class Script:
    """The answers to the loop's effects, by method name, in order; and the names asked."""

    def __init__(self, **answers: list[Any]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def answer(self, name: str) -> Any:
        self.asked.append(name)
        answer = self.answers[name].pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def run(script: Script, **options: Any) -> Any:
    """The loop alone, each effect answered from the script."""
    loop = Completion(completion("id", **options))
    while (effect := loop.pending) is not None:
        try:
            result, error = script.answer(effect.name), None
        except Exception as raised:
            result, error = None, raised
        loop.resume(result, error)
    return loop.reply


def test_a_quiet_request_is_prepared_sent_and_recorded() -> None:
    script = Script(prepare_request=[ROOMY], send=[REPLY], record_reply=[1])
    assert run(script) is REPLY
    assert script.asked == ["prepare_request", "send", "record_reply"]


def test_near_the_limit_an_outage_of_counting_sends_as_estimated() -> None:
    script = Script(
        prepare_request=[NEAR_LIMIT],
        count_tokens=[ProviderUnavailableError("529 overloaded")],
        send=[REPLY],
        record_reply=[1],
    )
    assert run(script) is REPLY
    assert script.asked == ["prepare_request", "count_tokens", "send", "record_reply"]


def test_a_count_over_the_budget_sends_the_compacted_request() -> None:
    script = Script(
        prepare_request=[NEAR_LIMIT],
        count_tokens=[12_000],
        check_count=[ROOMY],
        send=[REPLY],
        record_reply=[1],
    )
    assert run(script) is REPLY
    assert script.asked[:3] == ["prepare_request", "count_tokens", "check_count"]


def test_a_prompt_too_long_twice_is_a_context_overflow() -> None:
    script = Script(
        prepare_request=[ROOMY],
        send=[PromptTooLongError("too long"), PromptTooLongError("still", tokens=11_000)],
        report_overflow=[ROOMY],
    )
    with pytest.raises(ContextOverflowError, match="still found the request too long"):
        run(script)
    assert script.asked == ["prepare_request", "send", "report_overflow", "send"]


def test_a_reply_the_session_refuses_is_handed_back_with_the_error() -> None:
    script = Script(
        prepare_request=[ROOMY], send=[REPLY], record_reply=[InvalidMessageError("bad")]
    )
    with pytest.raises(ProviderError) as raised:
        run(script)
    assert raised.value.reply is REPLY  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "failure",
    [StoreError("disk full"), TokenCounterError("counter down")],
    ids=["store", "counter"],
)
def test_a_reply_whose_recording_failed_is_handed_back_with_the_error(failure: Exception) -> None:
    """Paid for: the host records it again once the store or the counter is back."""
    script = Script(prepare_request=[ROOMY], send=[REPLY], record_reply=[failure])
    with pytest.raises(type(failure)) as raised:
        run(script)
    assert raised.value.reply is REPLY  # type: ignore[attr-defined]


def test_request_options_are_checked_before_anything_is_sent() -> None:
    script = Script(prepare_request=[ROOMY])
    with pytest.raises(InvalidRequestOptionsError, match="below max_tokens"):
        run(script, thinking={"type": "enabled", "budget_tokens": 4_000})
    assert script.asked == ["prepare_request"]


class SyncService:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.chat_model = self

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.script.answer(name)


class AsyncService(SyncService):
    def __getattr__(self, name: str) -> Callable[..., Any]:
        async def answer(*args: Any, **kwargs: Any) -> Any:
            return self.script.answer(name)

        return answer


SCRIPTS: list[Callable[[], Script]] = [
    lambda: Script(prepare_request=[ROOMY], send=[REPLY], record_reply=[1]),
    lambda: Script(
        prepare_request=[NEAR_LIMIT],
        count_tokens=[ProviderUnavailableError("down")],
        send=[PromptTooLongError("too long"), REPLY],
        report_overflow=[ROOMY],
        record_reply=[1],
    ),
    lambda: Script(
        prepare_request=[NEAR_LIMIT], count_tokens=[PromptTooLongError("over the maximum")]
    ),
]


@pytest.mark.parametrize("make", SCRIPTS)
def test_both_drivers_ask_for_the_same_effects(make: Callable[[], Script]) -> None:
    def outcome(call: Callable[[], Any]) -> object:
        try:
            return call()
        except Exception as error:
            return type(error)

    sync_script, async_script = make(), make()
    sync = outcome(lambda: driven(completion)(SyncService(sync_script), "id"))  # type: ignore[arg-type]
    awaited = outcome(
        lambda: asyncio.run(driven_async(completion)(AsyncService(async_script), "id"))  # type: ignore[arg-type]
    )
    assert sync == awaited
    assert sync_script.asked == async_script.asked


def test_a_service_without_a_chat_model_says_so() -> None:
    service = SyncService(Script())
    service.chat_model = None  # type: ignore[assignment]
    with pytest.raises(SessionError, match="pass chat_model= to SyncService"):
        driven(completion)(service, "id")  # type: ignore[arg-type]
