"""A host's `cache_control` marks on its tools go with every request: a mark the Messages API
refuses (another type, a ttl it does not know, five of them, a 1-hour mark after a 5-minute
one) is refused where the tools are given, with `InvalidToolDefinitionError` and nothing
written, not taken and then refused by the API at every request."""

from __future__ import annotations

from typing import Any

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidToolDefinitionError
from abridged.domain.messages import Message
from tests.support.anthropic_rules import violations
from tests.support.fakes import FakeSummarizer

FIVE_MINUTES = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


def tools(marks: list[Any]) -> list[dict[str, Any]]:
    """A tool per mark; `None` gives a tool without one."""
    return [
        {"name": f"tool{i}", "input_schema": {"type": "object"}}
        | ({} if mark is None else {"cache_control": mark})
        for i, mark in enumerate(marks)
    ]


def service() -> Sessions:
    return Sessions(
        counter=TiktokenCounter(),
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )


@pytest.mark.parametrize(
    "marks",
    [
        [FIVE_MINUTES] * 5,
        [FIVE_MINUTES, ONE_HOUR],
        [{"type": "persistent"}],
        [{"type": "ephemeral", "ttl": "1d"}],
    ],
    ids=["five", "hour-after-minutes", "type", "ttl"],
)
def test_marks_no_request_could_carry_are_refused_where_the_tools_are_given(
    marks: list[Any],
) -> None:
    app = service()
    with pytest.raises(InvalidToolDefinitionError):
        app.start_session(model="claude-sonnet-4-5", max_output_tokens=1_000, tools=tools(marks))
    session_id = app.start_session(model="claude-sonnet-4-5", max_output_tokens=1_000)
    with pytest.raises(InvalidToolDefinitionError):
        app.reconfigure(session_id, tools=tools(marks))
    assert [type(e).__name__ for e in app.history(session_id)] == ["Started"]


def test_marks_the_api_takes_are_sent_as_given() -> None:
    app = service()
    given = tools([ONE_HOUR, FIVE_MINUTES, None])
    session_id = app.start_session(model="claude-sonnet-4-5", max_output_tokens=1_000, tools=given)
    app.append_message(session_id, Message.user("hi"))
    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
    assert violations(body) == []
    assert [t.get("cache_control") for t in body["tools"]] == [ONE_HOUR, FIVE_MINUTES, None]
