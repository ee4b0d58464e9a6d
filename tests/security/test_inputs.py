"""Inputs that would poison every later request are refused at the door, through the dict API
a host uses (the README's way), with a typed error and nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.application.service import Sessions
from abridged.domain.errors import (
    InvalidMetadataError,
    InvalidSettingsError,
    InvalidUsageError,
    MalformedBlockError,
    MalformedToolIdError,
    SessionError,
    UnencodableContentError,
)
from abridged.domain.settings import CompactionSettings
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

TOOLS = [{"name": "run", "description": "runs", "input_schema": {"type": "object"}}]


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def tool_call(tool_input: Any, tool_id: str = "toolu_1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": tool_id, "name": "run", "input": tool_input}],
    }


OK = {"role": "assistant", "content": "ok"}

REPLIES: dict[str, tuple[Callable[[Sessions, UUID], object], type[SessionError]]] = {
    "NaN in a tool input": (
        lambda app, s: app.record_reply(s, tool_call({"x": float("nan")})),
        UnencodableContentError,
    ),
    "infinity in a tool input": (
        lambda app, s: app.record_reply(s, tool_call({"x": [float("-inf")]})),
        UnencodableContentError,
    ),
    "a tool input nested 490 levels": (
        lambda app, s: app.record_reply(s, tool_call(nested(490))),
        UnencodableContentError,
    ),
    "a 1 MB tool_use id": (
        lambda app, s: app.record_reply(s, tool_call({}, "toolu_" + "a" * 1_000_000)),
        MalformedToolIdError,
    ),
    "a bogus cache_control on a text block": (
        lambda app, s: app.record_reply(
            s,
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "x", "cache_control": {"type": "bogus"}}],
            },
        ),
        MalformedBlockError,
    ),
    "negative usage": (
        lambda app, s: app.record_reply(s, OK, {"input_tokens": -5, "output_tokens": 1}),
        InvalidUsageError,
    ),
    "absurd usage": (
        lambda app, s: app.record_reply(s, OK, {"input_tokens": 10**30, "output_tokens": 1}),
        InvalidUsageError,
    ),
    "usage inside an SDK-shaped reply": (
        lambda app, s: app.record_reply(s, {**OK, "usage": {"cache_read_input_tokens": -1}}),
        InvalidUsageError,
    ),
    "a negative request_estimate": (
        lambda app, s: app.record_reply(s, OK, {"input_tokens": 5}, request_estimate=-3),
        InvalidUsageError,
    ),
    "a NaN request_estimate": (
        lambda app, s: app.record_reply(
            s,
            OK,
            {"input_tokens": 5},
            request_estimate=float("nan"),  # type: ignore[arg-type]
        ),
        InvalidUsageError,
    ),
}


@pytest.fixture
def app(tmp_path: Path) -> Sessions:
    return bootstrap(
        tmp_path / "s.sqlite3", counter=FakeTokenCounter(), summarizer=FakeSummarizer()
    )


def waiting_for_a_reply(app: Sessions) -> UUID:
    session_id = app.start_session(
        model="claude-test", max_output_tokens=100, context_window=10_000, tools=TOOLS
    )
    app.append_message(session_id, {"role": "user", "content": "hi"})
    return session_id


@pytest.mark.parametrize("case", list(REPLIES))
def test_a_reply_that_would_poison_later_requests_is_refused_and_nothing_written(
    app: Sessions, case: str
) -> None:
    call, error = REPLIES[case]
    session_id = waiting_for_a_reply(app)
    before = len(app.history(session_id))

    with pytest.raises(error):
        call(app, session_id)

    assert len(app.history(session_id)) == before
    app.record_reply(session_id, OK)  # the session goes on
    app.append_message(session_id, {"role": "user", "content": "and?"})
    assert app.prepare_request(session_id).context.estimate > 0


@pytest.mark.parametrize(
    ("start", "error"),
    [
        ({"context_window": 10**12}, InvalidSettingsError),
        ({"metadata": {"user": "a\ud800b"}}, InvalidMetadataError),
        ({"tags": ["ok", "b\udfff"]}, InvalidMetadataError),
    ],
)
def test_a_start_with_absurd_settings_or_unencodable_metadata_is_refused(
    app: Sessions, start: dict[str, Any], error: type[SessionError]
) -> None:
    with pytest.raises(error):
        app.start_session(model="claude-test", max_output_tokens=100, **start)
    assert app.list_sessions().sessions == ()


@pytest.mark.parametrize(
    "settings",
    [
        {"keep_recent_turns": 10**9},
        {"threshold_floor_tokens": 10**12},
        {"salient_chars": 10**10},
        {"threshold_ratio": float("nan")},
    ],
)
def test_absurd_settings_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(InvalidSettingsError):
        CompactionSettings(**settings)
