"""A session stored by an earlier version of abridged loads and continues.

`tests/fixtures/session-v1.json` holds the stored events and snapshot of a session written by
the layout before the `abridged` package (topics `domain.session:Session…`): 84 events, two
compactions, prunes and a snapshot, exactly as the SQLite recorder stored them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.application.service import Sessions
from abridged.domain import events
from abridged.domain.degradation import message_cap, message_room
from abridged.domain.indexes import recompute
from abridged.domain.ledger import LedgerEntry
from abridged.domain.messages import Message
from abridged.domain.reconfiguration import Reconfiguring
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.anthropic_rules import violations
from tests.support.builders import exchange, words

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "session-v1.json"


def stored(rows: list[dict[str, Any]], session_id: UUID) -> list[StoredEvent]:
    return [
        StoredEvent(
            originator_id=session_id,
            originator_version=row["originator_version"],
            topic=row["topic"],
            state=row["state"].encode(),
        )
        for row in rows
    ]


def open_store(path: Path) -> tuple[Sessions, UUID, dict[str, Any]]:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    session_id = UUID(data["session_id"])
    app = bootstrap(path)
    app.recorder.insert_events(stored(data["events"], session_id))
    return app, session_id, data


def test_an_old_session_replays_to_the_state_it_had(tmp_path: Path) -> None:
    app, session_id, data = open_store(tmp_path / "old.sqlite3")
    session = app.session(session_id)
    assert isinstance(session, Session)
    assert session.message_count == data["message_count"]
    assert session.generation == data["generation"]
    assert session.estimate() == data["estimate"]
    history = app.history(session_id)
    assert len(history) == len(data["events"])
    assert type(history[0]).__name__ == "Started"
    # Its messages were stored before their saving was: the replay computed it.
    assert {e.saving for e in history if isinstance(e, Session.MessageAppended)} == {None}
    assert session.saving_sums == recompute(session.entries, session.settings).saving_sums


def test_a_message_appended_now_records_its_saving(tmp_path: Path) -> None:
    app, session_id, _ = open_store(tmp_path / "old.sqlite3")
    app.append_message(session_id, {"role": "user", "content": "Carry on."})
    call, result = exchange([words(3_000)])
    app.prepare_request(session_id)
    app.record_reply(session_id, call)
    app.append_message(session_id, result)

    appended = app.history(session_id)[-1]
    assert isinstance(appended, Session.MessageAppended)
    assert appended.saving is not None
    assert appended.saving > 0
    session = bootstrap(tmp_path / "old.sqlite3").session(session_id)
    assert appended.saving == session.saving_sums[-1] - session.saving_sums[-2]
    assert session.saving_sums == recompute(session.entries, session.settings).saving_sums


def test_an_old_snapshot_loads_too(tmp_path: Path) -> None:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    session_id = UUID(data["session_id"])
    app = bootstrap(tmp_path / "old.sqlite3")
    app.recorder.insert_events(stored(data["events"], session_id))
    assert app.snapshots is not None
    app.snapshots.recorder.insert_events(stored(data["snapshots"], session_id))
    session = app.session(session_id)
    assert session.message_count == data["message_count"]
    assert session.estimate() == data["estimate"]


def test_an_old_session_continues_with_valid_requests(tmp_path: Path) -> None:
    app, session_id, data = open_store(tmp_path / "old.sqlite3")
    app.append_message(session_id, {"role": "user", "content": "Carry on with the next step."})
    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model=prepared.model, max_tokens=prepared.max_tokens)
    assert violations(body) == []
    assert prepared.context.estimate <= prepared.context.budget
    reopened = bootstrap(tmp_path / "old.sqlite3")
    assert reopened.session(session_id).message_count == data["message_count"] + 1


LEDGER_FIXTURE = FIXTURE.with_name("session-ledger-v1.json")
"""A session stored when the facts ledger was one text (`LedgerUpdated` version 1, snapshot
state version 4): 94 events, nine compactions each with its ledger update, one snapshot."""


def open_ledger_store(path: Path, *, snapshots: bool) -> tuple[Sessions, UUID, dict[str, Any]]:
    data = json.loads(LEDGER_FIXTURE.read_text(encoding="utf-8"))
    session_id = UUID(data["session_id"])
    app = bootstrap(path)
    app.recorder.insert_events(stored(data["events"], session_id))
    if snapshots:
        assert app.snapshots is not None
        app.snapshots.recorder.insert_events(stored(data["snapshots"], session_id))
    return app, session_id, data


def test_a_ledger_stored_as_one_text_loads_as_one_segment(tmp_path: Path) -> None:
    for snapshots in (False, True):
        app, session_id, data = open_ledger_store(
            tmp_path / f"ledger-{snapshots}.sqlite3", snapshots=snapshots
        )
        session = app.session(session_id)
        assert session.generation == data["generation"]
        assert session.ledger_segments == [data["ledger_text"]]
        assert session.ledger_tokens == data["ledger_tokens"]
        assert session.estimate() == data["estimate"]
        updates = [e for e in app.history(session_id) if isinstance(e, Session.LedgerUpdated)]
        assert len(updates) == data["generation"]
        assert all(u.consolidated for u in updates)


def test_an_old_ledger_is_appended_to_by_the_next_compaction(tmp_path: Path) -> None:
    app, session_id, _data = open_ledger_store(tmp_path / "ledger.sqlite3", snapshots=True)
    old = app.session(session_id).ledger_segments
    filler = " ".join(f"word{i}" for i in range(120))
    compacted = False
    for i in range(40, 48):
        app.append_message(
            session_id, {"role": "user", "content": f"Task {i}: fix pkg/extra_{i}.py now."}
        )
        prepared = app.prepare_request(session_id)
        body = render_request(
            prepared.context, model=prepared.model, max_tokens=prepared.max_tokens
        )
        assert violations(body) == []
        assert prepared.context.estimate <= prepared.context.budget
        session = app.session(session_id)
        if prepared.compaction is not None and len(session.ledger_segments) > len(old):
            # The stored ledger stays the first block, as it was; what is new follows it.
            first = body["messages"][0]["content"]
            assert first[0]["text"] == old[0]
            assert "pkg/extra_" in first[1]["text"]
            compacted = True
            break
        app.record_reply(session_id, {"role": "assistant", "content": f"Done. {filler}"})
    assert compacted


LEDGER_V2_FIXTURE = FIXTURE.with_name("session-ledger-v2.json")
"""A session stored when each `LedgerUpdated` (version 2) held the whole ledger: 78 events,
seven compactions (one consolidated update, six appended segments), one snapshot, and the
state it had (ledger, segments, tokens, estimate). Written by the code of that version from
the generated conversation of `tests.benchmarks.prepare` (seed 7, an 8,000-token window),
its rows exactly as the SQLite recorder stored them."""


def test_whole_ledger_updates_load_and_replay_to_the_state_they_had(tmp_path: Path) -> None:
    data = json.loads(LEDGER_V2_FIXTURE.read_text(encoding="utf-8"))
    session_id = UUID(data["session_id"])
    ledger = [LedgerEntry(*e) for e in data["ledger"]]
    for snapshots in (False, True):
        app = bootstrap(tmp_path / f"v2-{snapshots}.sqlite3")
        app.recorder.insert_events(stored(data["events"], session_id))
        if snapshots:
            assert app.snapshots is not None
            app.snapshots.recorder.insert_events(stored(data["snapshots"], session_id))
        session = app.session(session_id)
        assert session.message_count == data["message_count"]
        assert session.generation == data["generation"]
        assert session.ledger == ledger
        assert session.ledger_segments == data["ledger_segments"]
        assert session.ledger_tokens == data["ledger_tokens"]
        assert session.estimate() == data["estimate"]
        updates = [e for e in app.history(session_id) if isinstance(e, Session.LedgerUpdated)]
        assert len(updates) == data["generation"]
        assert all(u.whole for u in updates)
        assert list(updates[-1].entries) == ledger


def test_a_stored_whole_ledger_is_patched_by_the_next_compactions(tmp_path: Path) -> None:
    data = json.loads(LEDGER_V2_FIXTURE.read_text(encoding="utf-8"))
    session_id = UUID(data["session_id"])
    app = bootstrap(tmp_path / "v2.sqlite3")
    app.recorder.insert_events(stored(data["events"], session_id))
    filler = " ".join(f"word{i}" for i in range(300))
    app.record_reply(session_id, {"role": "assistant", "content": f"Done. {filler}"})
    for i in range(60):
        if app.session(session_id).generation >= data["generation"] + 2:
            break
        text = f"Task {i}: fix pkg/extra_{i}.py now. {filler}"
        app.append_message(session_id, {"role": "user", "content": text})
        prepared = app.prepare_request(session_id)
        body = render_request(
            prepared.context, model=prepared.model, max_tokens=prepared.max_tokens
        )
        assert violations(body) == []
        app.record_reply(session_id, {"role": "assistant", "content": f"Done. {filler}"})
    updates = [e for e in app.history(session_id) if isinstance(e, Session.LedgerUpdated)]
    new = updates[data["generation"] :]
    assert new
    assert not any(u.whole for u in new)
    # Each records less than the whole ledger, and they replay to the live ledger.
    assert all(len(u.changed) < u.count for u in new)
    live = app.session(session_id)
    assert list(new[-1].entries) == live.ledger
    replayed = None
    for event in app.history(session_id):
        replayed = event.mutate(replayed)
    assert isinstance(replayed, Session)
    assert replayed.ledger == live.ledger
    assert replayed.ledger_segments == live.ledger_segments


def test_events_recorded_now_keep_the_topics_stores_hold(tmp_path: Path) -> None:
    # Stores are read, and filtered, by topic: an event recorded today is stored under the
    # topic its kind always had, wherever its class is declared, and resolves to that class.
    app = bootstrap(tmp_path / "new.sqlite3")
    session_id = app.start_session(model="claude-sonnet-4-6", max_output_tokens=500, system="s")
    app.append_message(session_id, Message.user("Hello"))
    app.reconfigure(
        session_id, system="Answer briefly.", settings=CompactionSettings(cooldown_messages=3)
    )

    rows = app.recorder.select_events(session_id)
    topics = [row.topic for row in rows]
    assert topics[0] == "abridged.domain.session:Session.Started"
    assert "abridged.domain.session:Session.MessageAppended" in topics
    assert "abridged.domain.session:Session.SettingsChanged" in topics
    for row, event in zip(rows, app.history(session_id), strict=True):
        kind = row.topic.removeprefix("abridged.domain.session:Session.")
        assert type(event) is getattr(Session, kind)
        assert type(event) in (getattr(events, kind, None), getattr(Reconfiguring, kind, None))


def test_a_prompt_appended_to_an_old_session_is_cut_as_it_was(tmp_path: Path) -> None:
    # Stored before prompts could be shown whole: the session goes on deciding as it did.
    app, session_id, data = open_store(tmp_path / "old.sqlite3")
    session = app.session(session_id)
    started = json.loads(data["events"][0]["state"])
    assert not session.settings.whole_prompts
    assert session.settings.fingerprint == started["settings_fingerprint"]
    limits = session.limits
    room = message_room(limits, session.system_tokens, session.tools_tokens, session.calibration)
    cap = message_cap(limits, session.system_tokens, session.tools_tokens, session.calibration)

    app.append_message(session_id, Message.user(words(int(room * 0.8))))

    appended = app.history(session_id)[-1]
    assert isinstance(appended, Session.MessageAppended)
    assert cap < appended.tokens <= room
    assert appended.truncations
    assert app.session(session_id).entries[-1].shown_tokens <= cap


def test_a_session_stored_before_whole_prompts_is_shown_byte_for_byte_as_it_was(
    tmp_path: Path,
) -> None:
    # A session recorded under the earlier rule, its settings stored without the field as an
    # earlier version stored them: reopened, it sends the requests it sent, and a prompt
    # appended now is cut as the earlier version cut it.
    before = bootstrap(tmp_path / "before.sqlite3")
    session_id = before.start_session(
        model="claude-sonnet-4-5",
        context_window=3_000,
        max_output_tokens=600,
        system="You are a careful coding agent.",
        settings=CompactionSettings(whole_prompts=False),
    )
    before.append_message(session_id, Message.user("The log:\n" + words(1_500)))
    sent = render_request(before.prepare_request(session_id).context, model="m", max_tokens=600)
    before.record_reply(session_id, Message.assistant("Row 17 is bad."))
    rows: list[dict[str, Any]] = [
        {
            "originator_version": e.originator_version,
            "topic": e.topic,
            "state": e.state.decode(),
        }
        for e in before.recorder.select_events(session_id)
    ]
    state = json.loads(rows[0]["state"])
    del state["settings"]["_data_"]["whole_prompts"]
    rows[0]["state"] = json.dumps(state, separators=(",", ":"))
    reopened = bootstrap(tmp_path / "old.sqlite3")
    reopened.recorder.insert_events(stored(rows, session_id))

    assert not reopened.session(session_id).settings.whole_prompts
    reopened.append_message(session_id, Message.user("And this one:\n" + words(1_500)))
    before.append_message(session_id, Message.user("And this one:\n" + words(1_500)))
    again = reopened.prepare_request(session_id).context
    now = before.prepare_request(session_id).context
    assert render_request(again, model="m", max_tokens=600) == render_request(
        now, model="m", max_tokens=600
    )
    first = render_request(again, model="m", max_tokens=600)["messages"][0]["content"][0]
    shown = sent["messages"][0]["content"][0]
    assert first["text"] == shown["text"]  # the breakpoints have moved on since
    assert "characters of this message truncated" in first["text"]
