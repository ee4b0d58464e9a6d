"""`abridged simulate`: abridged and the references side by side, on sessions unlike the
shared transcripts (research agents, one in OpenAI format; coding agents with listings of
hundreds of paths, 100k-character logs, parallel calls and thinking; a support agent with
JSON outputs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from tests.support.generated_sessions import (
    coding_session,
    openai_research_records,
    parallel_coding_records,
    research_session,
    support_records,
    write_jsonl,
    write_records,
)
from tests.support.progress_bars import recording_bars


def simulate(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["simulate", *args, "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


# Session scope: an xdist worker interleaves modules, and a module fixture is made again
# each time the worker comes back to the module; these simulations take seconds, so the
# module's tests run on one worker (its group), which makes them once.
pytestmark = pytest.mark.xdist_group("simulate")


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("sessions")
    return [
        write_jsonl(coding_session(seed=3), folder / "coding.jsonl"),
        write_jsonl(research_session(seed=5), folder / "research.jsonl"),
        # As other tools record them: OpenAI chat format, parallel calls with thinking, JSON.
        write_records(openai_research_records(seed=9, questions=12), folder / "openai.jsonl"),
        write_records(parallel_coding_records(seed=8, tasks=10), folder / "parallel.jsonl"),
        write_records(support_records(seed=7, tickets=40), folder / "support.jsonl"),
    ]


@pytest.fixture(scope="session")
def at_16k(generated: list[Path]) -> dict[str, Any]:
    return simulate(*map(str, generated), "--window", "16000")


def test_every_strategy_is_measured_on_every_transcript(at_16k: dict[str, Any]) -> None:
    strategies = {o["strategy"] for o in at_16k["outcomes"]}
    assert strategies == {"abridged", "none", "langchain", "claude-code", "sliding-window"}
    for outcome in at_16k["outcomes"]:
        if outcome["applicable"]:
            assert outcome["requests"] > 0
            assert 0.0 <= outcome["facts_final"] <= 1.0
            assert outcome["billed"] > 0
            assert outcome["cache_read"] + outcome["cache_written"] <= outcome["input_tokens"]
    assert {t["strategy"] for t in at_16k["totals"]} == strategies


def test_abridged_keeps_the_facts_of_sessions_unlike_the_shared_ones(
    at_16k: dict[str, Any],
) -> None:
    by = {(Path(o["transcript"]).stem, o["strategy"]): o for o in at_16k["outcomes"]}
    for name in ("coding", "research"):
        ours = by[name, "abridged"]
        assert ours["compactions"] > 0, "the session should need compacting at 16k"
        assert ours["facts_final"] >= 0.95
        for reference in ("langchain", "claude-code", "sliding-window"):
            assert ours["facts_final"] >= by[name, reference]["facts_final"]
        assert ours["summarizer_calls"] <= ours["compactions"]
        assert ours["repeated_compactions"] == 0
        assert ours["not_sent"] == 0


def test_facts_are_kept_by_kind_at_least_as_the_references_keep_them_with_a_recent_tail(
    at_16k: dict[str, Any],
) -> None:
    by = {(Path(o["transcript"]).stem, o["strategy"]): o for o in at_16k["outcomes"]}
    for name in ("coding", "research", "openai", "parallel", "support"):
        ours = by[name, "abridged"]
        assert ours["facts_final_by_kind"], "every strategy reports its facts by kind"
        for reference in ("langchain", "claude-code", "sliding-window"):
            theirs = by[name, reference]["facts_final_by_kind"]
            for kind, share in theirs.items():
                assert ours["facts_final_by_kind"][kind] >= share, (name, reference, kind)
        # The working context: never fewer last messages whole than the rule keeps.
        assert ours["short_tails"] == 0, name
        assert ours["recent_depth_min"] >= 1


def test_abridged_is_billed_less_than_the_summarizing_references(at_16k: dict[str, Any]) -> None:
    totals = {t["strategy"]: t for t in at_16k["totals"]}
    for reference in ("langchain", "claude-code", "sliding-window"):
        assert totals["abridged"]["billed"] < totals[reference]["billed"]


def test_compared_settings_run_side_by_side_and_rates_change_the_bill(
    generated: list[Path],
) -> None:
    cheap = simulate(
        str(generated[1]),
        "--window",
        "16000",
        "--references",
        "",
        "--compare",
        "late:default,threshold_ratio=0.8",
        "--write-rate",
        "1.0",
        "--read-rate",
        "1.0",
    )
    outcomes = {o["strategy"]: o for o in cheap["outcomes"]}
    assert set(outcomes) == {"abridged", "late"}
    # With every token priced alike, the bill is the input itself.
    for outcome in outcomes.values():
        assert outcome["billed"] == pytest.approx(outcome["input_tokens"])


def test_the_table_has_a_row_per_transcript_and_strategy_and_totals(
    generated: list[Path],
) -> None:
    result = CliRunner().invoke(
        main, ["simulate", str(generated[1]), "--window", "16000", "--references", "langchain"]
    )

    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith(("research", "TOTAL"))]
    assert [row.split()[1] for row in rows[:2]] == ["abridged", "langchain"]
    assert any(row.startswith("TOTAL") for row in rows)


def test_bad_input_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n", encoding="utf-8")

    result = CliRunner().invoke(main, ["simulate", str(broken), "--window", "16000"])
    fine = write_jsonl(research_session(seed=1, questions=1), tmp_path / "fine.jsonl")
    unknown = CliRunner().invoke(
        main, ["simulate", str(fine), "--window", "16000", "--references", "magic"]
    )

    assert result.exit_code == 1
    assert "broken.jsonl line 1" in result.output
    assert "Traceback" not in result.output
    assert unknown.exit_code == 2
    assert "unknown reference 'magic'" in unknown.output


def test_a_conversation_no_session_accepts_is_named_and_the_others_are_simulated(
    tmp_path: Path,
) -> None:
    fine = write_jsonl(research_session(seed=1, questions=1), tmp_path / "fine.jsonl")
    orphan = tmp_path / "orphan.jsonl"
    result_block = {"type": "tool_result", "tool_use_id": "toolu_9", "content": "?"}
    orphan.write_text(
        '{"role": "user", "content": "Hello"}\n\n'
        '{"role": "assistant", "content": "Done."}\n'
        + json.dumps({"role": "user", "content": [result_block]})
        + "\n",
        encoding="utf-8",
    )

    result = CliRunner().invoke(
        main, ["simulate", str(fine), str(orphan), "--window", "16000", "--json"]
    )

    assert result.exit_code == 1
    assert "Error: not read: " in result.stderr
    assert "orphan.jsonl line 4: tool_result for toolu_9 answers no tool_use" in result.stderr
    (outcome,) = {o["transcript"] for o in json.loads(result.stdout)["outcomes"]}
    assert outcome.endswith("fine.jsonl")


def test_two_user_messages_in_a_row_are_one_turn_as_the_api_reads_them(tmp_path: Path) -> None:
    doubled = tmp_path / "doubled.jsonl"
    doubled.write_text(
        '{"role": "user", "content": "Hello"}\n\n{"role": "user", "content": "Hello"}\n'
        '{"role": "assistant", "content": "Hi."}\n',
        encoding="utf-8",
    )

    result = CliRunner().invoke(main, ["simulate", str(doubled), "--window", "16000"])

    assert result.exit_code == 0, result.output
    assert "TOTAL" in result.stdout


def test_progress_moves_with_each_request_and_stays_out_of_the_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = research_session(seed=2, questions=2)
    transcript = write_jsonl(session, tmp_path / "long.jsonl")
    requests = sum(m.role.value == "assistant" for m in session)
    bars = recording_bars(monkeypatch)

    options = ["--window", "16000", "--references", "sliding-window", "--json"]
    result = CliRunner().invoke(main, ["simulate", str(transcript), *options])

    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # the bar never writes into the document
    (bar,) = [b for b in bars if b.description == "simulating"]
    assert bar.to_stderr
    assert bar.closed
    # Two runs (abridged, sliding-window), each one step per request, not one per run.
    assert bar.total == 2 * requests
    assert [n for n in bar.updates if n] == [1] * (2 * requests)
    assert bar.descriptions == [
        "simulating run 1/2: long.jsonl abridged",
        "simulating run 2/2: long.jsonl sliding-window",
    ]


def reminders_transcript(folder: Path) -> Path:
    """Twelve turns, each with a system message of 200 words: more than a 3,000 window can
    keep, since system messages are never compacted (line 29 is refused)."""
    records: list[dict[str, Any]] = []
    for k in range(12):
        records.append({"role": "user", "content": f"Task {k}: update key_{k}."})
        reminder = f"Reminder {k}: vendor/ is read-only. " + "word " * 200
        records.append({"role": "system", "content": [{"type": "text", "text": reminder}]})
        records.append({"role": "assistant", "content": [{"type": "text", "text": "Updated."}]})
    (folder / "reminders.meta.json").write_text('{"model": "claude-opus-4-8"}')
    return write_records(records, folder / "reminders.jsonl")


def test_a_message_a_session_refuses_part_way_is_named_by_its_file_and_line(
    tmp_path: Path,
) -> None:
    # `role: "system"` messages are never compacted: twelve of 200 words outgrow a 3,000
    # window part way. The refusal names the transcript and line among the others, as
    # `replay` does, instead of a bare error that could be any of them.
    fine = write_jsonl(research_session(seed=1, questions=1), tmp_path / "fine.jsonl")
    reminders = reminders_transcript(tmp_path)

    result = CliRunner().invoke(
        main,
        ["simulate", str(fine), str(reminders), "--window", "3000", "--format", "abridged"],
    )

    assert result.exit_code == 1
    assert "reminders.jsonl line 29: " in result.output
    assert "the system messages kept in view" in result.output
    assert "Traceback" not in result.output
    # That run stopped there; every other run's figures are out all the same.
    assert "ALL (2)" in result.stdout


def test_a_refused_run_stops_alone_and_says_so_in_the_json(tmp_path: Path) -> None:
    fine = write_jsonl(research_session(seed=1, questions=1), tmp_path / "fine.jsonl")
    reminders = reminders_transcript(tmp_path)
    options = ["--window", "3000", "--format", "abridged", "--references", "langchain", "--json"]

    result = CliRunner().invoke(main, ["simulate", str(reminders), str(fine), *options])

    assert result.exit_code == 1
    outcomes = {(o["transcript"], o["strategy"]): o for o in json.loads(result.stdout)["outcomes"]}
    stopped = outcomes[(str(reminders), "abridged")]
    assert stopped["refused"].startswith(f"{reminders} line 29: ")
    # The requests from the refused message on were never sent; the ones before were.
    assert 0 < stopped["not_sent"] < stopped["requests"] == 12
    assert outcomes[(str(fine), "abridged")]["refused"] is None
    assert outcomes[(str(fine), "abridged")]["requests"] > 0
    assert outcomes[(str(reminders), "langchain")]["refused"] is None


def test_a_folder_glob_names_each_transcripts_metadata_which_is_read_with_it(
    tmp_path: Path,
) -> None:
    # `abridged simulate runs/*` names `X.meta.json` beside `X.jsonl`: it is the transcript's
    # metadata, not a transcript of its own (it was read as one, and refused as bad messages).
    fine = write_jsonl(research_session(seed=1, questions=1), tmp_path / "fine.jsonl")
    (tmp_path / "fine.meta.json").write_text('{"model": "claude-opus-4-8"}')
    alone = tmp_path / "orphan.meta.json"
    alone.write_text('{"model": "claude-opus-4-8"}')
    given = [str(p) for p in sorted(tmp_path.iterdir())]

    result = CliRunner().invoke(main, ["simulate", *given, "--window", "16000", "--json"])

    assert "fine.meta.json: the metadata of a transcript given" in result.stderr
    # A metadata file with no transcript given beside it is read as a transcript, and named.
    assert "orphan.meta.json" in result.stderr
    assert result.exit_code == 1
    outcomes = json.loads(result.stdout)["outcomes"]
    assert {o["transcript"] for o in outcomes} == {str(fine)}


def test_a_system_message_of_its_own_fields_only_is_simulated_for_every_strategy(
    tmp_path: Path,
) -> None:
    # `{"role": "system", "output_config": {...}}` has no content (SDK
    # `BetaSystemMessageParam`): every strategy sends it and is measured, none fails on it.
    records: list[dict[str, object]] = [
        {"role": "user", "content": "Which port does the gateway use?"},
        {"role": "system", "output_config": {"effort": "low"}},
        {"role": "assistant", "content": "8080."},
        {"role": "user", "content": "And the worker?"},
        {"role": "system", "content": "Answer in one word.", "clear_at": "next_user_message"},
        {"role": "assistant", "content": "9090."},
    ]
    (tmp_path / "fields.meta.json").write_text('{"model": "claude-opus-4-8"}')
    path = write_records(records, tmp_path / "fields.jsonl")

    result = CliRunner().invoke(main, ["simulate", str(path), "--window", "16000", "--json"])

    assert result.exit_code == 0, result.output
    outcomes = json.loads(result.stdout)["outcomes"]
    assert {o["strategy"] for o in outcomes} >= {"abridged", "langchain", "none"}
    assert all(o["requests"] == 2 and o["not_sent"] == 0 for o in outcomes)


def test_a_transcript_with_no_request_to_make_counts_in_no_total(tmp_path: Path) -> None:
    # A log of only its first prompt read as keeping every fact, whole tails and all,
    # and lifted the totals of the transcripts run with it.
    prompt_only = tmp_path / "prompt-only.jsonl"
    write_records([{"role": "user", "content": "Fix the parser: see `lexer.py`."}], prompt_only)
    turn = tmp_path / "turn.jsonl"
    write_records(
        [
            {"role": "user", "content": "Fix the parser: see `lexer.py`."},
            {"role": "assistant", "content": "Fixed in `lexer.py`."},
        ],
        turn,
    )

    document = simulate(
        str(prompt_only), str(turn), "--window", "4000", "--references", "langchain"
    )

    for o in document["outcomes"]:
        if Path(o["transcript"]).name == "prompt-only.jsonl":
            assert o["applicable"] is False
            assert o["not_applicable"] == "no request to make"
    assert {t["strategy"]: t["transcripts"] for t in document["totals"]} == {
        "abridged": 1,
        "langchain": 1,
    }
    table = CliRunner().invoke(main, ["simulate", str(prompt_only), "--window", "4000"])
    assert "(no request to make: not applicable)" in table.stdout


def test_the_json_holds_what_the_import_noted_and_what_it_could_not_read(tmp_path: Path) -> None:
    # The notes went to standard error only: a report kept as JSON lost what was left out.
    skipped = tmp_path / "skipped.jsonl"
    write_records(
        [
            {"role": "assistant", "content": "Picking up where we left off."},
            {"role": "user", "content": "Fix the parser."},
            {"role": "assistant", "content": "Fixed."},
        ],
        skipped,
    )
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"role": "user"\n', encoding="utf-8")

    result = CliRunner().invoke(
        main, ["simulate", str(skipped), str(broken), "--window", "4000", "--json"]
    )

    document = json.loads(result.stdout)
    assert result.exit_code == 1  # one transcript was not read
    assert [str(skipped)] == list(document["notes"])
    assert "assistant message before the first user message" in document["notes"][str(skipped)][0]
    assert len(document["unread"]) == 1
    assert str(broken) in document["unread"][0]
