"""`abridged sessions`: a store's sessions, as users and scripts list them."""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

from click.testing import CliRunner

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.cli import main
from abridged.domain.messages import Message


def test_sessions_json_prints_one_object_per_session_newest_first(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite3"
    runner = CliRunner()
    replayed = runner.invoke(main, ["demo", "--db", str(db), "--json", "--window", "16000"])
    assert replayed.exit_code == 0, replayed.output
    demo_id = json.loads(replayed.output.splitlines()[-1])["summary"]["session_id"]
    app = bootstrap(db)
    tagged = app.start_session(
        model="claude-haiku-4-5", max_output_tokens=1_000, metadata={"user": "ada"}, tags=["web"]
    )
    app.append_message(tagged, Message.user("Hello"))
    gone = app.start_session(model="claude-haiku-4-5", max_output_tokens=1_000)
    app.delete_session(gone)

    result = runner.invoke(main, ["sessions", "--db", str(db), "--json"])

    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [row["id"] for row in rows] == [str(tagged), demo_id]
    demo = app.session(UUID(demo_id))
    assert rows[1]["messages"] == demo.message_count
    assert rows[1]["compactions"] == demo.generation > 0
    assert rows[1]["context_status"] == "summarized"
    assert rows[0] | {"created_at": None, "last_activity": None} == {
        "id": str(tagged),
        "model": "claude-haiku-4-5",
        "messages": 1,
        "compactions": 0,
        "context_status": "full",
        "created_at": None,
        "last_activity": None,
        "metadata": {"user": "ada"},
        "tags": ["web"],
    }
    assert rows[0]["last_activity"] >= rows[0]["created_at"]


def test_sessions_filters_pages_and_prints_text(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite3"
    app = bootstrap(db)
    ids = [
        app.start_session(
            model="claude-haiku-4-5", max_output_tokens=1_000, metadata={"n": str(i)}, tags=["t"]
        )
        for i in range(3)
    ]
    runner = CliRunner()

    first = runner.invoke(main, ["sessions", "--db", str(db), "--limit", "2"])
    cursor = first.stderr.strip().split()[-1]
    rest = runner.invoke(main, ["sessions", "--db", str(db), "--cursor", cursor])
    only = runner.invoke(main, ["sessions", "--db", str(db), "--meta", "n=1", "--tag", "t"])
    bad = runner.invoke(main, ["sessions", "--db", str(db), "--meta", "nokey"])

    assert first.exit_code == 0, first.output
    assert [line.split()[0] for line in first.stdout.splitlines()] == [str(ids[2]), str(ids[1])]
    assert "0 compactions" in first.stdout
    assert "#t n=2" in first.stdout
    assert [line.split()[0] for line in rest.stdout.splitlines()] == [str(ids[0])]
    assert rest.stderr == ""
    assert [line.split()[0] for line in only.stdout.splitlines()] == [str(ids[1])]
    assert bad.exit_code == 2
    assert "KEY=VALUE" in bad.output


def test_sessions_of_an_empty_store_prints_nothing(tmp_path: Path) -> None:
    # Made first: `sessions` reads a store, and refuses a path that holds none.
    store = tmp_path / "new.sqlite3"
    bootstrap(store).close()
    result = CliRunner().invoke(main, ["sessions", "--db", str(store)])
    assert result.exit_code == 0
    assert result.output == ""


def test_verbose_sends_the_librarys_logs_to_stderr_and_only_then() -> None:
    runner = CliRunner()
    args = ["demo", "--db", ":memory:", "--json", "--window", "16000"]

    quiet = runner.invoke(main, args)
    verbose = runner.invoke(main, ["--verbose", *args])

    assert quiet.exit_code == verbose.exit_code == 0
    assert quiet.stderr == ""
    assert "[info     ] session" in verbose.stderr
    assert "[abridged.application.compactor]" in verbose.stderr
    assert "compacted" in verbose.stderr
    assert all(json.loads(line) for line in verbose.stdout.splitlines())
