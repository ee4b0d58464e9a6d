"""`abridged audit`, `show`, `history` filters, `report` and `read-model`, as users call them."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest
from click.testing import CliRunner

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.cli import main
from abridged.application.service import Sessions
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.checks import feed
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

ROOT = Path(__file__).resolve().parents[2]
COUNTER = FakeTokenCounter()


def compacted_session(app: Sessions, turns: int = 12) -> UUID:
    session_id = app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    for i in range(turns):
        feed(app, session_id, list(turn(f"Request {i}", [words(150)])), COUNTER)
    return session_id


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, list[UUID]]:
    db = str(tmp_path / "sessions.sqlite3")
    app = bootstrap(db, counter=COUNTER, summarizer=FakeSummarizer(words(60, "fact")))
    return db, [compacted_session(app), compacted_session(app, turns=3)]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_audit_prints_each_compaction_and_a_verdict(store: tuple[str, list[UUID]]) -> None:
    db, (session_id, _) = store
    code, out, _ = run("audit", str(session_id), "--db", db)
    assert code == 0
    lines = [line for line in out.splitlines() if "compaction " in line]
    assert lines
    assert "(v" in lines[0]
    assert "threshold" in lines[0]
    assert "->" in lines[0]
    assert "summarizer fake" in lines[0]
    assert re.search(r"ledger \d+ entries, [\d,]+ tokens", lines[0])
    assert "every recorded decision matches" in out


def test_each_compaction_line_gives_the_ledger_it_left(store: tuple[str, list[UUID]]) -> None:
    db, (session_id, _) = store
    code, out, _ = run("audit", str(session_id), "--db", db, "--json")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    compactions = [r for r in records if r["type"] == "compaction"]
    assert compactions
    app = bootstrap(db, counter=COUNTER, summarizer=FakeSummarizer(words(60, "fact")))
    updates = [e for e in app.history(session_id) if isinstance(e, Session.LedgerUpdated)]
    assert [c["ledger_tokens"] for c in compactions] == [u.tokens for u in updates]
    assert [c["ledger_entries"] for c in compactions] == [len(u.entries) for u in updates]


def test_audit_all_sessions_as_json_lines(store: tuple[str, list[UUID]]) -> None:
    db, ids = store
    code, out, err = run("audit", "--all", "--db", db, "--json", "--checks")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    verdicts = [r for r in records if r["type"] == "verdict"]
    assert [UUID(v["session"]) for v in verdicts] == ids
    assert all(v["ok"] for v in verdicts)
    checks = [r for r in records if r["type"] == "check"]
    assert checks
    assert all(c["matches"] for c in checks)
    assert err == ""  # no progress bar when stderr is not a terminal


def test_audit_needs_a_session_and_names_an_unknown_one(store: tuple[str, list[UUID]]) -> None:
    db, _ = store
    code, _, err = run("audit", "--db", db)
    assert code == 2
    assert "--all" in err
    missing = "00000000-0000-0000-0000-000000000001"
    code, _, err = run("audit", missing, "--db", db)
    assert code == 1
    assert missing in err


def test_a_progress_bar_shows_on_a_terminal(store: tuple[str, list[UUID]]) -> None:
    db, _ = store
    leader, follower = pty.openpty()
    # A terminal 100 columns wide (a fresh pty has none, and a bar needs some).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = "from abridged.adapters.cli import main; main()"
    process = subprocess.run(
        [sys.executable, "-c", command, "audit", "--all", "--db", db],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
        timeout=120,
        check=False,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert process.returncode == 0
    assert b"auditing" in shown
    assert b"/2 " in shown  # counts the two sessions


def test_show_breaks_the_context_down_by_part(store: tuple[str, list[UUID]]) -> None:
    db, (session_id, _) = store
    code, out, _ = run("show", str(session_id), "--db", db, "--json")
    assert code == 0
    shown = json.loads(out)
    parts = ("overhead", "system", "tools", "summary", "ledger", "messages", "extra")
    assert sum(shown[p] for p in parts) == shown["total"]
    assert shown["summary"] > 0
    assert shown["estimate"] <= shown["budget"]
    app = bootstrap(db, counter=COUNTER)
    session = app.session(session_id)
    assert shown["estimate"] == session.estimate()
    assert shown["kept_messages"] == len(session.entries)

    code, out, _ = run("show", str(session_id), "--db", db)
    assert code == 0
    for label in ("system prompt", "tools", "summaries", "kept messages", "total", "threshold"):
        assert label in out


def test_history_filters_by_type_and_time_and_shows_summaries(
    store: tuple[str, list[UUID]],
) -> None:
    db, (session_id, _) = store
    code, out, _ = run(
        "history", str(session_id), "--db", db, "--type", "CompactionCompleted", "--json"
    )
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows
    assert {r["event"] for r in rows} == {"CompactionCompleted"}
    assert all(r["summary"].startswith("fact") for r in rows)
    assert all(datetime.fromisoformat(r["time"]).tzinfo is not None for r in rows)

    code, text, _ = run("history", str(session_id), "--db", db, "--type", "compactioncompleted")
    assert code == 0
    assert "fact fact" in text  # the summary text, under its event

    code, everything, _ = run("history", str(session_id), "--db", db, "--since", "1h")
    _, all_events, _ = run("history", str(session_id), "--db", db)
    assert everything == all_events
    later = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    code, nothing, _ = run("history", str(session_id), "--db", db, "--since", later)
    assert code == 0
    assert nothing == ""
    code, _, err = run("history", str(session_id), "--db", db, "--since", "yesterday-ish")
    assert code == 2
    assert "ISO 8601" in err


def test_report_writes_one_page_or_says_why_not(
    store: tuple[str, list[UUID]], tmp_path: Path
) -> None:
    db, (session_id, _) = store
    out = tmp_path / "report.html"
    code, printed, _ = run("report", str(session_id), "--db", db, "--out", str(out))
    assert code == 0
    assert "every decision matches" in printed
    page = out.read_text(encoding="utf-8")
    assert "<details>" in page
    assert "cdn" not in page.lower().split("<body>")[0]  # nothing fetched in the head
    code, _, err = run(
        "report", str(session_id), "--db", db, "--out", str(tmp_path / "no" / "r.html")
    )
    assert code == 1
    assert "cannot write" in err


def test_read_model_update_and_rebuild(store: tuple[str, list[UUID]]) -> None:
    db, _ = store
    code, out, _ = run("read-model", "update", "--db", db, "--page-size", "2")
    assert code == 0
    first = json.loads(out)
    assert first["stored"] == first["rows"] > 0
    code, out, _ = run("read-model", "update", "--db", db)
    assert json.loads(out)["stored"] == 0
    code, out, _ = run("read-model", "rebuild", "--db", db)
    assert json.loads(out) == first
    code, _, err = run("read-model", "update", "--db", ":memory:")
    assert code == 1
    assert "not :memory:" in err
