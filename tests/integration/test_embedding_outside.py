"""The embedding API as a host uses and misuses it (the fifth outside check).

Each wrong argument or misbehaving port gets a typed error (a `SessionError`, or a
`SummarizerError` turned into the recorded fallback) and writes nothing it should not; the
session stays usable afterwards.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

import abridged
from abridged import (
    CompactionFailedError,
    InvalidArgumentError,
    ServiceClosedError,
    Sessions,
    Summary,
    TokenCounterError,
)
from abridged.domain.messages import Message
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

MakeApp = Callable[..., Sessions]


def _started(app: Sessions, *, window: int = 200_000, output: int = 1_000) -> UUID:
    return app.start_session(
        model="claude-sonnet-4-6",
        context_window=window,
        max_output_tokens=output,
        system="Be brief.",
    )


def _filled(app: Sessions, session_id: UUID, turns: int) -> None:
    for turn in range(turns):
        app.append_message(session_id, {"role": "user", "content": f"question {turn} " + "w " * 40})
        app.record_reply(
            session_id, {"role": "assistant", "content": f"answer {turn} " + "w " * 40}
        )


def _refused(app: Sessions, session_id: UUID, call: Callable[[], object]) -> str:
    """The `InvalidArgumentError` `call` raises, having recorded nothing."""
    before = len(app.history(session_id))
    with pytest.raises(InvalidArgumentError) as raised:
        call()
    assert len(app.history(session_id)) == before
    return str(raised.value)


# Arguments of the wrong type at the public entry points.


def test_settings_given_as_a_dict_are_refused_with_a_typed_error(app: Sessions) -> None:
    session_id = _started(app)
    settings: Any = {"threshold_ratio": 0.5}
    message = _refused(app, session_id, lambda: app.reconfigure(session_id, settings=settings))
    assert "settings_from" in message
    _refused(
        app,
        session_id,
        lambda: app.start_session(model="m", max_output_tokens=100, settings=settings),
    )
    app.append_message(session_id, {"role": "user", "content": "hello"})
    _refused(app, session_id, lambda: app.resume_session(session_id, settings=settings))
    _refused(app, session_id, lambda: app.resume_session(session_id, model=5))
    assert len(app.list_sessions().sessions) == 1


def test_text_arguments_of_another_type_are_refused_before_anything_is_recorded(
    app: Sessions,
) -> None:
    session_id = _started(app)
    _filled(app, session_id, 2)
    app.append_message(session_id, {"role": "user", "content": "next"})
    focus: Any = ["tests"]
    _refused(app, session_id, lambda: app.compact(session_id, focus))
    _refused(app, session_id, lambda: app.clear_session(session_id, instructions=focus))
    _refused(app, session_id, lambda: app.reconfigure(session_id, model=5))  # type: ignore[arg-type]
    _refused(app, session_id, lambda: app.reconfigure(session_id, max_output_tokens="9"))  # type: ignore[arg-type]
    _refused(app, session_id, lambda: app.request_compaction(session_id, 5))  # type: ignore[arg-type]
    _refused(app, session_id, lambda: app.session(session_id, version="2"))  # type: ignore[arg-type]
    reply = {"role": "assistant", "content": "done"}
    _refused(app, session_id, lambda: app.record_reply(session_id, reply, model=5))  # type: ignore[arg-type]
    _refused(app, session_id, lambda: app.record_reply(session_id, reply, model="  "))
    app.record_reply(session_id, reply)
    assert app.history(session_id)[-1].model == "claude-sonnet-4-6"  # type: ignore[attr-defined]


# Ports that break their contract.


class _Counter(FakeTokenCounter):
    def __init__(self, value: Callable[[str], object]) -> None:
        self.value = value

    def count(self, text: str) -> int:
        return self.value(text)  # type: ignore[return-value]


def _broken(_: str) -> int:
    raise RuntimeError("tokenizer down")


@pytest.mark.parametrize(
    "value",
    [lambda text: -len(text), lambda text: str(len(text)), lambda text: None, _broken],
    ids=["negative", "string", "none", "raises"],
)
def test_a_counter_that_returns_no_count_raises_a_typed_error_and_writes_nothing(
    make_app: MakeApp, value: Callable[[str], object]
) -> None:
    counting = {"on": False}
    app = make_app(counter=_Counter(lambda text: value(text) if counting["on"] else len(text)))
    session_id = _started(app)
    counting["on"] = True
    with pytest.raises(TokenCounterError):
        app.append_message(session_id, {"role": "user", "content": "hello there"})
    with pytest.raises(TokenCounterError):
        _started(app)
    assert len(app.history(session_id)) == 1
    counting["on"] = False
    app.append_message(session_id, {"role": "user", "content": "hello there"})
    assert app.prepare_request(session_id).context.raw_estimate > 0


def test_near_miss_counts_are_taken_as_meant(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    floats = make_app(counter=_Counter(lambda text: len(text) / 4))
    zeros = make_app(counter=_Counter(lambda text: 0))
    with caplog.at_level(logging.WARNING, logger="abridged"):
        for app in (floats, zeros):
            session_id = _started(app)
            app.append_message(session_id, {"role": "user", "content": "hello there"})
            counts = app.history(session_id)[-1].block_tokens  # type: ignore[attr-defined]
            assert all(type(c) is int and c >= 1 for c in counts)
            assert type(app.prepare_request(session_id).context.raw_estimate) is int
    assert "rounding it up" in caplog.text
    assert "counting 1" in caplog.text


class _Returning(FakeSummarizer):
    def __init__(self, result: object) -> None:
        super().__init__()
        self.result = result

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        return self.result  # type: ignore[return-value]


@pytest.mark.parametrize(
    "result",
    [
        None,
        "a summary as a bare string",
        Summary(text=12345, model="m"),  # type: ignore[arg-type]
        Summary(text="a summary", model="m", input_tokens=-5),
    ],
    ids=["none", "str", "text-not-str", "negative-usage"],
)
def test_a_summarizer_result_of_another_shape_fails_open_and_loudly_as_documented(
    make_app: MakeApp, result: object
) -> None:
    app = make_app(summarizer=_Returning(result), background=False)
    session_id = _started(app, window=2_000, output=200)
    _filled(app, session_id, 3)
    with pytest.raises(CompactionFailedError, match="summarizer"):
        app.compact(session_id)
    assert type(app.history(session_id)[-1]).__name__ == "CompactionFailed"
    _filled(app, session_id, 30)
    app.append_message(session_id, {"role": "user", "content": "last"})
    prepared = app.prepare_request(session_id)  # the threshold compaction falls back
    assert prepared.context_status == "summarized"
    names = [type(e).__name__ for e in app.history(session_id)[-4:]]
    assert names[-1] == "CompactionCompleted"
    assert "CompactionFailed" in names
    app.record_reply(session_id, {"role": "assistant", "content": "ok"})


# Lifecycle.


def _closed_calls(app: Sessions, session_id: UUID) -> list[Callable[[], object]]:
    return [
        lambda: app.append_message(session_id, {"role": "user", "content": "hi"}),
        lambda: app.history(session_id),
        lambda: app.session(session_id),
        lambda: _started(app),
        app.list_sessions,
    ]


def test_a_closed_service_says_so_on_every_store(make_app: MakeApp, tmp_path: Path) -> None:
    for app in (make_app(), abridged.bootstrap(tmp_path / "s.sqlite3", background=False)):
        session_id = _started(app)
        app.close()
        for call in _closed_calls(app, session_id):
            with pytest.raises(ServiceClosedError):
                call()
        app.close()  # closing twice does nothing


def test_a_closed_async_service_says_so() -> None:
    async def scenario() -> None:
        async with abridged.bootstrap_async(None, background=False) as sessions:
            session_id = await sessions.start_session(
                model="claude-sonnet-4-6", max_output_tokens=100
            )
        with pytest.raises(ServiceClosedError):
            await sessions.append_message(session_id, {"role": "user", "content": "hi"})
        await sessions.aclose()

    asyncio.run(scenario())
