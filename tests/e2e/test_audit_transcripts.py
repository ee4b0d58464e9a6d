"""The audit on every shared transcript replayed under the default preset (the other presets
are audited by `test_replay_presets.py`), and on a store whose events were altered."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

import pytest
from click.testing import CliRunner

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.cli import main
from abridged.application.auditing import audit_session
from abridged.domain.messages import Role
from abridged.domain.session import Session
from tests.e2e.test_replay_transcripts import COUNTER, WINDOWS, transcripts
from tests.support.replays import ON_ONE_WORKER, Replayed, replay


@ON_ONE_WORKER
@pytest.mark.transcripts
@pytest.mark.skipif(not transcripts(), reason="the shared transcripts folder is absent")
@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("path", transcripts(), ids=lambda p: p.stem)
def test_every_decision_of_a_default_replay_is_re_derived(
    path: Path, window: int, default_replays: Callable[[int], Replayed]
) -> None:
    replayed = default_replays(window)
    app, session_id = replayed.app, replayed.session_ids[path.name]
    audited = audit_session(app, session_id)
    assert audited.mismatches == ()
    history = app.history(session_id)
    decisions = [
        e
        for e in history
        if isinstance(
            e,
            Session.CompactionThresholdHit
            | Session.CompactionCompleted
            | Session.ToolsPruned
            | Session.ReasoningDowngraded
            | Session.CompactionSuppressed,
        )
    ]
    # Every decision event is checked (and the start's settings).
    assert len(audited.findings) == len(decisions) + 1
    replies = [
        e
        for e in history
        if isinstance(e, Session.MessageAppended) and e.message.role is Role.ASSISTANT
    ]
    assert len(audited.requests) == len(replies)


def alter(db: Path, session_id: UUID, event: str, change: dict[str, object]) -> int:
    """Rewrites fields of the session's first stored event of a type; returns its version."""
    with sqlite3.connect(db) as connection:
        version, state = connection.execute(
            "SELECT originator_version, state FROM stored_events "
            "WHERE originator_id = ? AND topic LIKE ? ORDER BY originator_version LIMIT 1",
            (session_id.hex, f"%Session.{event}"),
        ).fetchone()
        data = json.loads(state)
        for path, value in change.items():
            target = data
            *parents, name = path.split(".")
            for parent in parents:
                target = target[parent]
            assert name in target, path
            target[name] = value
        connection.execute(
            "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
            (json.dumps(data).encode(), session_id.hex, version),
        )
    return int(version)


@pytest.mark.transcripts
@pytest.mark.skipif(not transcripts(), reason="the shared transcripts folder is absent")
@pytest.mark.parametrize(
    ("event", "change"),
    [
        ("CompactionCompleted", {"tokens_after": 1}),
        ("CompactionCompleted", {"messages_summarized": 2}),
        ("ToolsPruned", {"boundary": 1}),
        ("CompactionThresholdHit", {"decision._data_.retained_from": 3}),
    ],
)
def test_the_audit_of_an_altered_store_fails_naming_the_event(
    tmp_path: Path, event: str, change: dict[str, object]
) -> None:
    db = tmp_path / "sessions.sqlite3"
    path = next(p for p in transcripts() if "ponyc-4588" in p.stem)
    session_id = replay(bootstrap(db, counter=COUNTER), path, WINDOWS[0])
    runner = CliRunner()
    clean = runner.invoke(main, ["audit", str(session_id), "--db", str(db)])
    assert clean.exit_code == 0, clean.output
    assert "every recorded decision matches" in clean.output

    version = alter(db, session_id, event, change)
    result = runner.invoke(main, ["audit", str(session_id), "--db", str(db), "--json"])
    assert result.exit_code == 4
    records = [json.loads(line) for line in result.stdout.splitlines()]
    verdict = records[-1]
    assert verdict["ok"] is False
    assert verdict["mismatches"][0] == f"{version} {event}"
    assert f"version {version} ({event})" in result.stderr
