"""The BookMinder console converter (`tests.support.real_sources.bookminder`) on a small
capture written here: prompts, calls and their outputs become an alternating Messages
sequence, thinking goes to meta, and a capture is cut into sessions where the console shows
a new launch, a compaction or a `/clear`. No copy of the source is needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abridged.adapters.transcripts import load_transcript
from tests.support.real_sources import bookminder
from tests.support.real_sources.bookminder import convert_day, problems

WELCOME = """claude
╭───────────────────────────────────────────────────╮
│ ✻ Welcome to Claude Code!                         │
│                                                   │
│   cwd: /Users/someone/Developer/Project           │
╰───────────────────────────────────────────────────╯
"""

FIRST = (
    WELCOME
    + """
 ※ Tip: Hit shift+tab to cycle between modes

> /hi is running…
  ⎿  Read TODO.md (39 lines)

⏺ Update Todos
  ⎿  ☐ Run the tests
     ☐ Read the spec

⏺ Let me run the tests:

⏺ Bash(source .venv/bin/activate && pytest)
  ⎿  Waiting…

  ⎿  ============================= test session starts ==============================
     platform darwin -- Python 3.13.3
     … +8 lines (ctrl+r to expand)

✻ Thinking…

  The tests pass, so the next step is the spec.

⏺ Read(specs/library_spec.py)

⏺ Here is my plan.

  ⎿  User rejected Claude's plan:
     │ Step 1 │

> do it step by step

⏺ Bash(git commit -m "test: add specs

- first line of the body at the margin
- second line")
  ⎿  [main 2859fad] test: add specs
      1 file changed, 13 insertions(+)

⏺ Update(specs/library_spec.py)
  ⎿  Updated specs/library_spec.py with 1 addition
       1 +  import pytest

⏺ Search(pattern: "TODO", path: "specs")
\xa0\xa0⎿\xa0 Found 2 files

================================ Previous Conversation Compacted ================================
⏺ Compact summary (ctrl+r to expand)
  ⎿  Read TODO.md (39 lines)

> /compact
  ⎿  Compacted. ctrl+r to see full summary

> carry on

⏺ List(specs)
  ⎿  Listed 3 paths (ctrl+r to expand)

⏺ Done.

Total cost:            $1.00
"""
)

SECOND = (
    WELCOME
    + """
⏺ An answer to a prompt the capture does not show.

⏺ Bash(ls)
  ⎿  README.md

> /clear

> what next?

⏺ Nothing.
"""
)


def sessions(text: str) -> list[bookminder.Session]:
    return convert_day(text.split("\n"), 1, split=True, next_id=[1])


def test_a_capture_becomes_alternating_messages_with_console_tool_names() -> None:
    first = sessions(FIRST)[0]
    messages = first.messages
    assert problems(messages) == []
    assert messages[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "/hi is running…"},
            {"type": "text", "text": "Read TODO.md (39 lines)"},
        ],
    }
    calls = [b for m in messages for b in m["content"] if b["type"] == "tool_use"]
    assert [c["name"] for c in calls] == ["TodoWrite", "Bash", "Read", "Bash", "Edit", "Grep"]
    assert calls[0]["input"] == {"args": ""}
    assert calls[1]["input"] == {"command": "source .venv/bin/activate && pytest"}
    assert calls[4]["input"] == {"args": "specs/library_spec.py"}
    assert len({c["id"] for c in calls}) == len(calls)
    results = {
        b["tool_use_id"]: b["content"]
        for m in messages
        for b in m["content"]
        if b["type"] == "tool_result"
    }
    # `Waiting…` is not an output; the elision is kept as shown; no output, an empty result.
    assert results[calls[1]["id"]].startswith("============================= test session")
    assert "… +8 lines (ctrl+r to expand)" in results[calls[1]["id"]]
    assert results[calls[2]["id"]] == ""
    assert results[calls[5]["id"]] == "Found 2 files"  # indented with no-break spaces
    assert first.empty_results == 1


def test_a_call_of_several_lines_keeps_its_lines_at_the_margin_and_its_output() -> None:
    messages = sessions(FIRST)[0].messages
    commit = next(
        b for m in messages for b in m["content"] if b.get("name") == "Bash" and "commit" in str(b)
    )
    assert commit["input"]["command"].endswith(
        '- first line of the body at the margin\n- second line"'
    )
    answer = next(
        b["content"] for m in messages for b in m["content"] if b.get("tool_use_id") == commit["id"]
    )
    assert answer.startswith("[main 2859fad]")


def test_thinking_goes_to_meta_and_a_note_under_no_call_is_the_users() -> None:
    first = sessions(FIRST)[0]
    assert first.thinking == [
        {
            "before_message_index": 5,
            "thinking": "  The tests pass, so the next step is the spec.",
        }
    ]
    text = json.dumps(first.messages, ensure_ascii=False)
    assert "Thinking" not in text
    assert "The tests pass" not in text
    rejected = next(
        m for m in first.messages if "User rejected" in json.dumps(m, ensure_ascii=False)
    )
    assert rejected["role"] == "user"
    assert first.ui_dropped >= 6  # the launch line, the welcome box, the tip


def test_a_capture_is_cut_at_compactions_launches_and_clears() -> None:
    cut = sessions(FIRST + SECOND)
    assert [(s.first_line, s.last_line) for s in cut] == [(1, 52), (53, 67), (68, 79), (80, 85)]
    after = cut[1]
    assert after.messages[0]["role"] == "user"
    assert after.messages[0]["content"][0]["text"] == "Compact summary (ctrl+r to expand)"
    assert "carry on" in json.dumps(after.messages[0])
    assert problems(after.messages) == []
    # The session whose prompt is not in the capture starts at its first prompt: the
    # agent's messages before it, and the results of their calls, are dropped.
    unprompted = cut[2]
    assert unprompted.messages == []
    assert unprompted.leading_dropped == 2  # a text and a call, then its result
    assert cut[3].messages[0]["content"][0]["text"] == "/clear"


def test_written_sessions_load_as_transcripts_with_their_provenance(tmp_path: Path) -> None:
    first = sessions(FIRST)[0]
    meta = bookminder.write(first, tmp_path, "day-009-1-52", 9, bookminder.COMMIT)
    transcript = load_transcript(tmp_path / "day-009-1-52.jsonl")
    assert len(transcript.messages) == len(first.messages)
    assert {t["name"] for t in transcript.tools} >= {"Bash", "TodoWrite", "Edit", "Grep"}
    stored = json.loads((tmp_path / "day-009-1-52.meta.json").read_text())
    assert stored == meta
    assert stored["source"]["path"] == "claude-dev-log-diary/day-009.md"
    assert stored["source"]["lines"] == "1-52"
    assert stored["model"] is None
    assert stored["unsigned_thinking"] == first.thinking


def test_problems_names_what_breaks_the_sequence() -> None:
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    assert problems(
        [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [call]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ]
    ) == [
        "message 1: calls not answered by the next message",
        "message 2: assistant where user was due",
    ]
    orphan = {"type": "tool_result", "tool_use_id": "t9", "content": ""}
    assert problems([{"role": "user", "content": [orphan]}]) == [
        "message 0: a result answers no call of the message before"
    ]


@pytest.mark.parametrize(
    ("head", "other"),
    [("gemini\n\n ███ banner", True), (WELCOME, False), ("gemini\n" + WELCOME, False)],
)
def test_another_clis_capture_is_recognised(head: str, other: bool) -> None:
    assert bookminder.is_other_cli(head.split("\n")) is other


def test_main_converts_the_days_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    days = {9: FIRST + SECOND, 11: "gemini\n\n✦ hello\n"}
    monkeypatch.setattr(bookminder, "show", lambda mirror, commit, day: days[day].split("\n"))
    status = bookminder.main(["MIRROR", str(tmp_path), "--days", "9", "11", "--min-assistant", "2"])
    assert status == 0
    written = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    assert written == ["day-009-1-52.jsonl", "day-009-53-67.jsonl"]
    out = capsys.readouterr().out
    assert "day-011: another CLI's capture, skipped" in out
    assert "day-009-68-79: 0 assistant messages, skipped" in out
