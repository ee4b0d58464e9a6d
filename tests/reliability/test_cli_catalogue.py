"""The CLI catalogue: every user error is one line on stderr and a non-zero exit, with no
traceback; an invalid transcript creates no session; reading never creates a store."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.cli import main

ROOT = Path(__file__).resolve().parents[2]

GOOD = [
    {"role": "user", "content": "List the files."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "call_1", "name": "bash", "input": {"c": "ls"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "a"}]},
    {"role": "assistant", "content": "Done."},
]


def lines(*messages: object) -> bytes:
    return "".join(json.dumps(m) + "\n" for m in messages).encode()


def raw_line(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass") + b"\n"


def nested(depth: int) -> str:
    return '{"a":' * depth + "{}" + "}" * depth


@attrs.frozen
class Case:
    """`args` may hold `{t}` (the transcript), `{db}` (a store path that must stay unwritten)
    and `{dir}` (the test's folder); `transcript` is its content, `meta` its meta file's."""

    name: str
    args: Sequence[str]
    transcript: bytes | None = None
    meta: bytes | None = None
    setup: Callable[[Path], None] | None = None
    exit_code: int | None = None


def _corrupt(path: Path) -> None:
    (path / "bad.db").write_bytes(bytes(range(256)) * 40)


def _text_file(path: Path) -> None:
    (path / "bad.db").write_text("just some notes\n")


def _folder(path: Path) -> None:
    (path / "bad.db").mkdir()


def _foreign(path: Path) -> None:
    with sqlite3.connect(path / "bad.db") as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")


def _store(path: Path) -> None:
    bootstrap(path / "bad.db").close()


REPLAY = ["replay", "{t}", "--db", "{db}"]
CLI_CASES: tuple[Case, ...] = (
    Case("replay a missing file", ["replay", "{dir}/nope.jsonl", "--db", "{db}"]),
    Case("replay a folder", ["replay", "{dir}", "--db", "{db}"], exit_code=2),
    Case("replay /dev/zero", ["replay", "/dev/zero", "--db", "{db}"]),
    Case("replay an empty file", REPLAY, b""),
    Case("replay blank lines only", REPLAY, b"\n\n  \n"),
    Case("replay a line that is not JSON", REPLAY, b'{"role": "user", "content": \n'),
    Case("replay bytes that are not UTF-8", REPLAY, b'{"role": "user", "content": "\xff\xfe"}\n'),
    Case("replay a line that is a list", REPLAY, b"[1, 2]\n"),
    Case("replay a bad role", REPLAY, lines({"role": "system", "content": "x"})),
    Case("replay a reply first", REPLAY, lines({"role": "assistant", "content": "x"})),
    Case("replay an orphan tool_result", REPLAY, lines(*GOOD[:2], GOOD[0], *GOOD[2:])),
    Case(
        "replay a lone surrogate",
        REPLAY,
        lines(*GOOD[:3], {"role": "assistant", "content": "\ud800"}),
    ),
    Case(
        "replay an escaped lone surrogate",
        REPLAY,
        lines(*GOOD) + raw_line('{"role": "user", "content": "bad \\udc80 here"}'),
    ),
    Case(
        "replay a tool input nested 100,000 deep",
        REPLAY,
        lines(GOOD[0])
        + raw_line(
            '{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "b", '
            f'"input": {nested(100_000)}}}]}}'
        ),
    ),
    Case(
        "replay a tool id ending in a newline",
        REPLAY,
        lines(
            GOOD[0],
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c\n", "name": "b", "input": {}}],
            },
        ),
    ),
    Case(
        "replay an image that is not base64",
        REPLAY,
        lines(
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "@@@"},
                    }
                ],
            }
        ),
    ),
    Case(
        "replay a message over the size limit",
        [*REPLAY, "--max-message-bytes", "1000000"],
        lines({"role": "user", "content": "x" * 1_100_000}),
    ),
    Case(
        "replay a message over the API's request limit",
        REPLAY,
        lines({"role": "user", "content": "x" * 33_600_000}),
    ),
    Case(
        "replay a result that answers no call",
        REPLAY,
        lines(GOOD[0], {"role": "assistant", "content": "Done."}, GOOD[2]),
    ),
    Case("replay empty text in line 3", REPLAY, lines(*GOOD[:2], {"role": "user", "content": ""})),
    Case("replay a meta file that is not JSON", REPLAY, lines(*GOOD), b"{nope"),
    Case("replay a meta file whose tools are no list", REPLAY, lines(*GOOD), b'{"tools": 3}'),
    Case(
        "replay a meta tool with a bad name",
        REPLAY,
        lines(*GOOD),
        json.dumps({"tools": [{"name": "bad name", "input_schema": {"type": "object"}}]}).encode(),
    ),
    Case(
        "replay a meta tool schema of type array",
        REPLAY,
        lines(*GOOD),
        json.dumps({"tools": [{"name": "bash", "input_schema": {"type": "array"}}]}).encode(),
    ),
    Case(
        "replay into a corrupt store",
        ["replay", "{t}", "--db", "{dir}/bad.db"],
        lines(*GOOD),
        setup=_corrupt,
    ),
    Case(
        "replay into a text file",
        ["replay", "{t}", "--db", "{dir}/bad.db"],
        lines(*GOOD),
        setup=_text_file,
    ),
    Case(
        "replay into a folder",
        ["replay", "{t}", "--db", "{dir}/bad.db"],
        lines(*GOOD),
        setup=_folder,
    ),
    Case("replay into a missing folder", ["replay", "{t}", "--db", "{dir}/no/s.db"], lines(*GOOD)),
    Case("replay into /proc", ["replay", "{t}", "--db", "/proc/abridged.db"], lines(*GOOD)),
    Case(
        "replay into an unreachable PostgreSQL",
        ["replay", "{t}", "--db", "postgresql://u@127.0.0.1:1/db"],
        lines(*GOOD),
    ),
    Case(
        "replay into a PostgreSQL URL without a database",
        ["replay", "{t}", "--db", "postgresql://127.0.0.1:1/"],
        lines(*GOOD),
    ),
    Case("replay --window 0", [*REPLAY, "--window", "0"], lines(*GOOD), exit_code=2),
    Case("replay --window abc", [*REPLAY, "--window", "abc"], lines(*GOOD), exit_code=2),
    Case("replay --set without =", [*REPLAY, "--set", "bogus"], lines(*GOOD), exit_code=2),
    Case(
        "replay --set an unknown setting", [*REPLAY, "--set", "nope=1"], lines(*GOOD), exit_code=2
    ),
    Case(
        "replay --set out of range",
        [*REPLAY, "--set", "threshold_ratio=5"],
        lines(*GOOD),
        exit_code=2,
    ),
    Case("replay --preset unknown", [*REPLAY, "--preset", "nope"], lines(*GOOD), exit_code=2),
    Case(
        "replay output over the window",
        [*REPLAY, "--window", "2000", "--max-output-tokens", "5000"],
        lines(*GOOD),
        exit_code=2,
    ),
    Case(
        "history in a missing store",
        ["history", "00000000-0000-0000-0000-000000000001", "--db", "{db}"],
    ),
    Case(
        "history in a folder", ["history", "00000000-0000-0000-0000-000000000001", "--db", "{dir}"]
    ),
    Case(
        "history in a corrupt store",
        ["history", "00000000-0000-0000-0000-000000000001", "--db", "{dir}/bad.db"],
        setup=_corrupt,
    ),
    Case(
        "history in a text file",
        ["history", "00000000-0000-0000-0000-000000000001", "--db", "{dir}/bad.db"],
        setup=_text_file,
    ),
    Case(
        "history in another program's database",
        ["history", "00000000-0000-0000-0000-000000000001", "--db", "{dir}/bad.db"],
        setup=_foreign,
    ),
    Case(
        "history of an unknown session",
        ["history", "00000000-0000-0000-0000-000000000001", "--db", "{dir}/bad.db"],
        setup=_store,
    ),
    Case("history of a bad id", ["history", "not-a-uuid", "--db", "{db}"], exit_code=2),
    Case(
        "history in an unreachable PostgreSQL",
        ["history", "00000000-0000-0000-0000-000000000001", "--db", "postgresql://u@127.0.0.1:1/d"],
    ),
    Case(
        "show in a missing store", ["show", "00000000-0000-0000-0000-000000000001", "--db", "{db}"]
    ),
    Case("audit in a missing store", ["audit", "--all", "--db", "{db}"]),
    Case(
        "report in a missing store",
        ["report", "00000000-0000-0000-0000-000000000001", "--db", "{db}", "--out", "{dir}/r.html"],
    ),
    Case(
        "show in another program's database",
        ["show", "00000000-0000-0000-0000-000000000001", "--db", "{dir}/bad.db"],
        setup=_foreign,
    ),
    Case("an unknown command", ["frobnicate"], exit_code=2),
    Case("demo --window 0", ["demo", "--window", "0", "--db", "{db}"], exit_code=2),
    Case("demo --set unknown", ["demo", "--set", "nope=1", "--db", "{db}"], exit_code=2),
    Case("demo into a folder", ["demo", "--db", "{dir}/bad.db"], setup=_folder),
)


def fingerprint(path: Path) -> str | None:
    if not path.exists():
        return None
    if path.is_dir():
        return "folder:" + ",".join(sorted(p.name for p in path.iterdir()))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prepared(case: Case, folder: Path) -> list[str]:
    transcript = folder / "t.jsonl"
    if case.transcript is not None:
        transcript.write_bytes(case.transcript)
    if case.meta is not None:
        (folder / "t.meta.json").write_bytes(case.meta)
    if case.setup is not None:
        case.setup(folder)
    values = {"t": str(transcript), "db": str(folder / "store.db"), "dir": str(folder)}
    return [arg.format(**values) for arg in case.args]


def test_the_cli_catalogue_holds_enough_cases() -> None:
    assert len(CLI_CASES) >= 45
    assert len({case.name for case in CLI_CASES}) == len(CLI_CASES)


@pytest.mark.parametrize("case", CLI_CASES, ids=[case.name for case in CLI_CASES])
def test_a_user_error_is_one_line_and_a_non_zero_exit(case: Case, tmp_path: Path) -> None:
    args = prepared(case, tmp_path)
    bad = tmp_path / "bad.db"
    before = fingerprint(bad)

    result = CliRunner().invoke(main, args)

    assert result.exit_code != 0, result.output
    if case.exit_code is not None:
        assert result.exit_code == case.exit_code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert errors, "a user error says what went wrong"
    assert len(errors) == 1 or case.exit_code == 2, result.stderr
    # Nothing is written: no store appears, and a bad store stays as it was.
    assert not (tmp_path / "store.db").exists(), "a failed command created a store"
    assert fingerprint(bad) == before


def test_an_unexpected_error_shows_its_traceback_only_with_debug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(db: str, *, read_only: bool = False) -> None:
        raise RuntimeError("the disk caught fire")

    monkeypatch.setattr("abridged.adapters.cli.history.open_store", broken)
    args = ["history", "00000000-0000-0000-0000-000000000001"]

    plain = CliRunner().invoke(main, args)
    debug = CliRunner().invoke(main, ["--debug", *args])

    assert plain.exit_code == 1
    assert plain.stderr.strip() == "Error: RuntimeError: the disk caught fire"
    assert isinstance(debug.exception, RuntimeError)


def test_the_installed_command_prints_no_traceback(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(lines(*GOOD) + raw_line('{"role": "user", "content": "\\ud800"}'))
    for args in (
        ["replay", str(transcript), "--db", str(tmp_path / "s.db")],
        ["history", "00000000-0000-0000-0000-000000000001", "--db", str(tmp_path / "n.db")],
        ["replay", "/dev/zero", "--db", str(tmp_path / "s.db")],
    ):
        done = subprocess.run(
            [sys.executable, "-c", "from abridged.adapters.cli import main; main()", *args],
            check=False,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "s.db").exists()
    assert not (tmp_path / "n.db").exists()
