"""The checks every built request must pass, shared by unit, property and replay tests."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any
from uuid import UUID

import attrs

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.ports import TokenCounter
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.capabilities import capabilities_for
from abridged.domain.messages import Message, Role
from abridged.domain.tokens import request_tokens
from tests.support.anthropic_rules import assert_valid_request


def system_text(body: dict[str, Any]) -> str:
    """The system prompt of a body, whether a string or a list of text blocks."""
    system = body.get("system", "")
    if isinstance(system, str):
        return system
    return "\n".join(block["text"] for block in system)


def recount(body: dict[str, Any], counter: TokenCounter) -> int:
    """Counts a rendered request body from scratch, with the library's counting rule."""
    # Cache breakpoints are request metadata, not content: blocks kept as JSON would
    # otherwise count them.
    messages = [
        Message.from_wire(
            {
                **m,
                "content": [
                    {k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]
                ],
            }
        )
        for m in body["messages"]
    ]
    return request_tokens(system_text(body), body.get("tools", []), messages, _counting(counter))


@functools.lru_cache(maxsize=4096)
def _cl100k_count(text: str) -> int:
    return TiktokenCounter().count(text)


def _counting(counter: TokenCounter) -> Callable[[str], int]:
    """`counter.count`, remembered by text for the tiktoken counter: a replay recounts every
    request from scratch, and all but its last few blocks were in the request before. The
    tiktoken counter is a pure function of the text, so a remembered count is the count."""
    return _cl100k_count if type(counter) is TiktokenCounter else counter.count


def check_request(
    prepared: PreparedRequest,
    counter: TokenCounter,
    calibration: float | None = None,
    future_types: Iterable[str] = (),
) -> dict[str, Any]:
    """Renders the request, checks it is valid and in budget, and returns the body.
    Its count is compared with the estimate before calibration, or, with `calibration`, with
    the estimate; `future_types` stand in for block types the API adds later (see
    `assert_valid_request`)."""
    context = prepared.context
    body = render_request(context, model=prepared.model, max_tokens=prepared.max_tokens)
    assert_valid_request(body, future_types)
    # A system message is counted for both of its renderings (`message_block_tokens`): the
    # estimate is exactly the count of the request that sends it as one, and no less than
    # the count of the request that folds it into marked text, as a model without them gets.
    unfolded = render_request(
        context,
        model=prepared.model,
        max_tokens=prepared.max_tokens,
        capabilities=attrs.evolve(
            context.capabilities or capabilities_for(prepared.model), system_messages=True
        ),
    )
    scale = 1.0 if calibration is None else calibration
    estimate = context.raw_estimate if calibration is None else context.estimate
    counted = math.ceil(recount(unfolded, counter) * scale)
    assert counted == estimate, (counted, estimate)
    assert math.ceil(recount(body, counter) * scale) <= estimate
    assert context.estimate <= context.window - prepared.max_tokens
    assert context.budget == context.window - prepared.max_tokens
    return body


def play(app: Sessions, session_id: UUID, messages: Iterable[Message]) -> None:
    """Each message as a host app sends it: a reply after a prepared request (unchecked)."""
    for message in messages:
        if message.role is Role.ASSISTANT:
            app.prepare_request(session_id)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)


def feed(app: Sessions, session_id: UUID, messages: list[Message], counter: TokenCounter) -> None:
    """Feeds messages as a host app would: before each assistant message, the request is
    prepared and checked; the reply is then recorded."""
    for message in messages:
        if message.role is Role.ASSISTANT:
            check_request(app.prepare_request(session_id), counter)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)


def stored_version(app: Sessions, session_id: UUID) -> int:
    """The version of the session's last stored event: what a call wrote, compared."""
    return app.recorder.select_events(session_id, desc=True, limit=1)[0].originator_version


def counted_writes(app: Sessions, monkeypatch: Any) -> list[object]:
    """The store's transactions from now on, as a list that grows by one per write (each
    `insert_events` call: one transaction)."""
    writes: list[object] = []
    insert = app.recorder.insert_events

    def counted(*args: object, **kwargs: object) -> object:
        writes.append(args)
        return insert(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(app.recorder, "insert_events", counted)
    return writes
