"""The `abridged` command line, as users and scripts call it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from tests.support.anthropic_rules import assert_valid_request
from tests.support.progress_bars import recording_bars


def write_transcript(path: Path, lines: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(m) + "\n" for m in lines), encoding="utf-8")
    return path


AGENT = [
    {"role": "user", "content": "List the files, then read the README."},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "README.md\nsrc\n" * 2000},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "call_2", "name": "read", "input": {"path": "README.md"}},
            {"type": "tool_use", "id": "call_3", "name": "bash", "input": {"command": "wc -l *"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_3", "content": "42 README.md"},
            {
                "type": "tool_result",
                "tool_use_id": "call_2",
                "content": "# Project",
                "is_error": False,
            },
        ],
    },
    {"role": "assistant", "content": "The README has one heading."},
]


def test_replay_dumps_complete_requests_and_prints_one_line_each(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "agent.jsonl", AGENT)
    db = tmp_path / "events.sqlite3"
    dump = tmp_path / "requests"

    result = CliRunner().invoke(
        main,
        [
            "replay",
            str(transcript),
            "--window",
            "4000",
            "--db",
            str(db),
            "--dump-requests",
            str(dump),
        ],
    )

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == [
        "request    1 (line    2)",
        "request    2 (line    4)",
        "request    3 (line    6)",
    ]
    assert "% of window" in lines[0]
    assert lines[3].startswith("session ")
    assert "3 requests" in lines[3]
    assert lines[4].startswith("audit it: abridged history ")
    assert db.exists()
    bodies = [json.loads(p.read_text()) for p in sorted(dump.iterdir())]
    assert [p.name for p in sorted(dump.iterdir())] == ["0001.json", "0002.json", "0003.json"]
    for body in bodies:
        assert_valid_request(body)
    # The transcript defines no tools: each tool it uses gets a permissive definition.
    assert {t["name"] for t in bodies[-1]["tools"]} == {"bash", "read"}
    assert bodies[-1]["max_tokens"] == 1000
    # The huge listing is shown head and tail.
    shown = bodies[-1]["messages"][2]["content"][0]["content"]
    assert "characters of tool output truncated" in shown


def test_replay_json_lines_carry_the_same_figures(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "agent.jsonl", AGENT)

    result = CliRunner().invoke(
        main, ["replay", str(transcript), "--window", "4000", "--db", ":memory:", "--json"]
    )

    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.output.splitlines()]
    assert [r["request"] for r in records[:-1]] == [1, 2, 3]
    assert all(r["window"] == 4000 and 0 < r["percent"] < 100 for r in records[:-1])
    summary = records[-1]["summary"]
    assert summary["requests"] == 3
    assert summary["messages"] == 6
    assert len(summary["session_id"]) == 36


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [AGENT[0], {"role": "assistant", "content": [{"kind": "nope"}]}],
            "line 2: a content block needs a string 'type', got None",
        ),
        (
            [AGENT[0], {"role": "assistant", "content": "Done."}, AGENT[2]],
            "line 3: tool_result for call_1 answers no tool_use",
        ),
        (
            [AGENT[0], AGENT[1], {"role": "user", "content": "forgot the result"}],
            "line 3: tool_use call_1",
        ),
    ],
)
def test_bad_input_names_the_line_and_exits_non_zero(
    tmp_path: Path, lines: list[dict[str, object]], message: str
) -> None:
    transcript = write_transcript(tmp_path / "bad.jsonl", lines)

    result = CliRunner().invoke(main, ["replay", str(transcript), "--db", ":memory:"])

    assert result.exit_code != 0
    assert message in result.output


def test_replay_progress_moves_per_message_and_stays_out_of_the_json_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = write_transcript(tmp_path / "agent.jsonl", AGENT)
    bars = recording_bars(monkeypatch)

    result = CliRunner().invoke(main, ["replay", str(transcript), "--db", ":memory:", "--json"])

    assert result.exit_code == 0, result.output
    for line in result.stdout.splitlines():
        json.loads(line)
    reading, replaying = bars
    assert reading.description == "reading agent.jsonl"
    assert sum(reading.updates) == reading.total == transcript.stat().st_size
    assert replaying.description == "replaying"
    assert replaying.updates == [1] * len(AGENT)
    assert replaying.total == len(AGENT)
    assert all(bar.to_stderr and bar.closed for bar in bars)


def test_a_missing_transcript_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["replay", str(tmp_path / "nope.jsonl")])
    assert result.exit_code != 0
    assert "nope.jsonl" in result.output


def test_an_inconsistent_window_is_a_usage_error(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "agent.jsonl", AGENT)
    result = CliRunner().invoke(
        main, ["replay", str(transcript), "--window", "1000", "--max-output-tokens", "1000"]
    )
    assert result.exit_code == 2
    assert "reserved output tokens" in result.output


def test_an_oversize_message_is_shown_reduced_and_sent(tmp_path: Path) -> None:
    lines = [{"role": "user", "content": "word " * 5000}, {"role": "assistant", "content": "ok"}]
    transcript = write_transcript(tmp_path / "big.jsonl", lines)

    result = CliRunner().invoke(
        main, ["replay", str(transcript), "--window", "2000", "--db", ":memory:", "--json"]
    )

    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.splitlines()[-1])["summary"]
    assert summary["requests"] == 1
    assert summary["overflows"] == 0


def test_a_system_prompt_too_large_for_the_window_is_reported_not_sent(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", AGENT)
    (tmp_path / "t.meta.json").write_text(json.dumps({"system": "rule " * 5000}))

    result = CliRunner().invoke(
        main, ["replay", str(transcript), "--window", "2000", "--db", ":memory:"]
    )

    assert result.exit_code != 0
    assert "the system prompt (" in result.output
    assert "Traceback" not in result.output


def test_history_shows_the_audit_trail(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite3"
    runner = CliRunner()
    replayed = runner.invoke(main, ["demo", "--db", str(db), "--json", "--window", "16000"])
    assert replayed.exit_code == 0, replayed.output
    session_id = json.loads(replayed.output.splitlines()[-1])["summary"]["session_id"]

    result = runner.invoke(main, ["history", session_id, "--db", str(db), "--json"])

    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.output.splitlines()]
    names = [e["event"] for e in events]
    assert names[0] == "Started"
    hits = [e for e in events if e["event"] == "CompactionThresholdHit"]
    done = [e for e in events if e["event"] == "CompactionCompleted"]
    assert hits
    assert len(hits) == len(done)
    assert all(h["estimate"] >= h["threshold"] for h in hits)
    assert [e["version"] for e in events] == list(range(1, len(events) + 1))


def test_history_of_an_unknown_session_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["history", "00000000-0000-0000-0000-000000000000", "--db", ":memory:"]
    )
    assert result.exit_code == 1
    assert "no session with id" in result.output


def test_the_installed_demo_command_runs_without_data_or_key(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("abridged")
    env = {"PATH": str(script.parent), "HOME": str(tmp_path)}

    done = subprocess.run(
        [str(script), "demo", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])["summary"]
    assert summary["compactions"] > 0
    assert summary["peak_percent"] <= 100 * (32_000 - 8_000) / 32_000
    assert (tmp_path / "abridged.sqlite3").exists()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("keep_recent_turns=2.5", "keep_recent_turns must be int"),
        ("summarize_thinking=no", "summarize_thinking must be bool"),
        ("tool_policies=x", "tool_policies must be dict[str, str]"),
        ("prune_strategy=sometimes", "prune_strategy must be one of"),
    ],
)
def test_a_bad_setting_is_a_usage_error_naming_it(setting: str, message: str) -> None:
    result = CliRunner().invoke(main, ["demo", "--db", ":memory:", "--set", setting])
    assert result.exit_code == 2
    assert message in result.output


def test_the_demo_and_history_on_postgresql(postgres_server: str) -> None:
    from tests.support.postgres import fresh_database

    db = fresh_database(postgres_server)
    runner = CliRunner()
    replayed = runner.invoke(main, ["demo", "--db", db, "--json", "--window", "16000"])
    assert replayed.exit_code == 0, replayed.output
    session_id = json.loads(replayed.output.splitlines()[-1])["summary"]["session_id"]

    result = runner.invoke(main, ["history", session_id, "--db", db, "--json"])

    assert result.exit_code == 0, result.output
    names = [json.loads(line)["event"] for line in result.output.splitlines()]
    assert names[0] == "Started"
    assert "CompactionCompleted" in names


def test_the_demos_saved_transcript_replays_as_the_demo_ran(tmp_path: Path) -> None:
    # The docs' `abridged replay session.jsonl ...` examples need a transcript at hand.
    saved = tmp_path / "session.jsonl"
    demo = CliRunner().invoke(
        main, ["demo", "--db", ":memory:", "--json", "--save-transcript", str(saved)]
    )
    replay = CliRunner().invoke(
        main, ["replay", str(saved), "--db", ":memory:", "--json", "--window", "32000"]
    )

    assert demo.exit_code == 0, demo.output
    assert replay.exit_code == 0, replay.output
    assert (tmp_path / "session.meta.json").is_file()

    def requests(output: str) -> list[dict[str, object]]:
        # The transcript's line number is the one thing a generated session has not.
        return [{**json.loads(line), "line": None} for line in output.splitlines()[:-1]]

    assert len(requests(demo.stdout)) > 100
    assert requests(replay.stdout) == requests(demo.stdout)
