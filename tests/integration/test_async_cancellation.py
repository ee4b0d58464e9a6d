"""An asyncio host cancels: a client goes away, `asyncio.timeout` expires, a sibling task
fails, the app shuts down. Each scenario cancels a call of `AsyncSessions` at one point of
its work (queued, waiting for the session's locks, awaiting the summarizer or the chat model,
after its save), on a SQLite file and in memory, and checks what the host relies on
(docs/embedding.md, "Cancellation and timeouts"):

- the call ends when its work has stopped: the summary it awaited is cancelled, its worker
  and the session's locks are free, and what it saved is final when the host sees the error;
- a command cancelled before its save saves nothing; the session stays usable and a replay
  of its events equals the live session;
- a retry never appends a message twice: one that was saved is refused as already there;
- `aclose()` waits for the running commands, refuses new ones, and when cancelled stops them
  with `ServiceClosedError`.

Every wait is bounded (`within`): a regression fails in seconds instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import psycopg
import pytest

from abridged.adapters.bootstrap import bootstrap, bootstrap_async
from abridged.adapters.postgres_locks import AdvisoryLocks, advisory_key
from abridged.application.async_service import AsyncSessions
from abridged.application.auditing import audit_session
from abridged.application.guard import BreakerSettings
from abridged.application.locks import ProcessLocks
from abridged.application.ports import ProviderError, Summary
from abridged.application.service import Sessions
from abridged.domain.errors import MessageAlreadyAppendedError, ServiceClosedError
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.async_fakes import GatedChatModel, GatedSummarizer
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import check_request
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.postgres import fresh_database

T = TypeVar("T")

WAIT = 5.0
"""Seconds any one wait of a scenario may take before the scenario fails."""

STORES = ("memory", "sqlite")
ALL_STORES = (*STORES, "postgres")


def store_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str | Path | None:
    if kind == "postgres":
        return fresh_database(request.getfixturevalue("postgres_server"))
    return tmp_path / "sessions.sqlite3" if kind == "sqlite" else None


async def within(awaitable: Awaitable[T], seconds: float = WAIT) -> T:
    return await asyncio.wait_for(awaitable, seconds)


async def until(condition: Callable[[], bool]) -> None:
    """Waits, bounded, until `condition()` holds (a state another thread reaches)."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.002)

    await within(poll())


async def timed_out_at(event: asyncio.Event, call: Coroutine[Any, Any, object]) -> None:
    """Runs `call` under `asyncio.timeout`, which expires the moment `event` is set: a host's
    timeout at exactly that point of the call."""
    async with asyncio.timeout(WAIT) as deadline:

        async def expire() -> None:
            await event.wait()
            deadline.reschedule(asyncio.get_running_loop().time())

        watcher = asyncio.create_task(expire())
        try:
            await call
        finally:
            watcher.cancel()


def service(db: str | Path | None, summarizer: object, **options: Any) -> AsyncSessions:
    """The service under test; a summary that never comes is given up after `WAIT` (so a
    failing scenario's `aclose()` does not wait the default two minutes for it)."""
    options.setdefault("summarizer_breaker", BreakerSettings(budget=WAIT))
    return bootstrap_async(
        db,
        counter=FakeTokenCounter(),
        summarizer=summarizer,  # type: ignore[arg-type]
        background=False,
        **options,
    )


async def over_threshold(app: AsyncSessions, *, asking: bool = True) -> UUID:
    """A session whose next request needs a compaction; with `asking`, its last message is
    the user's question (else the model's answer)."""
    session_id = await app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=400,
        tools=TOOLS,
        settings=CompactionSettings(
            threshold_floor_tokens=0, tool_output_mode="keep_all", background_threshold_ratio=0.3
        ),
    )
    for i in range(12):
        for message in turn(f"Request {i}", [words(150)]):
            if message.role is Role.ASSISTANT:
                await app.record_reply(session_id, message)
            else:
                await app.append_message(session_id, message)
    if asking:
        await app.append_message(session_id, Message.user("And now?"))
    return session_id


async def small_session(app: AsyncSessions) -> UUID:
    session_id = await app.start_session(
        model="claude-test", context_window=3_000, max_output_tokens=400
    )
    await app.append_message(session_id, Message.user("Hello?"))
    return session_id


def lock_users(app: AsyncSessions, session_id: UUID) -> tuple[int, int]:
    """Holders and waiters of the session's (compaction lock, command lock)."""
    locks = app.sync.locks
    assert isinstance(locks, ProcessLocks | AdvisoryLocks)
    return locks.users(session_id), app.sync.command_locks.users(session_id)


def comparable(session: Session) -> dict[str, object]:
    state = {k: v for k, v in vars(session).items() if not k.startswith("_")}
    state["entries"] = [(e.position, e.message, e.shown_tokens) for e in session.entries]
    return state


async def assert_consistent(app: AsyncSessions, session_id: UUID) -> None:
    """The session replays to its live state, its audit re-derives every decision, no lock
    of it is held, and its next request is valid."""
    live = await app.session(session_id)
    rebuilt = await app.session(session_id, version=live.version)
    assert comparable(rebuilt) == comparable(live)
    audit = await asyncio.to_thread(audit_session, app.sync, session_id)
    assert audit.ok, audit.mismatches
    assert lock_users(app, session_id) == (0, 0)
    if live.awaiting_reply:
        check_request(await within(app.prepare_request(session_id)), FakeTokenCounter())


def appended(app: Sessions, session_id: UUID, text: str) -> int:
    """How many stored `MessageAppended` events hold a message of this text."""
    return sum(
        isinstance(e, Session.MessageAppended) and e.message.text == text
        for e in app.history(session_id)
    )


# Timeouts and cancellation while the summary is written.


@pytest.mark.parametrize("store", ALL_STORES)
def test_a_timed_out_prepare_stops_its_summary_and_saves_nothing(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        async with service(store_of(store, tmp_path, request), summarizer) as app:
            session_id = await over_threshold(app)
            before = (await app.session(session_id)).version
            with pytest.raises(TimeoutError):
                await timed_out_at(summarizer.entered, app.prepare_request(session_id))
            # When the host sees the timeout, the command is over: nothing of the compaction
            # is saved, no lock of the session is held, and the summary was cancelled.
            assert lock_users(app, session_id) == (0, 0)
            await until(lambda: summarizer.cancelled == 1)
            assert (await app.session(session_id)).version == before
            # The host's retry compacts as usual.
            summarizer.gate.set()
            prepared = await within(app.prepare_request(session_id))
            assert prepared.compaction is not None
            assert summarizer.calls == 2
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


def test_timed_out_calls_give_their_workers_back() -> None:
    """A worker waiting for a summary that a host stopped waiting for would be lost to every
    other session: with two workers, two such timeouts would stall the service."""
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        async with service(None, summarizer, max_workers=2) as app:
            stuck = [await over_threshold(app) for _ in range(3)]
            other = await small_session(app)
            for session_id in stuck:
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(app.prepare_request(session_id), 0.2)
            check_request(await within(app.prepare_request(other), 2.0), FakeTokenCounter())
            await until(lambda: summarizer.cancelled == summarizer.calls)

    asyncio.run(scenario())


@pytest.mark.parametrize("store", ALL_STORES)
def test_a_reply_cancelled_while_it_waits_for_the_session_is_not_recorded(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A reply waits for the session's command lock, held by a compaction writing its summary,
    and is cancelled. It must not be recorded later, behind the host's back (after the host
    was told it was not, and after whatever the host did next)."""
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        async with service(store_of(store, tmp_path, request), summarizer, max_workers=2) as app:
            session_id = await over_threshold(app)
            preparing = asyncio.create_task(app.prepare_request(session_id))
            await within(summarizer.entered.wait())
            reply = asyncio.create_task(app.record_reply(session_id, Message.assistant("Yes.")))
            await until(lambda: lock_users(app, session_id) == (1, 2))
            reply.cancel()
            with pytest.raises(asyncio.CancelledError):
                await within(reply)
            # Its worker stopped waiting: the other one serves other sessions meanwhile.
            assert lock_users(app, session_id) == (1, 1)
            await within(small_session(app), 2.0)
            summarizer.gate.set()
            assert (await within(preparing)).compactions_so_far == 1
            assert (await app.session(session_id)).awaiting_reply  # the reply was not recorded
            await within(app.record_reply(session_id, Message.assistant("Yes.")))
            assert await asyncio.to_thread(appended, app.sync, session_id, "Yes.") == 1
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


def test_a_request_cancelled_while_it_waits_for_a_compaction_frees_its_worker() -> None:
    """A request waits for the compaction lock, held by a background compaction writing its
    summary (which holds no other lock), and is cancelled: its worker is free at once."""
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        async with service(None, summarizer, max_workers=2) as app:
            session_id = await over_threshold(app)
            background = app.compact_soon(session_id)
            await within(summarizer.entered.wait())
            request = asyncio.create_task(app.prepare_request(session_id))
            await until(lambda: lock_users(app, session_id) == (2, 0))
            request.cancel()
            with pytest.raises(asyncio.CancelledError):
                await within(request)
            assert lock_users(app, session_id) == (1, 0)
            await within(small_session(app), 2.0)
            summarizer.gate.set()
            assert (await within(background)) is not None
            assert (await within(app.prepare_request(session_id))).compactions_so_far == 1
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


@pytest.mark.parametrize("store", STORES)
def test_a_cancelled_append_and_prepare_keeps_the_message_it_saved(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """`append_and_prepare` saves the message before the summary is written: cancelled
    during the summary, the message stays and the compaction does not happen; the host's
    retry is refused as a duplicate, and `prepare_request` carries on."""
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        async with service(store_of(store, tmp_path, request), summarizer) as app:
            session_id = await over_threshold(app, asking=False)
            question = Message.user("And now?")
            task = asyncio.create_task(app.append_and_prepare(session_id, question))
            await within(summarizer.entered.wait())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await within(task)
            await until(lambda: summarizer.cancelled == 1)
            session = await app.session(session_id)
            assert session.entries[-1].message == question
            assert session.generation == 0
            with pytest.raises(MessageAlreadyAppendedError):
                await within(app.append_and_prepare(session_id, question))
            summarizer.gate.set()
            prepared = await within(app.prepare_request(session_id))
            assert prepared.compactions_so_far == 1
            assert await asyncio.to_thread(appended, app.sync, session_id, "And now?") == 1
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


@pytest.mark.parametrize("command", ["compact", "clear_session"])
def test_a_cancelled_compact_or_clear_records_nothing(command: str) -> None:
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        async with service(None, summarizer) as app:
            session_id = await over_threshold(app)
            before = (await app.session(session_id)).version
            sessions = len((await app.list_sessions()).sessions)
            task = asyncio.create_task(getattr(app, command)(session_id))
            await within(summarizer.entered.wait())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await within(task)
            await until(lambda: summarizer.cancelled == 1)
            assert (await app.session(session_id)).version == before
            assert len((await app.list_sessions()).sessions) == sessions
            summarizer.gate.set()
            await within(getattr(app, command)(session_id))
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


@pytest.mark.parametrize("store", STORES)
def test_a_cancelled_background_compaction_frees_the_session(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        async with service(store_of(store, tmp_path, request), summarizer) as app:
            session_id = await over_threshold(app)
            task = app.compact_soon(session_id)
            await within(summarizer.entered.wait())
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await within(task)
            await until(lambda: summarizer.cancelled == 1)
            assert lock_users(app, session_id) == (0, 0)
            # Its decision was recorded; the next request compacts on the user's turn.
            summarizer.gate.set()
            prepared = await within(app.prepare_request(session_id))
            assert prepared.compactions_so_far == 1
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


def test_the_summarizer_budget_stops_an_awaited_summary() -> None:
    """Past its time budget the summary is given up (the compaction fails open) and the
    awaited summarizer is cancelled, not left running on the loop."""
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        breaker = BreakerSettings(budget=0.2)
        async with service(None, summarizer, summarizer_breaker=breaker) as app:
            session_id = await over_threshold(app)
            prepared = await within(app.prepare_request(session_id))
            assert [n.kind for n in prepared.notices][-2:] == [
                "compaction_failed",
                "compaction_completed",
            ]
            await until(lambda: summarizer.cancelled == 1)
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


# Retries.


def test_a_retry_of_an_append_that_was_saved_is_refused_not_repeated(tmp_path: Path) -> None:
    """Cancelled after its save (here: while a listener of the save runs), a command is
    saved; the host cannot tell from the `CancelledError`. Its retry raises
    `MessageAlreadyAppendedError` instead of appending the message a second time."""

    async def scenario() -> None:
        async with service(tmp_path / "s.sqlite3", FakeSummarizer()) as app:
            session_id = await small_session(app)
            saved, go_on = threading.Event(), threading.Event()

            def listener(events: Sequence[object]) -> None:
                if any(isinstance(e, Session.MessageAppended) for e in events):
                    saved.set()
                    go_on.wait(WAIT)

            app.on_saved(listener)
            for message, call in [
                (Message.assistant("Hi."), app.record_reply),
                (Message.user("Next?"), app.append_message),
            ]:
                saved.clear()
                go_on.clear()
                task = asyncio.create_task(call(session_id, message))
                assert await asyncio.to_thread(saved.wait, WAIT)
                task.cancel()
                go_on.set()
                with pytest.raises(asyncio.CancelledError):
                    await within(task)
                # The command is over when the host sees the cancellation: it was saved.
                assert (await app.session(session_id)).entries[-1].message == message
                with pytest.raises(
                    MessageAlreadyAppendedError, match="the session's last message already"
                ):
                    await within(call(session_id, message))
                assert await asyncio.to_thread(appended, app.sync, session_id, message.text) == 1
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


def test_a_retry_of_a_batch_that_was_saved_is_refused_and_a_repeat_is_not(
    tmp_path: Path,
) -> None:
    """Roles alternate within a batch, so a batch sent again can follow itself: a call of
    `append_messages` cancelled after its save is remembered, and only its retry is refused.
    The same batch sent again after a call that was not cancelled is a conversation that
    repeats itself, and is appended."""
    batch = [Message.assistant("Done."), Message.user("Again.")]

    async def scenario() -> None:
        async with service(tmp_path / "s.sqlite3", FakeSummarizer()) as app:
            session_id = await small_session(app)
            saved, go_on = threading.Event(), threading.Event()

            def listener(events: Sequence[object]) -> None:
                if any(isinstance(e, Session.MessageAppended) for e in events):
                    saved.set()
                    go_on.wait(WAIT)

            app.on_saved(listener)
            task = asyncio.create_task(app.append_messages(session_id, batch))
            assert await asyncio.to_thread(saved.wait, WAIT)
            task.cancel()
            go_on.set()
            with pytest.raises(asyncio.CancelledError):
                await within(task)
            count = (await app.session(session_id)).message_count
            with pytest.raises(MessageAlreadyAppendedError, match="last ones already"):
                await within(app.append_messages(session_id, batch))
            assert (await app.session(session_id)).message_count == count

            await within(app.append_messages(session_id, batch))  # not cancelled: appended
            await within(app.append_messages(session_id, batch))
            assert (await app.session(session_id)).message_count == count + 4
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


# The chat model.


@pytest.mark.parametrize("store", STORES)
def test_a_timed_out_reply_records_nothing_and_the_retry_records_one(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    chat = GatedChatModel()

    async def scenario() -> None:
        async with service(
            store_of(store, tmp_path, request), FakeSummarizer(), chat_model=chat
        ) as app:
            session_id = await small_session(app)
            before = (await app.session(session_id)).version
            with pytest.raises(TimeoutError):
                await timed_out_at(chat.entered, app.complete(session_id))
            assert chat.cancelled == 1
            assert (await app.session(session_id)).version == before
            chat.gate.set()
            await within(app.complete(session_id))
            assert await asyncio.to_thread(appended, app.sync, session_id, "Done.") == 1
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


def test_a_chat_model_that_raises_cancelled_error_itself_has_failed() -> None:
    """Nobody cancelled the host's call: a `CancelledError` from the chat model is its
    failure (a `ProviderError`), not a cancellation the host's task would silently end with
    (a `TaskGroup` drops a child that ends cancelled)."""

    class Cancelling(GatedChatModel):
        async def send(self, *args: Any, **kwargs: Any) -> Any:
            raise asyncio.CancelledError

    async def scenario() -> None:
        async with service(None, FakeSummarizer(), chat_model=Cancelling()) as app:
            session_id = await small_session(app)
            before = (await app.session(session_id)).version
            with pytest.raises(ProviderError, match="CancelledError"):
                await within(app.complete(session_id))
            assert (await app.session(session_id)).version == before
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


# Summarizers that raise what they should not.


class CancellingSummarizer:
    """A summarizer that raises `CancelledError` of its own accord (awaited or not)."""

    name = "cancelling"

    def __init__(self, awaited: bool) -> None:
        self.awaited = awaited

    def summarize(self, messages: Sequence[Message], **request: Any) -> Any:
        async def summary() -> Summary:
            raise asyncio.CancelledError

        if self.awaited:
            return summary()
        raise asyncio.CancelledError


@pytest.mark.parametrize("awaited", [True, False], ids=["async", "sync"])
def test_a_summarizer_that_raises_cancelled_error_has_failed(awaited: bool) -> None:
    summarizer: object = CancellingSummarizer(awaited)
    if awaited:

        class Awaited:
            name = "cancelling"

            async def summarize(self, messages: Sequence[Message], **request: Any) -> Summary:
                return await CancellingSummarizer(True).summarize(messages, **request)  # type: ignore[no-any-return]

        summarizer = Awaited()

    async def scenario() -> None:
        async with service(None, summarizer) as app:
            session_id = await over_threshold(app)
            prepared = await within(app.prepare_request(session_id))
            assert "compaction_failed" in [n.kind for n in prepared.notices]
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


class Interrupting:
    """An awaited summarizer that raises `KeyboardInterrupt` or `SystemExit`."""

    name = "interrupting"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def summarize(self, messages: Sequence[Message], **request: Any) -> Summary:
        raise self.error


class InterruptingSync:
    name = "interrupting"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def summarize(self, messages: Sequence[Message], **request: Any) -> Summary:
        raise self.error


@pytest.mark.parametrize(
    ("summarizer", "error"),
    [
        (Interrupting(KeyboardInterrupt()), KeyboardInterrupt),
        (InterruptingSync(SystemExit(3)), SystemExit),
    ],
    ids=["async-KeyboardInterrupt", "sync-SystemExit"],
)
def test_an_interrupt_in_the_summarizer_ends_the_host_and_saves_nothing(
    summarizer: object, error: type[BaseException], tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite3"

    async def start() -> tuple[UUID, int]:
        async with service(db, FakeSummarizer()) as app:
            session_id = await over_threshold(app)
            return session_id, (await app.session(session_id)).version

    session_id, version = asyncio.run(start())

    async def interrupted() -> None:
        async with service(db, summarizer) as app:
            await within(app.prepare_request(session_id))

    with pytest.raises(error):
        asyncio.run(interrupted())

    async def after() -> None:
        async with service(db, FakeSummarizer()) as app:
            assert (await app.session(session_id)).version == version
            await assert_consistent(app, session_id)

    asyncio.run(after())


# Many calls at once, and closing.


@pytest.mark.parametrize("store", STORES)
def test_many_calls_on_one_session_some_cancelled(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    summarizer = GatedSummarizer()

    async def scenario() -> None:
        async with service(store_of(store, tmp_path, request), summarizer) as app:
            session_id = await over_threshold(app)
            background = app.compact_soon(session_id)
            await within(summarizer.entered.wait())
            prepares = [asyncio.create_task(app.prepare_request(session_id)) for _ in range(6)]
            queries = [asyncio.create_task(app.session(session_id)) for _ in range(3)]
            await until(lambda: lock_users(app, session_id)[0] == 7)
            for task in prepares[::2]:
                task.cancel()
            summarizer.gate.set()
            results = await within(asyncio.gather(*prepares, return_exceptions=True))
            assert [isinstance(r, asyncio.CancelledError) for r in results] == [True, False] * 3
            assert {r.compactions_so_far for r in results[1::2]} == {1}  # type: ignore[union-attr]
            assert (await within(background)) is not None
            await within(asyncio.gather(*queries))
            assert summarizer.calls == 1
            # Replies racing for one place: one is recorded, the others refused, one cancelled.
            replies = [
                asyncio.create_task(app.record_reply(session_id, Message.assistant(f"Reply {i}.")))
                for i in range(4)
            ]
            replies[0].cancel()
            outcomes = await within(asyncio.gather(*replies, return_exceptions=True))
            kinds = sorted(type(o).__name__ for o in outcomes)
            assert kinds == ["CancelledError", "RoleOrderError", "RoleOrderError", "int"]
            history = await app.history(session_id)
            assert sum(isinstance(e, Session.MessageAppended) for e in history[-3:]) == 1
            await assert_consistent(app, session_id)

    asyncio.run(scenario())


@pytest.mark.parametrize("store", ALL_STORES)
def test_aclose_waits_for_running_commands_and_refuses_new_ones(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    summarizer = GatedSummarizer()
    db = store_of(store, tmp_path, request)

    async def scenario() -> None:
        app = service(db, summarizer)
        session_id = await over_threshold(app)
        preparing = asyncio.create_task(app.prepare_request(session_id))
        await within(summarizer.entered.wait())
        closing = asyncio.create_task(app.aclose())
        await asyncio.sleep(0)
        with pytest.raises(ServiceClosedError):
            await within(app.session(session_id))
        assert not closing.done()
        summarizer.gate.set()
        assert (await within(preparing)).compactions_so_far == 1
        await within(closing)
        await within(app.aclose())  # closing again does nothing
        if db is not None:
            async with service(db, FakeSummarizer()) as again:
                assert (await again.session(session_id)).generation == 1

    asyncio.run(scenario())


def test_a_cancelled_aclose_stops_running_commands_with_service_closed(tmp_path: Path) -> None:
    """A host's shutdown timeout cancels `aclose()`: the commands still running stop with
    `ServiceClosedError`, saving nothing, and the store is closed all the same."""
    summarizer = GatedSummarizer()
    db = tmp_path / "s.sqlite3"

    async def scenario() -> None:
        app = service(db, summarizer)
        session_id = await over_threshold(app)
        other = await over_threshold(app)
        before = (await app.session(session_id)).version
        preparing = asyncio.create_task(app.prepare_request(session_id))
        await within(summarizer.entered.wait())
        summarizer.entered.clear()
        background = app.compact_soon(other)
        await within(summarizer.entered.wait())
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(app.aclose(), 0.2)
        with pytest.raises(ServiceClosedError):
            await within(preparing)
        with pytest.raises(asyncio.CancelledError):
            await within(background)
        await until(lambda: summarizer.cancelled == 2)
        with pytest.raises(ServiceClosedError):
            await app.session(session_id)
        summarizer.gate.set()
        async with service(db, summarizer) as again:
            assert (await again.session(session_id)).version == before
            await assert_consistent(again, session_id)
            await assert_consistent(again, other)

    asyncio.run(scenario())


def test_closing_sessions_waits_for_a_command_running_in_another_thread(tmp_path: Path) -> None:
    """The synchronous service closed by one thread while another's command runs: new calls
    are refused at once, the running command finishes and saves, and only then is the store
    closed (closed under a running statement, SQLite's module can crash the process)."""
    entered, gate = threading.Event(), threading.Event()

    class Blocking(FakeSummarizer):
        def summarize(self, messages: Sequence[Message], **request: Any) -> Summary:
            entered.set()
            gate.wait(WAIT)
            return super().summarize(messages, **request)

    app = bootstrap(
        tmp_path / "s.sqlite3", counter=FakeTokenCounter(), summarizer=Blocking(), background=False
    )

    async def setup() -> UUID:
        async with service(tmp_path / "s.sqlite3", FakeSummarizer()) as builder:
            return await over_threshold(builder)

    session_id = asyncio.run(setup())
    outcome: list[object] = []

    def prepare() -> None:
        try:
            outcome.append(app.prepare_request(session_id))
        except BaseException as error:
            outcome.append(error)

    running = threading.Thread(target=prepare)
    running.start()
    assert entered.wait(WAIT)
    closing = threading.Thread(target=app.close)
    closing.start()
    closing.join(0.3)
    assert closing.is_alive(), "the store was closed under a running command"
    with pytest.raises(ServiceClosedError):
        app.prepare_request(session_id)  # new calls are refused while it waits
    gate.set()
    running.join(WAIT)
    closing.join(WAIT)
    assert not closing.is_alive()
    assert len(outcome) == 1
    assert not isinstance(outcome[0], BaseException), repr(outcome[0])
    with pytest.raises(ServiceClosedError):
        app.session(session_id)
    again = bootstrap(tmp_path / "s.sqlite3", counter=FakeTokenCounter(), background=False)
    compacted = [e for e in again.history(session_id) if type(e).__name__ == "CompactionCompleted"]
    assert compacted, "the running command's compaction was not saved"


# PostgreSQL: waiting for another process's compaction.


def test_a_cancelled_wait_for_another_process_compaction_stops_waiting(
    postgres_server: str,
) -> None:
    """Another process compacts the session (it holds the advisory lock); a request that
    needs a compaction waits for it on a connection of its own. Timed out, the request stops
    waiting at once, and does not compact later when the other process is done."""
    url = fresh_database(postgres_server)
    summarizer = GatedSummarizer()
    summarizer.gate.set()

    async def scenario() -> None:
        async with service(url, summarizer) as app:
            session_id = await over_threshold(app)
            with psycopg.connect(url, autocommit=True) as other:
                other.execute("SELECT pg_advisory_lock(%s)", (advisory_key(session_id),))
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(app.prepare_request(session_id), 0.3)
                assert lock_users(app, session_id) == (0, 0)
                waiting = other.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_advisory%%'"
                    " AND wait_event_type = 'Lock'"
                ).fetchone()
                assert waiting == (0,)
            assert summarizer.calls == 0
            await assert_consistent(app, session_id)

    asyncio.run(scenario())
