"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`) read as the
conversation the model was sent.

A log has one entry a line. What the model saw, and how the log writes it:

- A reply is streamed as one `assistant` entry per content block, all with the reply's
  `message.id`. A reply of parallel calls runs each call as its block streams, so a call's
  result (a `user` entry of one `tool_result`) can be written before the reply's next block:
  the blocks are regrouped into one reply across the results written between them, and the
  results follow it as one user message. Each entry's blocks are kept, two equal ones too;
  an entry written again (a `uuid` read already) is read once, with a note.
- A rewind, or an edited prompt, writes the new prompt with the `parentUuid` of the entry it
  goes on from: the branch after that entry is left out, with a note.
- `isMeta` user entries are hidden on the user's screen, not from the model: a skill's or a
  slash command's expanded prompt, Stop-hook feedback, a hook's reminder, the caveat before a
  local command's output. They are kept.
- A compaction writes a `compact_boundary` entry, then Claude Code's summary as a user entry
  (`isCompactSummary`). The history before it is kept, so the summary is left out (with a
  note), but for a log that starts with it: there it is all that is known of what came before.
- A sub-agent's own log (`<session>/subagents/agent-*.jsonl`) is all `isSidechain` entries:
  read as its conversation. In a main log, sidechain entries are another agent's and skipped.
- API-error placeholders (`isApiErrorMessage`, model `<synthetic>`) and bookkeeping entries
  (`progress`, `attachment`, `summary`, snapshots, queue operations, system notices with no
  message) are skipped; `role: "system"` messages are kept.

Then `abridged.adapters.importers.normalize` makes a valid conversation of it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping

from abridged.adapters.importers import FormatError, Imported, normalize
from abridged.adapters.recorded import is_result
from abridged.domain.messages import JSON

Record = tuple[int, str, list[JSON], "str | None"]
"""A log entry kept: its line, role, blocks and (for a reply) the `message.id`."""


def import_claude_code(records: Iterable[tuple[int, JSON]], notes: Iterable[str] = ()) -> Imported:
    """A Claude Code session log's main conversation (a sub-agent's, for a sub-agent's own
    log); raises `FormatError`."""
    notes = list(notes)
    main: list[tuple[int, Mapping[str, JSON]]] = []
    sidechain: list[tuple[int, Mapping[str, JSON]]] = []
    model = None
    synthetic = 0
    seen: set[str] = set()
    again = 0
    lines: dict[str, int] = {}
    """The line of each entry with a uuid, bookkeeping too: what a `parentUuid` names."""
    boundaries: list[int] = []
    for number, entry in records:
        if not isinstance(entry, Mapping):
            raise FormatError(number, "a Claude Code log entry must be a JSON object")
        uuid = entry.get("uuid")
        if isinstance(uuid, str):
            lines.setdefault(uuid, number)
        if entry.get("subtype") == "compact_boundary":
            boundaries.append(number)
        if isinstance(uuid, str) and entry.get("type") in ("user", "assistant", "system"):
            # An entry is one record of the conversation, whatever its blocks: one written
            # again (its uuid read already) is the same record, not another turn.
            if uuid in seen:
                again += 1
                continue
            seen.add(uuid)
        kind = entry.get("type")
        message = entry.get("message")
        if kind == "system" and _is_system_message(message):
            # An instruction the host sent mid-conversation (`role: "system"`), not one of
            # the log's own notices, which have no message.
            main.append((number, entry))
            continue
        if kind not in ("user", "assistant"):
            continue
        if entry.get("isApiErrorMessage"):
            synthetic += 1
            continue
        if not isinstance(message, Mapping):
            raise FormatError(number, f"a {kind} entry needs its 'message' object")
        if message.get("model") == "<synthetic>":
            synthetic += 1
            continue
        if kind == "assistant" and model is None and isinstance(message.get("model"), str):
            model = message["model"]
        (sidechain if entry.get("isSidechain") else main).append((number, entry))
    entries = _conversation(main, sidechain, notes)
    if synthetic:
        notes.append(f"{synthetic} synthetic API-error entries skipped")
    if again:
        notes.append(f"{again} entries written again (a uuid already read) skipped")
    raw = _regrouped(_rewound(entries, lines, boundaries, notes), notes)
    return normalize([(n, role, blocks) for n, role, blocks, _ in raw], model=model, notes=notes)


def _conversation(
    main: list[tuple[int, Mapping[str, JSON]]],
    sidechain: list[tuple[int, Mapping[str, JSON]]],
    notes: list[str],
) -> list[tuple[int, Mapping[str, JSON]]]:
    """The main entries, or a sub-agent's own log's (all sidechain)."""
    if not any(entry.get("type") != "system" for _, entry in main) and sidechain:
        notes.append("a sub-agent's log: its sidechain entries are read as the conversation")
        return sidechain
    if sidechain:
        notes.append(f"{len(sidechain)} sidechain (sub-agent) entries skipped")
    return main


def _rewound(
    entries: list[tuple[int, Mapping[str, JSON]]],
    lines: Mapping[str, int],
    boundaries: list[int],
    notes: list[str],
) -> list[tuple[int, Mapping[str, JSON]]]:
    """`entries` without the branches the log left: a prompt whose `parentUuid` names an
    earlier entry than the last (the user rewound, or edited a prompt: null, for the first)
    goes on from that entry, and the entries written after it are a branch the model no
    longer sees in that conversation. The log goes on from the last branch, so it is kept."""
    kept: list[tuple[int, Mapping[str, JSON]]] = []
    for number, entry in entries:
        parent = entry.get("parentUuid", "")
        if entry.get("type") == "user" and _prompt(entry) and kept:
            if parent is None:
                # A new root, but for the first prompt after a compaction's boundary.
                start = -1 if any(kept[-1][0] < b < number for b in boundaries) else 0
            else:
                start = lines.get(parent, -1) if isinstance(parent, str) else -1
            if start >= 0 and kept[-1][0] > start:
                cut = bisect_right(kept, start, key=lambda kept_entry: kept_entry[0])
                left = [n for n, _ in kept[cut:]]
                notes.append(
                    f"line {number}: the log goes on from an earlier entry (a rewind or an "
                    f"edited prompt); the branch it left, lines {left[0]}-{left[-1]} "
                    f"({len(left)} entries), is left out"
                )
                del kept[cut:]
        kept.append((number, entry))
    return kept


def _prompt(entry: Mapping[str, JSON]) -> bool:
    """Whether a user entry holds more than tool results (which answer calls, not prompts)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return not isinstance(content, list) or not content or not all(is_result(b) for b in content)


def _regrouped(entries: list[tuple[int, Mapping[str, JSON]]], notes: list[str]) -> list[Record]:
    raw: list[Record] = []
    open_reply: int | None = None
    """The index of the last reply while nothing but results of its calls was written after
    it: the reply a next entry with its `message.id` continues."""
    conversation = False
    """Whether a user or assistant entry was read (a compaction summary before any is kept)."""
    for number, entry in entries:
        message = entry["message"]
        assert isinstance(message, Mapping)
        if entry.get("type") == "system":
            raw.append((number, "system", _system_blocks(message), None))
            open_reply = None
            continue
        kind = str(entry["type"])
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise FormatError(number, "message content must be a string or a list of blocks")
        if entry.get("isCompactSummary") and conversation:
            notes.append(
                f"line {number}: Claude Code's compaction summary left out (the history it "
                "summarized is read whole)"
            )
            continue
        message_id = message.get("id") if kind == "assistant" else None
        if open_reply is not None and message_id is not None and raw[open_reply][3] == message_id:
            # Another block of a reply streamed already, maybe after results of its calls.
            raw[open_reply][2].extend(content)
            continue
        raw.append(
            (number, kind, list(content), message_id if isinstance(message_id, str) else None)
        )
        conversation = True
        if kind == "assistant":
            open_reply = len(raw) - 1
        elif not content or not all(is_result(b) for b in content):
            open_reply = None
    return raw


def _is_system_message(message: object) -> bool:
    return isinstance(message, Mapping) and message.get("role") == "system"


def _system_blocks(message: Mapping[str, JSON]) -> list[JSON]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []
