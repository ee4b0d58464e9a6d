"""One scenario suite, run against the synchronous service and the asyncio one.

Each scenario is written once, against awaited calls, and runs against `Sessions` and
`AsyncSessions` (with the async ports awaited on the loop). Both must behave the same and
record the same events: the last test compares their audit trails fact for fact.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.bootstrap import persistence_env
from abridged.application.async_service import AsyncSessions
from abridged.application.audit import event_facts
from abridged.application.ports import ModelReply, PromptTooLongError
from abridged.application.service import Sessions
from abridged.domain.errors import (
    CompactionFailedError,
    InvalidMessageError,
    InvalidSettingsError,
    RoleOrderError,
    UnknownSessionError,
)
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.usage import Usage
from tests.support.async_fakes import (
    AsyncDriver,
    AsyncFakeChatModel,
    AsyncFakeSummarizer,
    Driver,
    SyncDriver,
)
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import check_request, system_text
from tests.support.fakes import FakeChatModel, FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
MEMORY = {"PERSISTENCE_MODULE": "eventsourcing.popo"}

Scenario = Callable[[Driver], Coroutine[Any, Any, None]]


def make_driver(kind: str, summarizer: FakeSummarizer, chat: FakeChatModel | None = None) -> Driver:
    if kind == "sync":
        return SyncDriver(
            Sessions(counter=COUNTER, summarizer=summarizer, chat_model=chat, env=MEMORY)
        )
    return AsyncDriver(
        AsyncSessions(
            counter=COUNTER,
            summarizer=AsyncFakeSummarizer(summarizer),
            chat_model=AsyncFakeChatModel(chat) if chat else None,
            env=MEMORY,
        )
    )


def run(
    kind: str,
    scenario: Scenario,
    summarizer: FakeSummarizer | None = None,
    chat: FakeChatModel | None = None,
    before_close: Callable[[Driver], None] | None = None,
) -> Driver:
    """Runs the scenario against a fresh service of `kind`; returns its driver (closed: a
    closed service answers nothing, so `before_close` reads what it needs first)."""
    driver = make_driver(kind, summarizer or FakeSummarizer(words(30, "fact")), chat)

    async def main() -> None:
        try:
            await scenario(driver)
            if before_close is not None:
                before_close(driver)
        finally:
            await driver.aclose()

    asyncio.run(main())
    return driver


async def start(driver: Driver, **settings: object) -> UUID:
    session_id: UUID = await driver.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0, keep_recent_turns=2, **settings),  # type: ignore[arg-type]
    )
    return session_id


async def converse(driver: Driver, session_id: UUID, turns: int) -> None:
    """Turns of a coding agent; every request is checked valid and within budget."""
    for i in range(turns):
        for message in turn(f"Request {i}", [words(120), words(80)]):
            if message.role is Role.ASSISTANT:
                check_request(await driver.prepare_request(session_id), COUNTER)
                await driver.record_reply(session_id, message)
            else:
                await driver.append_message(session_id, message)


KINDS = ["sync", "async"]


async def long_conversation(driver: Driver) -> None:
    session_id = await start(driver)
    await converse(driver, session_id, 30)
    session: Session = await driver.session(session_id)
    assert session.generation >= 2
    assert session.message_count == 30 * 6


async def overflow_then_reply(driver: Driver) -> None:
    session_id = await start(driver)
    await converse(driver, session_id, 3)
    await driver.append_message(session_id, Message.user("Go on."))
    reply = await driver.complete(session_id)
    assert reply.message.text == "Done."
    history = await driver.history(session_id)
    names = [type(e).__name__ for e in history]
    assert "OverflowReported" in names
    assert names[-1] == "MessageAppended"


async def failing_manual_compaction(driver: Driver) -> None:
    session_id = await start(driver)
    await converse(driver, session_id, 3)
    with pytest.raises(CompactionFailedError):
        await driver.compact(session_id, "focus on the parser")
    names = [type(e).__name__ for e in await driver.history(session_id)]
    assert names[-2:] == ["CompactionThresholdHit", "CompactionFailed"]


async def bad_input_writes_nothing(driver: Driver) -> None:
    session_id = await start(driver)
    before = len(await driver.history(session_id))
    with pytest.raises(RoleOrderError):
        await driver.append_message(session_id, Message.assistant("I speak first."))
    with pytest.raises(UnknownSessionError):
        await driver.prepare_request(UUID(int=7))
    with pytest.raises(InvalidSettingsError):
        await driver.reconfigure(session_id, max_output_tokens=5_000)
    with pytest.raises(InvalidMessageError):
        await driver.append_message(session_id, {"role": "user", "content": []})
    assert len(await driver.history(session_id)) == before


async def lifecycle(driver: Driver) -> None:
    session_id = await start(driver)
    await converse(driver, session_id, 2)
    changed = await driver.reconfigure(
        session_id,
        system="You are a terse reviewer.",
        tools=[*TOOLS, {"name": "search", "input_schema": {"type": "object"}}],
        model="claude-other",
        context_window=4_000,
    )
    assert changed == ["SystemPromptChanged", "ToolsChanged", "ModelChanged"]
    await driver.append_message(session_id, Message.user("Review the change."))
    prepared = await driver.prepare_request(session_id)
    body = check_request(prepared, COUNTER)
    assert body["model"] == "claude-other"
    assert system_text(body) == "You are a terse reviewer."
    assert [t["name"] for t in body["tools"]][-1] == "search"
    assert prepared.context.window == 4_000
    await driver.record_reply(session_id, Message.assistant("Looks good."))
    cleared = await driver.clear_session(session_id)
    await driver.append_message(cleared, Message.user("Start the next task."))
    fresh = await driver.prepare_request(cleared)
    check_request(fresh, COUNTER)
    assert len(fresh.context.summaries) == 1
    assert fresh.context.messages[0].content[0].text.startswith("<conversation-summary")
    resumed = await driver.resume_session(session_id, context_window=100_000)
    child: Session = await driver.session(resumed)
    parent: Session = await driver.session(session_id)
    assert child.message_count == parent.message_count  # the whole conversation fits
    assert child.summaries == []


async def background(driver: Driver) -> None:
    # The background mark comes before the hard threshold (the defaults compact early).
    session_id = await start(driver, threshold_ratio=0.7, background_threshold_ratio=0.45)
    for i in range(10):
        for message in turn(f"Request {i}", [words(120), words(80)]):
            if message.role is Role.ASSISTANT:
                prepared = await driver.prepare_request(session_id)
                check_request(prepared, COUNTER)
                assert prepared.compaction is None  # never on the user's turn
                await driver.record_reply(session_id, message)
                # Waiting here keeps the two services' trails comparable event for event.
                await driver.wait_background()
            else:
                await driver.append_message(session_id, message)
    history = await driver.history(session_id)
    hits = [e for e in history if isinstance(e, Session.CompactionThresholdHit)]
    assert hits
    assert {e.decision.trigger for e in hits} == {"background"}
    names = [type(e).__name__ for e in history]
    assert names.count("CompactionCompleted") == len(hits)


async def host_send_path(driver: Driver) -> None:
    # A host that sends requests itself: one call per turn, its own overflow and count.
    session_id = await start(driver)
    prepared = await driver.append_and_prepare(session_id, Message.user("Audit the parser."))
    check_request(prepared, COUNTER)
    await driver.record_reply(session_id, Message.assistant("Where should I start?"))
    for message in turn("Go on", [words(150), words(150)]):
        if message.role is Role.ASSISTANT:
            check_request(await driver.prepare_request(session_id), COUNTER)
            await driver.record_reply(session_id, message)
        else:
            await driver.append_message(session_id, message)
    await driver.append_message(session_id, Message.user("And the lexer?"))
    within = await driver.check_count(session_id, 10)
    assert within is None
    recovered = await driver.report_overflow(
        session_id, PromptTooLongError("prompt is too long", tokens=2_900, maximum=2_800)
    )
    # The provider's count recalibrates the estimate; the re-count applies it too.
    session: Session = await driver.session(session_id)
    check_request(recovered, COUNTER, session.calibration)
    assert recovered.context.window == 2_800


async def management(driver: Driver) -> None:
    first = await driver.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        tools=TOOLS,
        metadata={"team": "parsers"},
        tags=["nightly"],
    )
    second = await start(driver)
    await converse(driver, second, 12)
    page = await driver.list_sessions(metadata={"team": "parsers"})
    assert [s.id for s in page.sessions] == [first]
    stats = await driver.stats(second)
    assert stats.messages == 12 * 6
    records = await driver.compactions(second)
    assert len(records) == sum(stats.compactions_by_trigger.values())
    await driver.delete_session(first, "no longer needed")
    assert [s.id for s in (await driver.list_sessions()).sessions] == [second]


SCENARIOS: dict[str, tuple[Scenario, Callable[[], FakeChatModel | None]]] = {
    "host send path": (host_send_path, lambda: None),
    "management": (management, lambda: None),
    "long conversation": (long_conversation, lambda: None),
    "overflow then reply": (
        overflow_then_reply,
        lambda: FakeChatModel(
            [PromptTooLongError("prompt is too long", tokens=2_900, maximum=2_800)]
        ),
    ),
    "failing manual compaction": (failing_manual_compaction, lambda: None),
    "bad input writes nothing": (bad_input_writes_nothing, lambda: None),
    "lifecycle": (lifecycle, lambda: None),
    "background compaction": (background, lambda: None),
}


def summarizer_for(name: str) -> FakeSummarizer:
    return FakeSummarizer(words(30, "fact"), fail=1 if name == "failing manual compaction" else 0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_scenario_holds(kind: str, name: str) -> None:
    scenario, chat = SCENARIOS[name]
    run(kind, scenario, summarizer_for(name), chat())


def trail(driver: Driver) -> list[list[dict[str, Any]]]:
    """Every session's audit trail, without the ids and times that differ between runs."""
    assert isinstance(driver, SyncDriver | AsyncDriver)
    service = driver.app.sync if isinstance(driver, AsyncDriver) else driver.app
    trails = []
    log = service.recorder.select_notifications(start=1, limit=100_000)
    ids = list(dict.fromkeys(n.originator_id for n in log))
    for session_id in ids:
        assert isinstance(session_id, UUID)
        rows = [event_facts(e) for e in service.history(session_id)]
        for row in rows:
            row.pop("parent", None)
            row.pop("time", None)
        trails.append(rows)
    return trails


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_both_services_record_the_same_events(name: str) -> None:
    scenario, chat = SCENARIOS[name]
    trails: dict[str, list[list[dict[str, Any]]]] = {}
    for kind in ("sync", "async"):
        keep = functools.partial(lambda kind, d: trails.__setitem__(kind, trail(d)), kind)
        run(kind, scenario, summarizer_for(name), chat(), before_close=keep)
    assert trails["sync"] == trails["async"]


def test_usage_from_an_awaited_reply_calibrates_like_a_synchronous_one() -> None:
    reply = ModelReply(Message.assistant("Sure."), Usage(input_tokens=900), "claude-test")

    async def scenario(driver: Driver) -> None:
        session_id = await start(driver)
        await driver.append_message(session_id, Message.user("Hello"))
        await driver.complete(session_id)
        session: Session = await driver.session(session_id)
        assert session.calibration != 1.0

    for kind in KINDS:
        run(kind, scenario, chat=FakeChatModel([reply]))


def test_the_async_service_keeps_the_store_off_the_event_loop(tmp_path: Path) -> None:
    app = AsyncSessions(
        counter=COUNTER,
        summarizer=AsyncFakeSummarizer(FakeSummarizer(words(30, "fact"))),
        env=persistence_env(tmp_path / "sessions.sqlite3"),
    )
    threads: set[int] = set()
    for name in ("insert_events", "select_events"):
        original = getattr(app.sync.recorder, name)

        def spy(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            threads.add(threading.get_ident())
            return _original(*args, **kwargs)

        setattr(app.sync.recorder, name, spy)

    async def host() -> int:
        await background(AsyncDriver(app))
        await app.aclose()
        return threading.get_ident()

    loop_thread = asyncio.run(host())

    assert threads
    assert loop_thread not in threads
