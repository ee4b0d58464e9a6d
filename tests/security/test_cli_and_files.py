"""What the command line prints and writes: no terminal escapes from stored text, no
PostgreSQL password, messages that name the real problem, files for their owner only and
never through a link or over a store, a report that sends nothing anywhere, and a store from
elsewhere that cannot make the process import a module."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from click.testing import CliRunner

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.cli import main
from abridged.domain.errors import StoreError
from abridged.domain.messages import Message
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.postgres import fresh_database

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CLEAR = "\x1b[2J\x1b[H"
CSI_C1 = "\x9b31m"
PASSWORD = "hunter2-pg-secret"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def hostile_store(tmp_path: Path) -> tuple[Path, UUID]:
    db = tmp_path / "s.sqlite3"
    app = bootstrap(db, counter=FakeTokenCounter(), summarizer=FakeSummarizer())
    session_id = app.start_session(
        model="claude-test",
        max_output_tokens=100,
        metadata={"title": f"report{CLEAR}"},
        tags=[f"web{CSI_C1}"],
    )
    app.append_message(session_id, Message.user(f"fetched page: {OSC52} {CSI_C1} done"))
    app.close()
    return db, session_id


def test_history_and_sessions_print_no_terminal_escapes(tmp_path: Path) -> None:
    db, session_id = hostile_store(tmp_path)

    for args in (
        ["history", str(session_id), "--db", str(db)],
        ["sessions", "--db", str(db)],
    ):
        code, output = invoke(*args)
        assert code == 0, output
        assert "\x1b" not in output
        assert "\x9b" not in output
        assert "\x07" not in output
        assert "\\x1b" in output  # shown, not hidden


def test_json_output_escapes_what_a_terminal_acts_on_and_keeps_the_text(tmp_path: Path) -> None:
    db, session_id = hostile_store(tmp_path)

    code, output = invoke("history", str(session_id), "--db", str(db), "--json")

    assert code == 0, output
    assert "\x1b" not in output
    assert "\x9b" not in output
    texts = [json.loads(line) for line in output.splitlines()]
    assert texts[0]["metadata"] == {"title": f"report{CLEAR}"}  # the same text, decoded
    assert texts[0]["tags"] == [f"web{CSI_C1}"]


def test_a_time_ago_beyond_any_date_is_a_clean_error(tmp_path: Path) -> None:
    db, session_id = hostile_store(tmp_path)

    code, output = invoke("history", str(session_id), "--db", str(db), "--since", "99999999h")

    assert code == 2
    assert "further back than any date" in output
    assert "OverflowError" not in output


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://ada:{PASSWORD}@127.0.0.1:1/sessions",  # nothing listens on port 1
        f"postgresql://ada:{PASSWORD}@127.0.0.1:1/",  # names no database
    ],
)
def test_a_postgresql_password_is_never_printed_in_errors(url: str) -> None:
    for args in (
        ["history", "0b0e3a4e-8a51-4c1e-9a53-7a4b2a3cbd11", "--db", url],
        ["sessions", "--db", url],
        ["read-model", "update", "--db", url],
        ["demo", "--db", url],
    ):
        code, output = invoke(*args)
        assert code != 0
        assert PASSWORD not in output, args
        assert "***" in output or "names no database" in output or "cannot" in output


def test_replay_and_demo_print_the_store_without_its_password(postgres_server: str) -> None:
    url = fresh_database(postgres_server).replace("abridged@", f"abridged:{PASSWORD}@")

    code, output = invoke("demo", "--db", url, "--window", "16000")
    json_code, json_output = invoke("demo", "--db", url, "--window", "16000", "--json")

    assert code == 0, output
    assert json_code == 0, json_output
    assert PASSWORD not in output + json_output
    assert "abridged:***@" in output


def test_libpq_environment_fills_what_the_url_leaves_out(
    postgres_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = fresh_database(postgres_server)
    host, port, name = re.fullmatch(r"postgresql://abridged@([^:]+):(\d+)/(.+)", url).groups()  # type: ignore[union-attr]
    monkeypatch.setenv("PGHOST", host)
    monkeypatch.setenv("PGPORT", port)
    monkeypatch.setenv("PGUSER", "abridged")
    monkeypatch.setenv("PGPASSWORD", "from-the-environment")

    app = bootstrap(f"postgresql:///{name}", counter=FakeTokenCounter())
    session_id = app.start_session(model="claude-test", max_output_tokens=100)

    assert app.session(session_id).model == "claude-test"
    # Nothing the URL left out is passed: libpq reads PGPASSWORD, or ~/.pgpass without it.
    kwargs = app.recorder.datastore.pool.kwargs  # type: ignore[attr-defined]
    assert not {"host", "port", "user", "password"} & set(kwargs)


def test_a_refused_login_is_named_not_reported_as_a_timeout(postgres_server: str) -> None:
    url = fresh_database(postgres_server).replace("abridged@", f"nobody:{PASSWORD}@")

    code, output = invoke("history", "0b0e3a4e-8a51-4c1e-9a53-7a4b2a3cbd11", "--db", url)

    assert code != 0
    assert 'role "nobody" does not exist' in output
    assert "couldn't get a connection" not in output
    assert PASSWORD not in output


def test_a_store_that_cannot_be_opened_is_not_called_something_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, session_id = hostile_store(tmp_path)
    connect = sqlite3.connect

    def full_disk(database: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if "mode=ro" in str(database):
            raise sqlite3.OperationalError("unable to open database file")
        opened: sqlite3.Connection = connect(database, *args, **kwargs)
        return opened

    monkeypatch.setattr(sqlite3, "connect", full_disk)
    code, output = invoke("history", str(session_id), "--db", str(db))

    assert code != 0
    assert "not a session store" not in output
    assert "cannot read the session store" in output
    assert str(db.parent) in output


def private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def test_store_log_report_and_dumps_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    os.umask(0o022)
    db = tmp_path / "s.sqlite3"
    dumps = tmp_path / "dumps"
    code, output = invoke(
        "demo", "--db", str(db), "--window", "16000", "--dump-requests", str(dumps), "--json"
    )
    assert code == 0, output
    session_id = json.loads(output.splitlines()[-1])["summary"]["session_id"]
    app = bootstrap(db)  # open: its log exists
    app.start_session(model="claude-test", max_output_tokens=100)
    report = tmp_path / "report.html"

    code, output = invoke("report", session_id, "--db", str(db), "--out", str(report))

    assert code == 0, output
    wal = db.with_name(db.name + "-wal")
    files = [db, wal, report, *dumps.iterdir()]
    assert len(files) > 3
    assert all(private(path) for path in files), [oct(p.stat().st_mode) for p in files]
    assert stat.S_IMODE(dumps.stat().st_mode) == 0o700


def test_report_out_never_follows_a_link_nor_overwrites_a_store(tmp_path: Path) -> None:
    db, session_id = hostile_store(tmp_path)
    other = tmp_path / "other.sqlite3"
    bootstrap(other).close()
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    before = {path: path.read_bytes() for path in (db, other, target)}

    for out in (db, other, link):
        code, output = invoke("report", str(session_id), "--db", str(db), "--out", str(out))
        assert code != 0
        assert "not overwritten" in output or "symbolic link" in output

    assert {path: path.read_bytes() for path in before} == before


def test_the_report_sends_nothing_anywhere_and_runs_only_its_own_scripts(tmp_path: Path) -> None:
    db, session_id = hostile_store(tmp_path)
    out = tmp_path / "r.html"

    code, output = invoke("report", str(session_id), "--db", str(db), "--out", str(out))

    assert code == 0, output
    page = out.read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    directives = dict(d.strip().split(" ", 1) for d in policy.group(1).split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["connect-src"] == "'none'"
    assert "unsafe" not in directives["script-src"]
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, re.DOTALL)
    assert scripts
    for body in scripts:
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in directives["script-src"]
    assert '"showSendToCloud": false' in page
    assert '"modeBarButtonsToRemove": ["sendDataToCloud"' in page


def test_a_store_cannot_make_the_process_import_a_module(tmp_path: Path) -> None:
    db, session_id = hostile_store(tmp_path)
    (tmp_path / "planted_module.py").write_text("import sys\nsys.planted = True\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with sqlite3.connect(db) as conn:
            conn.execute(
                "UPDATE stored_events SET topic = 'planted_module:Event' "
                "WHERE originator_version = 2"
            )
        app = bootstrap(db, counter=FakeTokenCounter())

        with pytest.raises(StoreError, match="not abridged's"):
            app.history(session_id)

        assert "planted_module" not in sys.modules
        assert not hasattr(sys, "planted")
    finally:
        sys.path.remove(str(tmp_path))
