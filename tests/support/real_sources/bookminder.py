"""Claude Code console captures (BookMinder's `claude-dev-log-diary/day-NNN.md`) as transcripts.

    python -m tests.support.real_sources.bookminder MIRROR_GIT_DIR OUT_DIR
        [--days 2 3 ...] [--lines A-B] [--no-split] [--commit C] [--min-assistant N]

Reads each day with `git show COMMIT:claude-dev-log-diary/day-NNN.md`, cuts it into sessions
(a new launch's welcome box, a `Previous Conversation Compacted` marker, a `/clear`) unless
`--no-split`, and writes `day-NNN-LINES.jsonl` with its `.meta.json` per session that holds
at least `--min-assistant` assistant messages. The console is read heuristically:

- `> ` starts a prompt, `⏺ ` the agent's text or a tool call, `  ⎿ ` a tool's output (or,
  after no call, the user's note: a rejected plan, an interruption), `✻ Thinking…`
  displayed thinking. Indented lines continue the item, and so does any line of a call
  whose input has not closed yet (a commit message); other lines at the margin (banners,
  boxes, cost reports) are interface and dropped.
- A call `⏺ Label(args)` takes the tool name the label shows (Update→Edit, Update
  Todos→TodoWrite, Search→Grep, List→LS, ...); its input is the console's one line,
  `{"command": ...}` for Bash and `{"args": ...}` otherwise. Its outputs (after any
  `Waiting…`) are its result as shown, elisions kept; no output gives an empty result.
- Thinking has no signature: it goes to meta (`unsigned_thinking`), not the messages.
- After a compaction the summary line and the files it re-read open the session as the
  user's message; a session's leading agent messages with no prompt before them are dropped.

Messages of the same role in a row are merged, so the result alternates and every call is
answered by the next message. Captures of another CLI (a `gemini` banner, `✦` replies) hold
no Claude Code session and give nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

COMMIT = "451791e291c7635cc77e2256163847e946546eb5"
REPO = "palimondo/BookMinder"
DIARY = "claude-dev-log-diary"

LABELS: dict[str, str] = {
    "Update Todos": "TodoWrite",
    "Read Todos": "TodoRead",
    "Update": "Edit",
    "Search": "Grep",
    "List": "LS",
    "Fetch": "WebFetch",
    "Web Search": "WebSearch",
}
"""Console display labels whose tool name differs; other labels are the name."""
KNOWN = {"Bash", "Read", "Write", "Edit", "MultiEdit", "Task", "Call", "Grep", "Glob", "LS"}
KNOWN |= set(LABELS) | {"WebFetch", "WebSearch", "NotebookRead", "NotebookEdit"}
NO_ARGS = {"Update Todos", "Read Todos"}

CALL = re.compile(r"(?P<label>[A-Z][A-Za-z]*(?: [A-Z][a-z]+)?)\((?P<args>.*)\)…?\s*", re.DOTALL)
COMPACTED = re.compile(r"=+ Previous Conversation Compacted")
WELCOME = re.compile(r"│ ✻ Welcome to Claude Code")
PENDING = {"Waiting…", "Running…"}
UI_INDENTED = re.compile(r"\s+(\? for shortcuts|⏵⏵ |※ Tip)")


@attrs.define
class Item:
    """One console item: its kind (`user`, `agent`, `out`, `think`) and its lines."""

    kind: str
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines).rstrip()


@attrs.define
class Session:
    """One converted session and what its meta records."""

    first_line: int
    last_line: int
    messages: list[dict[str, Any]] = attrs.field(factory=list)
    thinking: list[dict[str, Any]] = attrs.field(factory=list)
    empty_results: int = 0
    ui_dropped: int = 0
    leading_dropped: int = 0
    compaction_markers: list[int] = attrs.field(factory=list)


def items(lines: Sequence[str]) -> tuple[list[Item], int, list[int]]:
    """The console items of `lines`, the count of interface lines dropped, and the indexes
    (into the items) before which a compaction marker stood."""
    found: list[Item] = []
    dropped = 0
    markers: list[int] = []
    current: Item | None = None
    for raw in lines:
        # Some captures indent with no-break spaces (`\xa0\xa0⎿\xa0`): the margin is read as spaces.
        indent = len(raw) - len(raw.lstrip("\xa0 "))
        line = raw[:indent].replace("\xa0", " ") + raw[indent:]
        if line.startswith("> ") or line == ">":
            current = Item("user", [line[2:]])
        elif line.startswith("⏺ "):
            current = Item("agent", [line[2:]])
        elif line.startswith("✻ Thinking"):
            current = Item("think", [])
        elif line.startswith("  ⎿"):
            current = Item("out", [line[3:].lstrip()])
        elif (not line or line[0].isspace()) and not UI_INDENTED.match(line):
            if current is not None:
                current.lines.append(line)
            elif line.strip():
                dropped += 1
            continue
        elif current is not None and _open_call(current):
            current.lines.append(line)  # a call's input of several lines (a commit message)
            continue
        else:
            if COMPACTED.match(line):
                markers.append(len(found))
            current = None
            dropped += bool(line.strip())
            continue
        found.append(current)
    return found, dropped, markers


def _open_call(item: Item) -> bool:
    """Whether `item` shows a tool call whose input has not closed yet."""
    if item.kind != "agent":
        return False
    head = re.match(r"([A-Z][A-Za-z]*(?: [A-Z][a-z]+)?)\(", item.lines[0])
    if head is None or head.group(1) not in KNOWN:
        return False
    return not re.search(r"\)…?\s*$", "\n".join(item.lines))


def parse_call(text: str) -> tuple[str, dict[str, str]] | None:
    """The tool name and input of an agent item that shows a tool call, else None."""
    first = text.split("\n", 1)[0].strip()
    if first in NO_ARGS:
        return LABELS[first], {"args": ""}
    match = CALL.fullmatch(text.strip())
    if match is None or match.group("label") not in KNOWN:
        return None
    label = match.group("label")
    args = match.group("args").strip()
    name = LABELS.get(label, label).replace(" ", "")
    return name, ({"command": args} if name == "Bash" else {"args": args})


def convert(lines: Sequence[str], first_line: int, next_id: list[int]) -> Session:
    """One session from its console lines (`first_line` is the first's number in the file);
    `next_id` holds the next tool call number, shared by the sessions of one run."""
    found, dropped, markers = items(lines)
    session = Session(first_line, first_line + len(lines) - 1, ui_dropped=dropped)
    messages = session.messages

    def add(role: str, block: dict[str, Any]) -> None:
        if block.get("type") == "text" and not block["text"].strip():
            return
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})

    index = 0
    while index < len(found):
        if index in markers:
            session.compaction_markers.append(len(messages))
        item = found[index]
        index += 1
        if item.kind == "think":
            text = item.text.strip("\n")
            if text.strip():
                session.thinking.append({"before_message_index": len(messages), "thinking": text})
            continue
        if item.kind == "user":
            add("user", {"type": "text", "text": item.text})
            continue
        if item.kind == "out":
            if item.text not in PENDING:
                add("user", {"type": "text", "text": item.text})
            continue
        if item.text.startswith("Compact summary"):
            add("user", {"type": "text", "text": item.text})
            continue
        call = parse_call(item.text)
        if call is None:
            add("assistant", {"type": "text", "text": item.text})
            continue
        call_id = f"toolu_cc_{next_id[0]:05d}"
        next_id[0] += 1
        add("assistant", {"type": "tool_use", "id": call_id, "name": call[0], "input": call[1]})
        outputs = []
        while index < len(found) and found[index].kind == "out" and index not in markers:
            if found[index].text not in PENDING:
                outputs.append(found[index].text)
            index += 1
        session.empty_results += not outputs
        result = {"type": "tool_result", "tool_use_id": call_id, "content": "\n".join(outputs)}
        messages.append({"role": "user", "content": [result]})
    _drop_unprompted(session)
    return session


def _drop_unprompted(session: Session) -> None:
    """Drops the leading messages no prompt came before: agent messages, and results whose
    call was before the capture (or the cut) began."""
    messages = session.messages
    while messages:
        first = messages[0]
        if first["role"] == "user":
            first["content"] = [b for b in first["content"] if b["type"] != "tool_result"]
            if first["content"]:
                return
        messages.pop(0)
        session.leading_dropped += 1
        session.thinking = [
            {**t, "before_message_index": t["before_message_index"] - 1} for t in session.thinking
        ]


def problems(messages: Sequence[dict[str, Any]]) -> list[str]:
    """What makes `messages` not a valid alternating Messages sequence (empty when valid)."""
    found = []
    ids: set[str] = set()
    for number, message in enumerate(messages):
        expected = "user" if number % 2 == 0 else "assistant"
        if message["role"] != expected:
            found.append(f"message {number}: {message['role']} where {expected} was due")
        results = {b["tool_use_id"] for b in message["content"] if b["type"] == "tool_result"}
        before = messages[number - 1]["content"] if number else []
        if not results <= {b["id"] for b in before if b["type"] == "tool_use"}:
            found.append(f"message {number}: a result answers no call of the message before")
        calls = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if ids & set(calls) or len(set(calls)) < len(calls):
            found.append(f"message {number}: a tool_use id used twice")
        ids |= set(calls)
        if calls:
            answer = messages[number + 1]["content"] if number + 1 < len(messages) else []
            answered = {b["tool_use_id"] for b in answer if b["type"] == "tool_result"}
            if answered != set(calls):
                found.append(f"message {number}: calls not answered by the next message")
    return found


def cuts(lines: Sequence[str], split: bool) -> list[int]:
    """The indexes where a new session starts: a launch's welcome box, a compaction marker,
    a `/clear`."""
    if not split:
        return [0]
    starts = [0]
    for number, line in enumerate(lines):
        if WELCOME.match(line) or COMPACTED.match(line) or line.rstrip() == "> /clear":
            start = number
            if WELCOME.match(line):
                # The box's top border, and the command that launched it (`claude --model
                # opus`) when it stands right above at the margin.
                start = max(0, number - 1)
                if start and lines[start - 1][:1].isalpha():
                    start -= 1
            if start > starts[-1]:
                starts.append(start)
    return starts


def is_other_cli(lines: Sequence[str]) -> bool:
    """Whether the capture is of another CLI (Gemini's banner, no Claude Code welcome)."""
    head = [line.strip() for line in lines[:5]]
    return "gemini" in head and not any(WELCOME.match(line) for line in lines)


def show(mirror: str, commit: str, day: int) -> list[str]:
    """The lines of one day's capture, read from the git directory `mirror`."""
    path = f"{commit}:{DIARY}/day-{day:03d}.md"
    out = subprocess.run(["git", "-C", mirror, "show", path], capture_output=True, check=True)
    return out.stdout.decode("utf-8", errors="replace").split("\n")


def write(session: Session, out: Path, name: str, day: int, commit: str) -> dict[str, Any]:
    """Writes `name.jsonl` and `name.meta.json`; returns the meta."""
    body = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in session.messages)
    (out / f"{name}.jsonl").write_text(body, encoding="utf-8")
    results = [b for m in session.messages for b in m["content"] if b["type"] == "tool_result"]
    meta = {
        "format": "Claude Code console transcript (heuristic parse)",
        "model": None,
        "source": {
            "repo": REPO,
            "commit": commit,
            "path": f"{DIARY}/day-{day:03d}.md",
            "lines": f"{session.first_line}-{session.last_line}",
            "license": "MIT",
        },
        "display_label_to_tool_name": LABELS,
        "unsigned_thinking": session.thinking,
        "compaction_boundaries": session.compaction_markers,
        "synthesized_empty_tool_results": session.empty_results,
        "ui_lines_dropped": session.ui_dropped,
        "leading_agent_messages_dropped": session.leading_dropped,
        "stats": {
            "messages": len(session.messages),
            "chars_jsonl": len(body),
            "tool_use_blocks": len(results),
            "largest_tool_result_chars": max((len(b["content"]) for b in results), default=0),
        },
    }
    (out / f"{name}.meta.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1))
    return meta


def convert_day(lines: Sequence[str], first: int, split: bool, next_id: list[int]) -> list[Session]:
    """The sessions of `lines` (the first being line `first` of the file)."""
    starts = cuts(lines, split)
    ends = [*starts[1:], len(lines)]
    return [convert(lines[a:b], first + a, next_id) for a, b in zip(starts, ends, strict=True)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("mirror")
    parser.add_argument("out")
    parser.add_argument("--days", type=int, nargs="+", default=list(range(1, 22)))
    parser.add_argument("--lines", help="A-B: only these lines (1-based, inclusive)")
    parser.add_argument("--no-split", action="store_true")
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--min-assistant", type=int, default=10)
    options = parser.parse_args(argv)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for day in options.days:
        lines = show(options.mirror, options.commit, day)
        first, last = 1, len(lines)
        if options.lines:
            first, last = (int(part) for part in options.lines.split("-"))
        if is_other_cli(lines):
            print(f"day-{day:03d}: another CLI's capture, skipped")
            continue
        next_id = [1]
        for session in convert_day(lines[first - 1 : last], first, not options.no_split, next_id):
            replies = sum(m["role"] == "assistant" for m in session.messages)
            name = f"day-{day:03d}-{session.first_line}-{session.last_line}"
            if replies < options.min_assistant:
                print(f"{name}: {replies} assistant messages, skipped")
                continue
            wrong = problems(session.messages)
            failed += bool(wrong)
            meta = write(session, out, name, day, options.commit)
            flag = f" INVALID {wrong[:3]}" if wrong else ""
            print(f"{name}: {json.dumps(meta['stats'])}{flag}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
