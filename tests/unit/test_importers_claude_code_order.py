"""Claude Code logs whose entries are written out of the conversation's order: a tool result
written before the entry of its call (FundWise claude-session.jsonl lines 226-232: Claude
Code ran the edit as its block streamed and wrote the result first). The result's
`parentUuid` names its call's entry, later in the log; it is read after it."""

from __future__ import annotations

from pathlib import Path

from abridged.adapters.recorded import UNANSWERED
from abridged.adapters.transcripts import load_transcript
from tests.unit.test_importers_real_shapes import RealLog, blocks_of, call, text, wires

EDITED = "The file /w/issues.md has been updated successfully."


def result_before_its_call() -> tuple[RealLog, str]:
    """A commit, then an edit whose result is written before the edit's call; the uuid of
    the edit's result."""
    log = RealLog()
    log.user("update issues.md")
    commit = log.block("msg_A", call("toolu_1", "git commit -m x"))
    log.result("toolu_1", "[main f8e6fe0] x", parent=commit)
    edit = log.block("msg_B", call("toolu_2", "edit issues.md"))
    result = log.result("toolu_2", EDITED, parent=edit)
    log.block("msg_C", text("Done: issues.md updated."))
    log.entries[3], log.entries[4] = log.entries[4], log.entries[3]
    return log, result


def test_a_result_written_before_its_call_is_read_after_it(tmp_path: Path) -> None:
    log, _ = result_before_its_call()

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [w["role"] for w in wires(transcript)] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    results = {b["tool_use_id"]: b for b in blocks_of(transcript, "tool_result")}
    assert results["toolu_2"] == {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": EDITED,
    }
    assert UNANSWERED not in [b["content"] for b in results.values()]
    assert transcript.notes == (
        "1 tool results written before the entry of their call (their `parentUuid` names it, "
        "later in the log) read after it",
    )


def test_a_prompt_going_on_from_such_a_result_is_not_a_rewind(tmp_path: Path) -> None:
    # The user interrupted after the edit: the next prompt's parent is the result, written
    # before the edit's call, which is not a branch the log left.
    log, result = result_before_its_call()
    del log.entries[-1]
    log.add("user", result, message={"role": "user", "content": "now the changelog"})
    log.block("msg_D", text("Updating it."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [b["tool_use_id"] for b in blocks_of(transcript, "tool_result")] == [
        "toolu_1",
        "toolu_2",
    ]
    assert wires(transcript)[-2]["content"][-1] == text("now the changelog")
    assert not any("rewind" in note for note in transcript.notes)


def test_a_result_written_before_its_call_is_left_out_with_its_branch(
    tmp_path: Path,
) -> None:
    # The user rewound to the commit's result: the edit, its result written first, is in
    # the branch the log left.
    log, _ = result_before_its_call()
    commit_result = log.entries[2]["uuid"]
    del log.entries[-1]
    log.add("user", commit_result, message={"role": "user", "content": "no, stop there"})
    log.block("msg_D", text("Stopped."))

    transcript = load_transcript(log.write(tmp_path / "s.jsonl"))

    assert [b["tool_use_id"] for b in blocks_of(transcript, "tool_result")] == ["toolu_1"]
    assert any("is left out" in note for note in transcript.notes)
