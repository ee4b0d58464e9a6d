"""The `complete` loop, written once for both services.

`completion` is the loop's every decision (count first near the limit, go on as estimated
when counting is down, compact and send once more when the prompt is too long, keep a paid
reply the session refuses) as a generator that does no I/O: it yields each effect it needs
(a command of the service, a call to the chat model) and is resumed with the effect's result,
or with the error it raised. `driven` runs it with a `Sessions` and a `ChatModel`;
`driven_async` awaits each effect with an `AsyncSessions` and an `AsyncChatModel`. Both
services' `complete` are made by them from `completion`, so they take the same parameters
and decide the same way by construction.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypeVar
from uuid import UUID

import attrs

from abridged.application.async_ports import AsyncChatModel
from abridged.application.notices import NoticeCallback
from abridged.application.ports import (
    ChatModel,
    ModelReply,
    PromptTooLongError,
    ProviderError,
    RequestOptions,
    TextCallback,
)
from abridged.domain.context import Context
from abridged.domain.errors import ContextOverflowError, InvalidMessageError, SessionError
from abridged.domain.messages import JSON

__all__ = ["Completion", "Effect", "completion", "driven", "driven_async"]

logger = logging.getLogger(__name__)

P = ParamSpec("P")
F = TypeVar("F", bound=Callable[..., Any])


@attrs.frozen
class Effect:
    """One thing the loop needs done: a command of the service (`target="service"`,
    awaited on `AsyncSessions`) or a call to the chat model (`"model"`, awaited for an
    `AsyncChatModel`)."""

    target: Literal["service", "model"]
    name: str
    args: tuple[object, ...]
    kwargs: Mapping[str, object] = attrs.field(factory=dict)

    def on(self, service: object, chat: object) -> Any:
        """The method's result (a coroutine on an asyncio service or model)."""
        called = getattr(service if self.target == "service" else chat, self.name)
        return called(*self.args, **self.kwargs)


Steps = Generator[Effect, Any, ModelReply]
"""The loop: yields effects, is sent each one's result (or thrown its error), returns the
reply."""


def still_too_long(error: PromptTooLongError, context: Context) -> ContextOverflowError:
    """The error of a request the provider refused again after the session was compacted."""
    return ContextOverflowError(
        f"the provider still found the request too long after compacting: {error}",
        position=None,
        tokens=error.tokens or context.estimate,
        budget=context.budget,
    )


def completion(
    session_id: UUID | str,
    *,
    thinking: Mapping[str, JSON] | None = None,
    tool_choice: Mapping[str, JSON] | None = None,
    temperature: float | None = None,
    metadata: Mapping[str, JSON] | None = None,
    stop_sequences: Sequence[str] = (),
    on_text: TextCallback | None = None,
    on_notice: NoticeCallback | None = None,
) -> Steps:
    """Prepares the request, sends it through the chat model and records the reply.

    `thinking`, `tool_choice`, `temperature`, `metadata` (the API's, e.g. `user_id`) and
    `stop_sequences` go into the request as the Messages API spells them
    (`InvalidRequestOptionsError`, before anything is sent, for values it would refuse);
    `on_text` receives the reply's text as it streams, `on_notice` the context notices.

    Near the limit the provider counts the request first (when counting fails, the request
    goes as estimated). When the provider answers that the prompt is too long, the session
    is compacted (trigger `overflow`) and the request sent once more. Every reply the
    provider returns is recorded, even one cut short or empty; a reply no session can keep
    raises `ProviderError` with the reply as its `reply`."""
    options = RequestOptions(
        thinking=thinking,
        tool_choice=tool_choice,
        temperature=temperature,
        metadata=metadata,
        stop_sequences=stop_sequences,  # a string is refused by the converter
    )
    notices = {"on_notice": on_notice}
    # What the service's commands answer is a `PreparedRequest` (`None` from `check_count`
    # when the count is within the budget).
    prepared = yield Effect("service", "prepare_request", (session_id,), notices)
    options.check_for(prepared.max_tokens)
    options.check_tools(prepared.context.tools)
    if prepared.needs_count:
        try:
            counted = yield Effect(
                "model", "count_tokens", (prepared.context,), {"model": prepared.model}
            )
        except PromptTooLongError:
            raise
        except ProviderError as error:
            # Counting is a precaution: an outage of it must not block the request, and an
            # overflow is still caught by the provider's answer below.
            logger.warning("count_tokens failed; sending as estimated: %s", error)
        else:
            recounted = yield Effect("service", "check_count", (session_id, counted), notices)
            prepared = recounted or prepared

    def send(prepared: Any) -> Effect:
        request = {"model": prepared.model, "max_tokens": prepared.max_tokens}
        request |= {"options": options, "on_text": on_text}
        return Effect("model", "send", (prepared.context,), request)

    try:
        reply: ModelReply = yield send(prepared)
    except PromptTooLongError as error:
        prepared = yield Effect("service", "report_overflow", (session_id, error), notices)
        try:
            reply = yield send(prepared)
        except PromptTooLongError as again:
            raise still_too_long(again, prepared.context) from again
    estimate = {"request_estimate": prepared.context.raw_estimate, "model": reply.model}
    try:
        yield Effect("service", "record_reply", (session_id, reply.message, reply.usage), estimate)
    except InvalidMessageError as error:
        failure = ProviderError(f"the model's reply cannot join the session: {error}")
        failure.reply = reply  # type: ignore[attr-defined]  # paid for: the caller keeps it
        raise failure from error
    except Exception as error:
        # Recording failed for another reason (the store, the token counter): the error
        # stays what it is, and carries the reply, paid for, to be recorded again.
        with contextlib.suppress(AttributeError):
            error.reply = reply  # type: ignore[attr-defined]
        raise
    return reply


@attrs.define
class Completion:
    """A run of the loop: the effect it waits on, then the reply it returned."""

    steps: Steps
    pending: Effect | None = None
    reply: ModelReply | None = None

    def __attrs_post_init__(self) -> None:
        self.resume(None, None)

    def resume(self, result: object, error: Exception | None) -> None:
        """Hands the pending effect's result (or error) to the loop; raises what the loop
        raises."""
        try:
            self.pending = self.steps.throw(error) if error is not None else self.steps.send(result)
        except StopIteration as stop:
            self.pending, self.reply = None, stop.value


class _Service(Protocol):
    @property
    def chat_model(self) -> ChatModel | None: ...


class _AsyncService(Protocol):
    @property
    def chat_model(self) -> AsyncChatModel | None: ...


def _chat(service: object, chat: object | None) -> object:
    if chat is None:
        kind = type(service).__name__
        raise SessionError(f"this service has no chat model: pass chat_model= to {kind}")
    return chat


def driven(
    loop: Callable[P, Steps],
) -> Callable[Concatenate[_Service, P], ModelReply]:
    """`loop` as a method of `Sessions`: each effect carried out as it comes."""

    @functools.wraps(loop)
    def complete(service: _Service, /, *args: P.args, **kwargs: P.kwargs) -> ModelReply:
        chat = _chat(service, service.chat_model)
        run = Completion(loop(*args, **kwargs))
        while (effect := run.pending) is not None:
            result, error = _outcome(effect.on, service, chat)
            run.resume(result, error)
        assert run.reply is not None
        return run.reply

    return _method(complete, loop)


def driven_async(
    loop: Callable[P, Steps],
) -> Callable[Concatenate[_AsyncService, P], Coroutine[Any, Any, ModelReply]]:
    """`loop` as a coroutine method of `AsyncSessions`: each effect awaited (commands on the
    service's worker threads, the chat model on the event loop)."""

    @functools.wraps(loop)
    async def complete(service: _AsyncService, /, *args: P.args, **kwargs: P.kwargs) -> ModelReply:
        chat = _chat(service, service.chat_model)
        run = Completion(loop(*args, **kwargs))
        while (effect := run.pending) is not None:
            result: object = None
            error: Exception | None = None
            try:
                result = await effect.on(service, chat)
            except asyncio.CancelledError as raised:
                if effect.target == "service" or _being_cancelled():
                    raise
                # The chat model cancelled itself (an inner task of its client, say): that is
                # its failure. Let through, it would end the host's task as if the host had
                # cancelled it, and a `TaskGroup` drops a child that ends so, unseen.
                error = ProviderError(
                    f"the chat model's {effect.name} raised CancelledError; nothing cancelled "
                    "this call"
                )
                error.__cause__ = raised
            except Exception as raised:
                error = raised
            run.resume(result, error)
        assert run.reply is not None
        return run.reply

    complete.__doc__ = (
        f"{loop.__doc__}\n\nAwaited: the service's commands run on its worker threads (so "
        "`on_notice` is called from one), the chat model's requests on the event loop."
    )
    return _method(complete, loop)


def _being_cancelled() -> bool:
    """Whether the running task was asked to cancel (by the host, or its `asyncio.timeout`)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _method(method: F, loop: Callable[..., Steps]) -> F:
    # `functools.wraps` leaves the loop's signature, which has no `self`: introspection of a
    # bound method would then drop `session_id` in its place. It also leaves the loop's
    # annotations, whose return is the generator (`Steps`): the method returns its reply.
    parameters = inspect.signature(loop).parameters.values()
    itself = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    method.__annotations__ = {**loop.__annotations__, "return": "ModelReply"}
    method.__dict__["__signature__"] = inspect.Signature(
        [itself, *parameters], return_annotation="ModelReply"
    )
    return method


def _outcome(
    call: Callable[[object, object], object], service: object, chat: object
) -> tuple[object, Exception | None]:
    try:
        return call(service, chat), None
    except Exception as error:
        return None, error
