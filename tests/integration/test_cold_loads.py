"""A session loaded from a snapshot reads its retained messages only when something needs
them: once, all at once, and the session it makes is the one loaded eagerly."""

from __future__ import annotations

import copy
import gc
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.erasure import erase_stored_events
from abridged.application.notices import breakdown_of
from abridged.application.service import Sessions
from abridged.application.snapshot_columns import EntryTable, LedgerTable
from abridged.application.snapshots import (
    READS_THE_TAIL,
    SessionRepository,
    SessionSnapshot,
    StoredMessagesUnavailableError,
    StoredTail,
)
from abridged.domain.context import build_context
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from abridged.domain.tail import DeferredTail
from tests.integration.test_stores import long_session
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import play


class Reads:
    """Counts the bodies the repository reads: each call and how many messages it asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[int] = []
        original = SessionRepository.messages

        def counted(
            repository: SessionRepository, session_id: UUID, versions: Sequence[int], *more: Any
        ) -> Any:
            self.calls.append(len(versions))
            return original(repository, session_id, versions, *more)

        monkeypatch.setattr(SessionRepository, "messages", counted)

    @property
    def whole(self) -> int:
        """Reads of more than one message (the whole tail)."""
        return sum(1 for n in self.calls if n > 1)


def feed(app: Sessions, session_id: UUID, turns: int) -> None:
    for i in range(turns):
        play(app, session_id, turn(f"Request {i}", [words(60, "output"), words(40, "log")]))


def stored_session(path: Path, turns: int = 20) -> tuple[Sessions, UUID]:
    """A session of `turns` tool-using turns, nothing compacted, snapshotted at its end."""
    app = bootstrap(path)
    session_id = app.start_session(
        model="claude-test",
        context_window=2_000_000,
        max_output_tokens=4_000,
        tools=TOOLS,
        settings=CompactionSettings(tool_output_mode="keep_all"),
    )
    feed(app, session_id, turns)
    app.append_message(session_id, {"role": "user", "content": "And now?"})
    if not list(app.snapshots.get(session_id, gt=app.session(session_id).version - 1)):  # type: ignore[union-attr]
        app.take_snapshot(session_id)
    return app, session_id


def cold(app: Sessions) -> Sessions:
    return Sessions(counter=app.counter, summarizer=app.summarizer, env=app.env)


def comparable(session: Session) -> dict[str, object]:
    skipped = {"_created_on", "_modified_on", "_pending_events"}
    return {k: v for k, v in vars(session).items() if k not in skipped}


def deferred(session: Session) -> bool:
    entries = session.__dict__["entries"]
    return isinstance(entries, DeferredTail) and entries.pending is not None


def test_a_cold_load_reads_no_body_and_queries_need_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, session_id = stored_session(tmp_path / "s.sqlite3")
    live = app.session(session_id)
    reads = Reads(monkeypatch)
    service = cold(app)
    loaded = service.session(session_id)
    assert reads.calls == []
    assert deferred(loaded)
    # Counts, estimates, limits and indexes are the snapshot's.
    assert len(loaded.entries) == len(live.entries) > 100
    assert loaded.retained_from == live.retained_from
    assert loaded.estimate() == live.estimate()
    assert loaded.limits == live.limits
    assert loaded.tool_ids == live.tool_ids
    assert loaded.awaiting_reply
    # The first and last messages are read alone, never the whole tail.
    assert reads.whole == 0
    assert all(n == 1 for n in reads.calls)
    assert deferred(loaded)


def test_appends_and_replies_read_no_more_than_the_last_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, session_id = stored_session(tmp_path / "s.sqlite3")
    app.record_reply(session_id, {"role": "assistant", "content": "Here it is."})
    reads = Reads(monkeypatch)
    service = cold(app)
    service.append_message(session_id, {"role": "user", "content": "Thanks, one more."})
    service.record_reply(session_id, {"role": "assistant", "content": "Sure."})
    service.append_message(session_id, {"role": "user", "content": "And the last one."})
    assert reads.whole == 0
    assert deferred(service.session(session_id))
    # The first request needs every body: one read of the whole tail, then none.
    prepared = service.prepare_request(session_id)
    assert reads.whole == 1
    service.record_reply(session_id, {"role": "assistant", "content": "Done."})
    service.append_message(session_id, {"role": "user", "content": "Bye."})
    service.prepare_request(session_id)
    assert reads.whole == 1
    assert not deferred(service.session(session_id))
    # The same request the eager service makes.
    eager = app.session(session_id)
    assert eager.version == service.session(session_id).version
    assert prepared.context.messages[:3] == build_context(eager).messages[:3]


def test_a_lazy_session_equals_an_eager_one_and_renders_the_same_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, session_id = stored_session(tmp_path / "s.sqlite3")
    eager = app.session(session_id)
    assert not deferred(eager)
    reads = Reads(monkeypatch)
    service = cold(app)  # kept: its store reads the bodies later
    lazy = service.session(session_id)
    assert deferred(lazy)
    assert build_context(lazy) == build_context(eager)
    assert reads.whole == 1
    assert comparable(lazy) == comparable(eager)
    assert list(lazy.entries) == list(eager.entries)
    assert list(lazy.shown_messages) == list(eager.shown_messages)
    # Once read, the tail is a plain list again.
    assert type(lazy.__dict__["entries"]) is list
    assert type(lazy.__dict__["shown_messages"]) is list


def test_a_snapshot_of_a_lazy_session_reads_no_body_and_equals_the_eager_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, session_id = stored_session(tmp_path / "s.sqlite3")
    service = cold(app)
    for text in ("One more.", "And another."):
        service.record_reply(session_id, {"role": "assistant", "content": "Noted."})
        service.append_message(session_id, {"role": "user", "content": text})
    reads = Reads(monkeypatch)
    lazy = service.session(session_id)
    assert deferred(lazy)
    taken = SessionSnapshot.take(lazy)
    assert reads.whole == 0
    eager = app.session(session_id)
    assert eager.version == lazy.version
    assert not deferred(eager)
    expected = SessionSnapshot.take(eager)
    assert taken.state.keys() == expected.state.keys()
    for name in taken.state:
        if name not in ("_created_on", "_modified_on"):
            assert taken.state[name] == expected.state[name], name


def test_copies_share_one_read_and_pickle_as_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, session_id = stored_session(tmp_path / "s.sqlite3")
    reads = Reads(monkeypatch)
    service = cold(app)  # kept: its store reads the bodies later
    lazy = service.session(session_id)
    first, second = copy.deepcopy(lazy), copy.deepcopy(lazy)
    assert deferred(first)
    assert deferred(second)
    first.entries.append(first.entries[-1])  # a change to one copy stays in it
    assert len(first.entries) == len(lazy.entries) + 1
    assert list(second.entries) == list(lazy.entries)
    assert reads.whole == 1
    restored = pickle.loads(pickle.dumps(lazy))
    assert type(restored.__dict__["entries"]) is list
    assert comparable(restored) == comparable(app.session(session_id))
    assert reads.whole == 1


def test_bodies_that_cannot_be_read_raise_a_typed_error_and_leave_the_session_lazy(
    tmp_path: Path,
) -> None:
    app, session_id = stored_session(tmp_path / "s.sqlite3")
    service = cold(app)  # kept: its store reads the bodies later
    lazy = service.session(session_id)
    erase_stored_events([app.recorder], session_id)
    with pytest.raises(StoredMessagesUnavailableError, match="no longer stored"):
        build_context(lazy)
    assert deferred(lazy)
    with pytest.raises(StoredMessagesUnavailableError):
        list(lazy.entries)
    # A closed service's store cannot be read either.
    app, session_id = stored_session(tmp_path / "t.sqlite3")
    service = cold(app)
    lazy = service.session(session_id)
    service.close()
    with pytest.raises(StoredMessagesUnavailableError, match="could not be read"):
        lazy.shown_messages[1:]
    assert deferred(lazy)


def test_a_lazy_session_keeps_its_service_open(tmp_path: Path) -> None:
    app, session_id = stored_session(tmp_path / "s.sqlite3")
    lazy = cold(app).session(session_id)  # the service is not kept by the caller
    gc.collect()
    assert list(lazy.entries) == list(app.session(session_id).entries)


def test_a_stored_tail_builds_each_entry_as_the_whole_read_does(tmp_path: Path) -> None:
    app, session_id = stored_session(tmp_path / "s.sqlite3", turns=3)
    service = cold(app)  # kept: its store reads the bodies later
    lazy = service.session(session_id)
    pending = lazy.__dict__["entries"].pending
    assert pending is not None
    source = pending[0]
    assert isinstance(source, StoredTail)
    edges = [source.entry(0), source.entry(len(source) - 1)]
    assert edges == [source.entries()[0], source.entries()[-1]]
    assert source.reads == 3
    assert isinstance(edges[0].message, Message)


def test_a_compacting_session_is_snapshotted_after_each_event_that_reads_its_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = bootstrap(tmp_path / "s.sqlite3")
    session_id = long_session(app, turns=30)
    history = app.history(session_id)
    reading = [e.originator_version for e in history if isinstance(e, READS_THE_TAIL)]
    assert any(isinstance(e, Session.CompactionCompleted) for e in history)
    assert app.snapshots is not None
    taken = {r.originator_version for r in app.snapshots.recorder.select_events(session_id)}
    # Each save holding such an event was snapshotted at its last event.
    for version in reading:
        assert any(v >= version and v - version < 4 for v in taken), version
    # The facts ledger is stored by columns, and loads as the entries it was.
    snapshot = next(iter(app.snapshots.get(session_id, desc=True, limit=1)))
    assert isinstance(snapshot.state["ledger"], LedgerTable)  # type: ignore[attr-defined]
    reads = Reads(monkeypatch)
    service = cold(app)
    loaded = service.session(session_id)
    assert reads.whole == 0
    assert loaded.ledger
    assert comparable(loaded) == comparable(app.session(session_id))


def pruned_session(path: Path) -> tuple[Sessions, UUID]:
    """A session whose older tool outputs were pruned, with nothing compacted yet."""
    app = bootstrap(path)
    session_id = app.start_session(
        model="claude-test",
        context_window=100_000,
        max_output_tokens=4_000,
        tools=TOOLS,
        settings=CompactionSettings(
            prune_protect_share=0.02, prune_min_share=0.02, whole_until_threshold=False
        ),
    )
    for i in range(30):
        play(app, session_id, turn(f"Request {i}", [f"pruned{i} " + words(700, "output")]))
    app.append_message(session_id, {"role": "user", "content": "And now?"})
    app.prepare_request(session_id)
    return app, session_id


def test_pruned_outputs_are_read_from_their_events_not_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, session_id = pruned_session(tmp_path / "s.sqlite3")
    eager = app.session(session_id)
    history = app.history(session_id)
    assert any(isinstance(e, Session.ToolsPruned) for e in history)
    assert eager.generation == 0
    assert app.snapshots is not None
    app.take_snapshot(session_id)
    snapshot = next(iter(app.snapshots.get(session_id, desc=True, limit=1)))
    assert snapshot.originator_version == eager.version
    table = snapshot.state["entries"]  # type: ignore[attr-defined]
    replaced = [e for e in eager.entries if e.replacements]
    assert len(table.replaced) == len(replaced) > 0
    # What a pruned output shows is in its ToolsPruned event, not in the snapshot.
    shown = next(r.text for e in replaced for r in e.replacements if r.text)
    row = app.snapshots.recorder.select_events(session_id, desc=True, limit=1)[0]
    assert shown[:60].encode() not in row.state
    service = cold(app)
    lazy = service.session(session_id)
    # The first and last entries are read alone, as they show, even when pruned.
    pruned = [e for e in eager.entries if e.replacements]
    edges = EntryTable.of([pruned[0], eager.entries[1], pruned[1]], [1, 2, 3])
    assert edges.replaced == []
    assert [r for _, _, r in edges.extras] == [pruned[0].replacements, pruned[1].replacements]
    assert edges.entry(0, pruned[0].message) == pruned[0]
    reads = Reads(monkeypatch)
    assert lazy.entries[0] == eager.entries[0]
    assert lazy.shown_messages[0] == eager.shown_messages[0]
    assert reads.whole == 0
    assert deferred(lazy)
    assert build_context(lazy) == build_context(eager)
    assert comparable(lazy) == comparable(eager)


def test_the_tails_messages_are_read_from_their_rows_without_building_their_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row of the current `MessageAppended` shape gives its message as plain JSON; its
    event (timestamp, usage, counts) is built only for rows of other shapes. The current
    shape had been left out of those read plainly: every message went through the mapper."""
    app, session_id = stored_session(tmp_path / "s.sqlite3")
    service = cold(app)
    mapper = service.repository.event_store.mapper
    built: list[str] = []
    to_domain_event = mapper.to_domain_event

    def counted(stored: Any) -> Any:
        event = to_domain_event(stored)
        built.append(type(event).__name__)
        return event

    monkeypatch.setattr(mapper, "to_domain_event", counted)
    loaded = service.session(session_id)
    built.clear()  # the snapshot and the events after it
    messages = [e.message for e in loaded.entries]
    assert len(messages) > 100
    assert "MessageAppended" not in built
    assert messages == [e.message for e in app.session(session_id).entries]


def test_a_snapshot_from_before_the_count_of_blocks_shown_otherwise_counts_them_on_load(
    tmp_path: Path,
) -> None:
    app, session_id = pruned_session(tmp_path / "s.sqlite3")
    live = app.session(session_id)
    assert live.replaced_blocks == sum(len(e.replacements) for e in live.entries) > 0
    assert app.snapshots is not None
    app.take_snapshot(session_id)
    # The same snapshot as version 7 of the state wrote it: without the count.
    row = app.snapshots.recorder.select_events(session_id, desc=True, limit=1)[0]
    state = row.state.decode()
    assert f'"replaced_blocks":{live.replaced_blocks},' in state
    state = state.replace(f'"replaced_blocks":{live.replaced_blocks},', "")
    state = state.replace('"class_version":8}', '"class_version":7}')
    old = bootstrap(tmp_path / "old.sqlite3")
    old.recorder.insert_events(app.recorder.select_events(session_id))
    assert old.snapshots is not None
    old.snapshots.recorder.insert_events(
        [StoredEvent(session_id, row.originator_version, row.topic, state.encode())]
    )

    loaded = old.session(session_id)
    assert loaded.replaced_blocks is None
    assert breakdown_of(loaded).pruned_blocks == live.replaced_blocks
    assert loaded.replaced_blocks == live.replaced_blocks
    # A session loaded so keeps the count from then on, through prunes and compactions.
    old.record_reply(session_id, Message.assistant("Noted."))
    for i in range(6):
        play(old, session_id, turn(f"More {i}", [f"later{i} " + words(700, "output")]))
    after = old.session(session_id)
    assert after.replaced_blocks == sum(len(e.replacements) for e in after.entries)
    assert after.replaced_blocks > live.replaced_blocks
