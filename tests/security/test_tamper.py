"""A tamper-evident history: every stored event carries a hash chained to its session's
previous one, and `abridged audit` names the first event altered, deleted, moved or stripped
of its hash, whatever part of it changed. Stores from before the chain still load and audit."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

import pytest
from click.testing import CliRunner

from abridged import bootstrap
from abridged.adapters.cli import main
from abridged.application.auditing import audit_session
from abridged.application.chain import ChainingMapper, ChainVerdict, verify_chain
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidArgumentError
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from tests.integration.test_stored_sessions import FIXTURE, stored
from tests.support.builders import TOOLS, exchange, words
from tests.support.fakes import FakeTokenCounter

SECRET_TEXT = "Please deploy build 41 to staging."


def open_app(path: Path | str) -> Sessions:
    return bootstrap(path, counter=FakeTokenCounter())


def make_session(path: Path | str, turns: int = 4) -> UUID:
    app = open_app(path)
    try:
        session_id = app.start_session(
            model="claude-test",
            context_window=20_000,
            max_output_tokens=1_000,
            tools=TOOLS,
            settings=CompactionSettings(keep_recent_turns=1),
        )
        app.append_message(session_id, Message.user(SECRET_TEXT))
        for i in range(turns):
            call, result = exchange([f"step {i}\n" + words(200)])
            app.prepare_request(session_id)
            app.record_reply(session_id, call)
            app.append_message(session_id, result)
        app.prepare_request(session_id)
        app.record_reply(session_id, Message.assistant("Deployed."))
        app.append_message(session_id, Message.user("Now compact, please."))
        app.compact(session_id)
    finally:
        app.close()
    return session_id


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, UUID]:
    path = tmp_path / "sessions.sqlite3"
    return path, make_session(path)


def rows(path: Path) -> list[tuple[int, str, bytes]]:
    with sqlite3.connect(path) as db:
        return list(
            db.execute(
                "SELECT originator_version, topic, state FROM stored_events "
                "ORDER BY originator_version"
            )
        )


def tamper(path: Path, sql: str, *args: object) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute(sql, args)
    db.close()


def audit(path: Path, session_id: UUID) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["audit", str(session_id), "--db", str(path)])
    return result.exit_code, result.output


def first_version(path: Path, wanted: Callable[[int, str, bytes], bool]) -> int:
    return next(v for v, topic, state in rows(path) if wanted(v, topic, state))


def test_an_untouched_history_audits_intact(store: tuple[Path, UUID]) -> None:
    path, session_id = store
    code, output = audit(path, session_id)
    assert code == 0, output
    assert f"history chain intact ({len(rows(path))} events)" in output


def test_an_altered_message_text_is_named(store: tuple[Path, UUID]) -> None:
    path, session_id = store
    version = first_version(path, lambda v, t, s: SECRET_TEXT.encode() in s)
    tamper(
        path,
        "UPDATE stored_events SET state = replace(state, ?, ?) WHERE originator_version = ?",
        SECRET_TEXT.encode(),
        b"Please deploy build 41 to PRODUCTION",
        version,
    )
    code, output = audit(path, session_id)
    assert code == 4
    assert f"history chain BROKEN at version {version} (MessageAppended)" in output
    assert f"version {version}" in output.splitlines()[-1]


def test_an_altered_field_is_named(store: tuple[Path, UUID]) -> None:
    path, session_id = store
    version = first_version(path, lambda v, t, s: t.endswith("CompactionCompleted"))
    [state] = [s for v, _, s in rows(path) if v == version]
    data = json.loads(state)
    data["tokens_after"] = data["tokens_after"] + 1  # the chain key stays where it was
    altered = json.dumps(data, separators=(",", ":")).encode()
    tamper(
        path, "UPDATE stored_events SET state = ? WHERE originator_version = ?", altered, version
    )
    code, output = audit(path, session_id)
    assert code == 4
    assert f"BROKEN at version {version} (CompactionCompleted)" in output


def test_an_altered_topic_is_named(store: tuple[Path, UUID]) -> None:
    path, session_id = store
    version = first_version(path, lambda v, t, s: t.endswith("CompactionThresholdHit"))
    [topic] = [t for v, t, _ in rows(path) if v == version]
    renamed = topic.replace("session:Session", "session:Session ")
    tamper(
        path, "UPDATE stored_events SET topic = ? WHERE originator_version = ?", renamed, version
    )
    result = verdict(path, session_id)
    assert result.broken_at == version


def verdict(path: Path, session_id: UUID) -> ChainVerdict:
    app = open_app(path)
    try:
        mapper = app.mapper
        assert isinstance(mapper, ChainingMapper)
        return verify_chain(app.recorder.select_events(session_id), mapper.plain_state)
    finally:
        app.close()


def test_a_deleted_event_is_named(store: tuple[Path, UUID]) -> None:
    path, session_id = store
    tamper(path, "DELETE FROM stored_events WHERE originator_version = 4")
    code, output = audit(path, session_id)
    assert code == 4
    assert "BROKEN at version 4 (missing): events 4 to 4 are missing" in output


def test_reordered_events_are_named(store: tuple[Path, UUID]) -> None:
    path, session_id = store
    appended = [v for v, t, _ in rows(path) if t.endswith("MessageAppended")]
    first, second = appended[2], appended[3]
    states = {v: s for v, _, s in rows(path)}
    tamper(path, "DELETE FROM stored_events WHERE originator_version IN (?, ?)", first, second)
    db = sqlite3.connect(path)
    with db:
        for version, state in ((first, states[second]), (second, states[first])):
            db.execute(
                "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
                "VALUES (?, ?, ?, ?)",
                (session_id.hex, version, "abridged.domain.session:Session.MessageAppended", state),
            )
    db.close()
    result = verdict(path, session_id)
    assert result.broken_at == first


def test_a_removed_hash_is_named(store: tuple[Path, UUID]) -> None:
    path, session_id = store
    version = 5
    [state] = [s for v, _, s in rows(path) if v == version]
    data = json.loads(state)
    del data["_chain"]
    tamper(
        path,
        "UPDATE stored_events SET state = ? WHERE originator_version = ?",
        json.dumps(data, separators=(",", ":")).encode(),
        version,
    )
    result = verdict(path, session_id)
    assert result.broken_at == version
    assert "carries no hash" in result.problem


def test_the_chain_holds_across_processes_and_conflicting_writers(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    session_id = make_session(path, turns=1)
    first, second = open_app(path), open_app(path)
    try:
        first.session(session_id)
        second.session(session_id)  # both hold the session, cached
        first.record_reply(session_id, Message.assistant("Compacted."))
        first.append_message(session_id, Message.user("From the first process."))
        first.record_reply(session_id, Message.assistant("ok"))
        # The second writer's save conflicts, is retried on the fresh state, and chains to
        # what the first one stored, not to what it had mapped before the conflict.
        second.append_message(session_id, Message.user("From the second process."))
        for _ in range(30):  # past a snapshot interval
            second.record_reply(session_id, Message.assistant("ok"))
            second.append_message(session_id, Message.user("more"))
    finally:
        first.close()
        second.close()
    result = verdict(path, session_id)
    assert result.ok, result
    assert result.events == len(rows(path))
    app = open_app(path)
    try:
        assert audit_session(app, session_id).ok
    finally:
        app.close()


def test_a_store_from_before_the_chain_audits_and_chains_what_comes_next(tmp_path: Path) -> None:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    session_id = UUID(data["session_id"])
    path = tmp_path / "old.sqlite3"
    app = open_app(path)
    try:
        app.recorder.insert_events(stored(data["events"], session_id))
        old = audit_session(app, session_id).chain
        assert old is not None
        assert old.ok
        assert old.chained_from is None
        assert "none" in old.describe()
        app.append_message(session_id, Message.user("Carry on."))
    finally:
        app.close()
    code, output = audit(path, session_id)
    assert code == 0, output
    count = len(data["events"])
    assert f"no chain before version {count + 1}" in output
    # Altering an event after the start of the chain is caught; before it, it cannot be.
    tamper(
        path,
        "UPDATE stored_events SET state = replace(state, 'Carry on.', 'Drop it.') "
        "WHERE originator_version = ?",
        count + 1,
    )
    assert verdict(path, session_id).broken_at == count + 1


def test_events_record_the_hosts_correlation_id(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    app = open_app(path)
    try:
        session_id = app.start_session(
            model="claude-test", context_window=20_000, max_output_tokens=1_000
        )
        with app.correlation("req-7f3a"):
            app.append_message(session_id, Message.user("Hello."))
        app.record_reply(session_id, Message.assistant("Hi."))
        with pytest.raises(InvalidArgumentError):
            app.correlation(" ").__enter__()
        events = app.history(session_id)
    finally:
        app.close()
    assert [getattr(e, "correlation_id", None) for e in events] == [None, "req-7f3a", None]
    result = CliRunner().invoke(main, ["history", str(session_id), "--db", str(path), "--json"])
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [line.get("correlation_id") for line in lines] == [None, "req-7f3a", None]
    assert verdict(path, session_id).ok


def test_the_async_service_records_the_correlation_id(tmp_path: Path) -> None:
    from abridged import bootstrap_async

    async def host() -> list[object]:
        path = tmp_path / "sessions.sqlite3"
        async with bootstrap_async(path, counter=FakeTokenCounter()) as sessions:
            session_id = await sessions.start_session(
                model="claude-test", context_window=20_000, max_output_tokens=1_000
            )
            with sessions.correlation("trace-1"):
                await sessions.append_message(session_id, Message.user("Hello."))
            return list(await sessions.history(session_id))

    events = asyncio.run(host())
    assert [getattr(e, "correlation_id", None) for e in events] == [None, "trace-1"]


def test_the_chain_holds_and_catches_an_edit_on_postgresql(postgres_server: str) -> None:
    import psycopg

    from tests.support.postgres import fresh_database

    db = fresh_database(postgres_server)
    session_id = make_session(db, turns=2)
    first = bootstrap(db, counter=FakeTokenCounter())
    second = bootstrap(db, counter=FakeTokenCounter())
    try:
        second.session(session_id)
        first.record_reply(session_id, Message.assistant("Compacted."))
        second.append_message(session_id, Message.user("From the second process."))
        chain = audit_session(second, session_id).chain
        assert chain is not None
        assert chain.ok, chain
    finally:
        first.close()
        second.close()
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(
            "UPDATE sessions_events SET state = convert_to(replace(convert_from(state, 'UTF8'), "
            "%s, %s), 'UTF8') WHERE originator_version = 2",
            ("deploy build 41", "deploy build 42"),
        )
    app = bootstrap(db, counter=FakeTokenCounter())
    try:
        chain = audit_session(app, session_id).chain
    finally:
        app.close()
    assert chain is not None
    assert chain.broken_at == 2
