"""The command line on inputs and interruptions nobody listed: a mistyped store, rates no
bill can use, a huge window, Ctrl-C part way, notes from an import."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from base64 import b64encode
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from abridged.adapters.cli.files import write_private
from tests.support.images import chunk, png

TRANSCRIPT = [
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello."},
]


def write_transcript(path: Path) -> Path:
    path.write_text("".join(json.dumps(m) + "\n" for m in TRANSCRIPT), encoding="utf-8")
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_sessions_on_a_mistyped_store_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    # Before: an empty store was created at the typo and nothing listed, with status 0.
    typo = tmp_path / "abridgd.sqlite3"

    code, _, err = invoke("sessions", "--db", str(typo), "--json")

    assert code == 1
    assert "no session store" in err
    assert not typo.exists()


def test_simulate_refuses_rates_that_would_print_invalid_json(tmp_path: Path) -> None:
    # Before: --read-rate inf billed NaN and --json printed `NaN`, which JSON parsers refuse.
    path = write_transcript(tmp_path / "t.jsonl")
    for option, value in (("--read-rate", "inf"), ("--write-rate", "nan")):
        code, out, err = invoke("simulate", str(path), "--window", "2000", option, value, "--json")
        assert code == 2
        assert option in err  # inf is out of range; NaN is no number
        assert out == ""


def test_simulate_refuses_a_finite_rate_that_would_overflow_the_bill(tmp_path: Path) -> None:
    # Before: --read-rate 1e308 was finite, billed infinity, and --json printed `Infinity`.
    path = write_transcript(tmp_path / "t.jsonl")
    code, out, err = invoke("simulate", str(path), "--window", "2000", "--read-rate", "1e308")
    assert code == 2
    assert "--read-rate" in err
    assert out == ""


def test_simulate_refuses_a_label_two_configurations_would_share(tmp_path: Path) -> None:
    # Before: both were summed into one total, twice the requests the transcript holds.
    path = write_transcript(tmp_path / "t.jsonl")
    for compare in (["x:off", "x:aggressive"], ["abridged:off"], ["langchain:off"]):
        options = [arg for item in compare for arg in ("--compare", item)]
        code, out, err = invoke("simulate", str(path), "--window", "2000", *options, "--json")
        assert code == 2, compare
        assert "is taken" in err
        assert out == ""


@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
def test_a_report_is_never_written_over_what_is_not_a_regular_file(
    tmp_path: Path, kind: str
) -> None:
    # Before: a device node was replaced by a regular file (as root, /dev/null itself), and a
    # pipe with no reader hung the command.
    target = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    elif os.geteuid() == 0:
        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a null device
    else:
        target = Path("/dev/null")  # not ours to replace: the write must refuse it
    before = os.stat(target)
    with pytest.raises(click.ClickException, match="not a regular file"):
        write_private(target, "<html>report</html>")
    after = os.stat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)


def test_simulate_calls_a_window_too_large_a_usage_error_as_replay_does(tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "t.jsonl")
    for command in (["simulate"], ["replay", "--db", ":memory:"]):
        code, _, err = invoke(*command, str(path), "--window", str(10**12))
        assert code == 2, command
        assert "at most" in err


def test_simulate_prints_what_an_import_changed(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    records = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    code, _, err = invoke("simulate", str(path), "--window", "2000", "--references", "")

    assert code == 0
    assert "note:" in err
    assert "not JSON" in err


def test_a_file_write_stopped_part_way_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the file was truncated, then written in place: Ctrl-C or a full disk part way
    # left half a report (or an empty one) where the earlier one was.
    target = tmp_path / "report.html"
    target.write_text("the earlier report")
    real_fdopen = os.fdopen

    def stopped_part_way(descriptor: int, *args: Any, **kwargs: Any) -> Any:
        file = real_fdopen(descriptor, *args, **kwargs)

        def write(text: str) -> int:
            file.buffer.write(text[: len(text) // 2].encode())
            file.flush()
            raise KeyboardInterrupt

        file.write = write
        return file

    monkeypatch.setattr(os, "fdopen", stopped_part_way)
    with pytest.raises(KeyboardInterrupt):
        write_private(target, "<html>the new report</html>")

    assert target.read_text() == "the earlier report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def long_transcript(path: Path) -> Path:
    lines = []
    for turn in range(400):
        lines.append({"role": "user", "content": f"Step {turn}: " + "word " * 400})
        lines.append({"role": "assistant", "content": f"Done with step {turn}."})
    path.write_text("".join(json.dumps(m) + "\n" for m in lines), encoding="utf-8")
    return path


# A background job (as under a test runner) may start with SIGINT ignored; a command run at
# a terminal does not.
AS_AT_A_TERMINAL = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from abridged.adapters.cli import main; main(sys.argv[1:], prog_name='abridged')"
)


def interrupted(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The command, sent SIGINT (Ctrl-C) once it has printed its first line."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", AS_AT_A_TERMINAL, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(args, process.returncode, first + out, err)


def test_ctrl_c_during_replay_says_where_it_stopped_and_exits_130(tmp_path: Path) -> None:
    # Before: "Aborted!" and status 1, the same as a failure, naming no session.
    path = long_transcript(tmp_path / "long.jsonl")

    done = interrupted(["replay", str(path), "--db", ":memory:", "--window", "4000"], tmp_path)

    assert done.returncode == 130, done.stderr
    assert "interrupted at" in done.stderr
    assert "holds the messages before it" in done.stderr
    assert "Traceback" not in done.stderr


def test_replay_and_simulate_read_a_transcript_piped_to_standard_input() -> None:
    piped = "".join(json.dumps(m) + "\n" for m in TRANSCRIPT)

    replayed = CliRunner().invoke(main, ["replay", "-", "--db", ":memory:", "--json"], input=piped)
    simulated = CliRunner().invoke(
        main, ["simulate", "-", "--window", "2000", "--references", "", "--json"], input=piped
    )

    assert replayed.exit_code == 0, replayed.stderr
    assert json.loads(replayed.stdout.splitlines()[-1])["summary"]["messages"] == 2
    assert simulated.exit_code == 0, simulated.stderr
    assert [row["transcript"] for row in json.loads(simulated.stdout)["outcomes"]] == ["<stdin>"]


def test_standard_input_is_named_in_errors_and_read_once() -> None:
    bad = CliRunner().invoke(main, ["replay", "-", "--db", ":memory:"], input='{"role": "user"\n')
    twice = CliRunner().invoke(
        main, ["simulate", "-", "-", "--window", "2000"], input=json.dumps(TRANSCRIPT[0])
    )

    assert bad.exit_code == 1
    assert "<stdin> line 1" in bad.stderr
    assert twice.exit_code == 2
    assert "can be given once" in twice.stderr


def test_a_pipe_named_as_a_file_is_read_once_like_standard_input(tmp_path: Path) -> None:
    """`abridged replay <(zcat log.jsonl.gz)`: the shell passes a pipe's path; before, the
    second pass over it found nothing ("cannot be read (None)")."""
    pipe = tmp_path / "transcript.fifo"
    os.mkfifo(pipe)
    piped = "".join(json.dumps(m) + "\n" for m in TRANSCRIPT).encode()

    def feed() -> None:
        with pipe.open("wb") as writer:
            writer.write(piped)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    replayed = CliRunner().invoke(main, ["replay", str(pipe), "--db", ":memory:", "--json"])
    writer.join(timeout=10)

    assert replayed.exit_code == 0, replayed.stderr
    assert json.loads(replayed.stdout.splitlines()[-1])["summary"]["messages"] == 2


def test_a_replay_refused_before_its_first_message_leaves_no_store(tmp_path: Path) -> None:
    # Before: the store was made and a session started, then the dump folder was refused (or
    # the system prompt found too large): exit 1 or 3, and an empty store left at --db.
    path = write_transcript(tmp_path / "t.jsonl")
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    store = tmp_path / "new.sqlite3"
    code, _, err = invoke(
        "replay", str(path), "--db", str(store), "--dump-requests", str(blocked / "sub")
    )
    assert code == 1
    assert "cannot create" in err
    assert not store.exists()

    (tmp_path / "t.meta.json").write_text(json.dumps({"system": "word " * 5_000}))
    code, _, err = invoke("replay", str(path), "--db", str(store), "--window", "2000")
    assert code == 3
    assert "NOT SENT" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "t.jsonl", "t.meta.json"]


def test_a_dump_folder_holding_an_earlier_runs_bodies_is_refused(tmp_path: Path) -> None:
    """A second, shorter run into the same folder left the first run's later bodies among
    its own, with nothing to tell them apart."""
    transcript = write_transcript(tmp_path / "t.jsonl")
    dumps = tmp_path / "dumps"
    first = invoke("replay", str(transcript), "--db", ":memory:", "--dump-requests", str(dumps))
    assert first[0] == 0, first[2]
    written = sorted(p.name for p in dumps.iterdir())
    assert written == ["0001.json"]

    store = tmp_path / "second.sqlite3"
    again = invoke("replay", str(transcript), "--db", str(store), "--dump-requests", str(dumps))

    assert again[0] == 1
    assert "holds request bodies already (0001.json)" in again[2]
    assert not store.exists()  # refused before any store was made
    assert sorted(p.name for p in dumps.iterdir()) == written


def test_a_message_over_the_limit_names_the_flag_that_raises_it(tmp_path: Path) -> None:
    """A transcript holding a message of 2,000 bytes, against a limit of 1,000, then 4,000."""
    path = tmp_path / "big.jsonl"
    messages = [{"role": "user", "content": "x" * 2_000}, {"role": "assistant", "content": "ok"}]
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    common = ("--db", ":memory:", "--json")

    refused = invoke("replay", str(path), *common, "--max-message-bytes", "1000")
    replayed = invoke("replay", str(path), *common, "--max-message-bytes", "4000")
    simulated = invoke(
        "simulate", str(path), "--window", "8000", "--references", "", "--json",
        "--max-message-bytes", "1000",
    )  # fmt: skip

    assert refused[0] == 1
    assert "over the limit of 1,000 (--max-message-bytes)" in refused[2]
    assert replayed[0] == 0, replayed[2]
    assert json.loads(replayed[1].splitlines()[-1])["summary"]["messages"] == 2
    assert simulated[0] == 1
    assert "(--max-message-bytes)" in simulated[2]


def test_a_recorded_turn_over_the_services_default_is_replayed_up_to_the_apis_limit(
    tmp_path: Path,
) -> None:
    # Eight screenshots a reply's parallel calls read, each under a megabyte: the API took the
    # turn, but joined in one message its results pass the service's 6,000,000 bytes, and
    # replay and simulate refused the whole log.
    shot = png(640, 400)
    padded = shot[:33] + chunk(b"tEXt", b"Comment\x00" + b"x" * 690_000) + shot[33:]
    image = {"type": "base64", "media_type": "image/png", "data": b64encode(padded).decode()}
    calls = [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {}} for i in range(8)]
    results = [
        {
            "type": "tool_result",
            "tool_use_id": f"t{i}",
            "content": [{"type": "image", "source": image}],
        }
        for i in range(8)
    ]
    messages = [
        {"role": "user", "content": "Compare the screenshots."},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": results},
        {"role": "assistant", "content": "They match."},
    ]
    path = tmp_path / "screens.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")

    replayed = invoke("replay", str(path), "--db", ":memory:", "--json")
    simulated = invoke("simulate", str(path), "--window", "200000", "--references", "", "--json")
    refused = invoke("replay", str(path), "--db", ":memory:", "--max-message-bytes", "6000000")

    assert replayed[0] == 0, replayed[2]
    assert "this run takes messages of up to 33,554,432 bytes" in replayed[2]
    assert simulated[0] == 0, simulated[2]
    assert json.loads(simulated[1])["outcomes"][0]["requests"] == 2
    assert refused[0] == 1
    assert "over the limit of 6,000,000 (--max-message-bytes)" in refused[2]


def test_a_reader_that_stops_early_ends_the_command_quietly_with_141(tmp_path: Path) -> None:
    # Before: "Error: [Errno 32] Broken pipe" and status 1, as if the command had failed.
    process = subprocess.Popen(
        [sys.executable, "-c", AS_AT_A_TERMINAL, "demo", "--db", str(tmp_path / "d.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    first = process.stdout.readline()  # what `| head -1` reads, then it closes the pipe
    process.stdout.close()
    err = process.stderr.read()
    process.wait(timeout=120)

    assert first.startswith("request    1")
    assert process.returncode == 141
    assert err == ""


def test_output_buffered_until_the_end_for_a_closed_pipe_ends_quietly_too(
    tmp_path: Path,
) -> None:
    # A short output is written when the command ends: the pipe is found closed there.
    transcript = write_transcript(tmp_path / "t.jsonl")
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "w") as closed:
        done = subprocess.run(
            [sys.executable, "-c", AS_AT_A_TERMINAL, "replay", str(transcript), "--db", ":memory:"],
            check=False,
            stdout=closed,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            timeout=60,
        )

    assert done.returncode == 141
    assert done.stderr == ""
