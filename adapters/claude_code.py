"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`) read as the
conversation the model was sent.

A log has one entry a line. What the model saw, and how the log writes it:

- A reply is streamed as one `assistant` entry per content block, all with the reply's
  `message.id`. A reply of parallel calls runs each call as its block streams, so a call's
  result (a `user` entry of one `tool_result`) can be written before the reply's next block,
  and so can what Claude Code adds beside it (a hook's context, a prompt queued mid-turn):
  the blocks are regrouped into one reply across what is written between them, and the
  results follow it as one user message. Each entry's blocks are kept, two equal ones too;
  an entry written again (a `uuid` read already) is read once, with a note.
- A rewind, or an edited prompt, writes the new prompt with the `parentUuid` of the entry it
  goes on from: the branch after that entry is left out, with a note.
- A call's result can be written before the entry of its call (run as its block streamed):
  its `parentUuid` names that entry, later in the log, and it is read right after it, with a
  note that counts them.
- `isMeta` user entries are hidden on the user's screen, not from the model: a skill's or a
  slash command's expanded prompt, Stop-hook feedback, a hook's reminder, the caveat before a
  local command's output. They are kept.
- A compaction writes a `compact_boundary` entry, then Claude Code's summary as a user entry
  (`isCompactSummary`). The history before it is kept, so the summary is left out (with a
  note), but for a log that starts with it: there it is all that is known of what came before.
- A sub-agent's own log (`<session>/subagents/agent-*.jsonl`) is all `isSidechain` entries:
  read as its conversation. In a main log, sidechain entries are another agent's and skipped.
- A local command's lines (`/mcp`, `/model` and what they printed: `system` entries of
  subtype `local_command`, their text in `content`) are sent to the model as user text, so
  that it can refer to them later: they are read so, joined to the user message around them.
- A prompt the user typed while the agent worked reaches the model beside the next tool
  results: a `queued_command` attachment entry, read as text (and images) of that user
  message. Claude Code wraps it in a reminder the log does not hold; the user's words are
  read as written. Older logs record such a prompt only as queue operations (`enqueue`, then
  `remove`), which do not say whether the model got it: each queued prompt found in no user
  entry is named in a note, once.
- API-error placeholders (`isApiErrorMessage`, model `<synthetic>`) and bookkeeping entries
  (`progress`, other `attachment`s, `summary`, snapshots, queue operations, system notices with
  no message) are skipped; `role: "system"` messages are kept.

Then `abridged.adapters.importers.normalize` makes a valid conversation of it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping

import attrs

from abridged.adapters.claude_code_attachments import QUEUED, attachment_blocks
from abridged.adapters.importers import FormatError, Imported, normalize
from abridged.adapters.recorded import is_result
from abridged.domain.messages import JSON

Record = tuple[int, str, list[JSON], "str | None"]
"""A log entry kept: its line, role, blocks and (for a reply) the `message.id`."""

READ_AS_USER_TEXT = "abridgedReadAsUserText"
"""The key marking an entry read as user text that is not a prompt (a local command's lines,
a prompt queued mid-turn): a rewind is never read from it."""


def import_claude_code(records: Iterable[tuple[int, JSON]], notes: Iterable[str] = ()) -> Imported:
    """A Claude Code session log's main conversation (a sub-agent's, for a sub-agent's own
    log); raises `FormatError`."""
    notes = list(notes)
    log = _Entries()
    for number, entry in records:
        if not isinstance(entry, Mapping):
            raise FormatError(number, "a Claude Code log entry must be a JSON object")
        log.read(number, entry)
    entries = _conversation(log.main, log.sidechain, notes)
    notes.extend(_read_as_text_notes(log.read_as_text))
    notes.extend(_queued_only(log.queued, entries))
    if len(log.models) > 1:
        later = ", ".join(f"{m} from line {n}" for m, n in list(log.models.items())[1:])
        notes.append(
            f"the replies come from more than one model ({log.model}, then {later}; a /model "
            f"switch): the transcript is replayed on {log.model}"
        )
    if log.synthetic:
        notes.append(f"{log.synthetic} synthetic API-error entries skipped")
    if log.again:
        notes.append(f"{log.again} entries written again (a uuid already read) skipped")
    early = _written_before_calls(entries)
    # A result written before its call stands, for a rewind, where it is read: after it.
    lines = {**log.lines, **{uuid: log.lines[call] for uuid, call in early.items()}}
    kept = _rewound(entries, lines, log.boundaries, notes)
    raw = _regrouped(_after_their_calls(kept, early, notes), notes)
    return normalize(
        [(n, role, blocks) for n, role, blocks, _ in raw],
        model=log.model,
        models=list(log.models),
        notes=notes,
    )


@attrs.define
class _Entries:
    """A log's entries, sorted as they are read: the conversation's (main or sidechain) and
    what the notes and the rewinds need."""

    main: list[tuple[int, Mapping[str, JSON]]] = attrs.field(factory=list)
    sidechain: list[tuple[int, Mapping[str, JSON]]] = attrs.field(factory=list)
    model: str | None = None
    models: dict[str, int] = attrs.field(factory=dict)
    """Each model a reply came from, and the line of its first reply."""
    synthetic: int = 0
    again: int = 0
    seen: set[str] = attrs.field(factory=set)
    lines: dict[str, int] = attrs.field(factory=dict)
    """The line of each entry with a uuid, bookkeeping too: what a `parentUuid` names."""
    boundaries: list[int] = attrs.field(factory=list)
    queued: list[tuple[int, str]] = attrs.field(factory=list)
    """The prompts queue operations hold (`enqueue`), with their lines."""
    read_as_text: dict[str, int] = attrs.field(factory=dict)

    def read(self, number: int, entry: Mapping[str, JSON]) -> None:
        uuid = entry.get("uuid")
        kind = entry.get("type")
        if isinstance(uuid, str):
            self.lines.setdefault(uuid, number)
            if kind in ("user", "assistant", "system", "attachment"):
                # An entry is one record of the conversation, whatever its blocks: one written
                # again (its uuid read already) is the same record, not another turn.
                if uuid in self.seen:
                    self.again += 1
                    return
                self.seen.add(uuid)
        if entry.get("subtype") == "compact_boundary":
            self.boundaries.append(number)
        if kind == "queue-operation":
            # `enqueue`, and `remove` when the prompt is taken (sent, or taken back): a log
            # cut short can hold the one without the other.
            content = entry.get("content")
            if isinstance(content, str) and content.strip():
                self.queued.append((number, content))
            return
        message = entry.get("message")
        text_entry = _user_text_entry(entry)
        if text_entry is not None:
            source = str(text_entry[READ_AS_USER_TEXT])
            self.read_as_text[source] = self.read_as_text.get(source, 0) + 1
            self._keep(number, text_entry)
        elif kind == "system" and _is_system_message(message):
            # An instruction the host sent mid-conversation (`role: "system"`), not one of
            # the log's own notices, which have no message.
            self.main.append((number, entry))
        elif kind in ("user", "assistant"):
            self._conversation_entry(number, entry, str(kind), message)

    def _conversation_entry(
        self, number: int, entry: Mapping[str, JSON], kind: str, message: JSON
    ) -> None:
        if entry.get("isApiErrorMessage"):
            self.synthetic += 1
            return
        if not isinstance(message, Mapping):
            raise FormatError(number, f"a {kind} entry needs its 'message' object")
        if message.get("model") == "<synthetic>":
            self.synthetic += 1
            return
        if kind == "assistant" and isinstance(message.get("model"), str):
            self.models.setdefault(str(message["model"]), number)
            self.model = self.model or str(message["model"])
        self._keep(number, entry)

    def _keep(self, number: int, entry: Mapping[str, JSON]) -> None:
        (self.sidechain if entry.get("isSidechain") else self.main).append((number, entry))


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
    longer sees in that conversation. The log goes on from the last branch, so it is kept.

    A log whose entries name no parent at all (written by another tool, or by hand, with
    every `parentUuid` null) says nothing of branches: it is read in order."""
    kept: list[tuple[int, Mapping[str, JSON]]] = []
    if not any(isinstance(entry.get("parentUuid"), str) for _, entry in entries):
        return list(entries)
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


def _written_before_calls(entries: list[tuple[int, Mapping[str, JSON]]]) -> dict[str, str]:
    """The entries of tool results written before the entry their `parentUuid` names (the
    reply's entry holding their calls, read later in the log: Claude Code ran the call as its
    block streamed, and wrote its result first), each by its uuid, with that parent's."""
    read = {
        entry["uuid"]: number for number, entry in entries if isinstance(entry.get("uuid"), str)
    }
    early: dict[str, str] = {}
    for number, entry in entries:
        uuid, parent = entry.get("uuid"), entry.get("parentUuid")
        if (
            isinstance(uuid, str)
            and isinstance(parent, str)
            and read.get(parent, 0) > number
            and entry.get("type") == "user"
            and not entry.get(READ_AS_USER_TEXT)
            and not _prompt(entry)
        ):
            early[uuid] = parent
    return early


def _after_their_calls(
    entries: list[tuple[int, Mapping[str, JSON]]], early: Mapping[str, str], notes: list[str]
) -> list[tuple[int, Mapping[str, JSON]]]:
    """`entries` with each of `early` (results written before their calls' entry) read right
    after the entry its `parentUuid` names, if that entry is still read (not in a branch the
    log left); in time linear in the log's length."""
    present = {entry.get("uuid") for _, entry in entries}
    held: dict[str, list[tuple[int, Mapping[str, JSON]]]] = {}
    for item in entries:
        uuid = item[1].get("uuid")
        if isinstance(uuid, str) and uuid in early and early[uuid] in present:
            held.setdefault(early[uuid], []).append(item)
    if not held:
        return entries
    moved = sum(len(results) for results in held.values())
    out: list[tuple[int, Mapping[str, JSON]]] = []
    for item in entries:
        uuid = item[1].get("uuid")
        if isinstance(uuid, str) and uuid in early and early[uuid] in present:
            continue
        follow = [item]
        while follow:
            current = follow.pop()
            out.append(current)
            after = current[1].get("uuid")
            # Pushed last first: each is read in the log's order.
            follow.extend(reversed(held.pop(after, []) if isinstance(after, str) else []))
    notes.append(
        f"{moved} tool results written before the entry of their call (their `parentUuid` "
        "names it, later in the log) read after it"
    )
    return out


def _user_text_entry(entry: Mapping[str, JSON]) -> dict[str, JSON] | None:
    """A local command's line, or an attachment Claude Code sends the model
    (`abridged.adapters.claude_code_attachments`), as a user entry of its text (marked
    `READ_AS_USER_TEXT`); None for any other entry, or one with nothing to read."""
    content: JSON = None
    if entry.get("type") == "system" and entry.get("subtype") == "local_command":
        source, content = "local_command", entry.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content.strip() else []
    elif entry.get("type") == "attachment":
        read = attachment_blocks(entry.get("attachment"))
        if read is None:
            return None
        source, content = read
    else:
        return None
    if not isinstance(content, list) or not content:
        return None
    return {
        **entry,
        "type": "user",
        "message": {"role": "user", "content": content},
        READ_AS_USER_TEXT: source,
    }


def _read_as_text_notes(counts: Mapping[str, int]) -> list[str]:
    notes = []
    if counts.get("local_command"):
        notes.append(
            f"{counts['local_command']} lines of local commands (`/mcp`, `/model` and their "
            "output) read as user text, as Claude Code sends them"
        )
    if counts.get(QUEUED):
        notes.append(
            f"{counts[QUEUED]} prompts typed while the agent worked (queued commands) read "
            "as user text beside the results they came with"
        )
    others = {k: n for k, n in counts.items() if k not in ("local_command", QUEUED) and n}
    if others:
        listed = ", ".join(f"{kind} {n}" for kind, n in sorted(others.items()))
        notes.append(
            f"{sum(others.values())} attachments Claude Code sends the model read as user "
            f"text after a line naming them ({listed}); the reminder it wraps them in is not "
            "in the log"
        )
    return notes


def _queued_only(
    queued: list[tuple[int, str]], entries: list[tuple[int, Mapping[str, JSON]]]
) -> list[str]:
    """A note for each prompt a queue operation holds that no user entry read holds as its
    text (sent as the next prompt, or as a queued command): the log does not say whether the
    model got it (delivered mid-turn, or taken back)."""
    if not queued:
        return []
    read: set[str] = set()
    for _, entry in entries:
        message = entry.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        if entry.get("type") != "user" or entry.get("isCompactSummary"):
            continue
        if isinstance(content, str):
            read.add(content.strip())
        elif isinstance(content, list):
            texts = [b.get("text") for b in content if isinstance(b, Mapping)]
            read.add("\n".join(t for t in texts if isinstance(t, str)).strip())
    first = {text.strip(): number for number, text in reversed(queued)}
    return [
        f"line {number}: a prompt queued while the agent worked ({_quoted(text)}) is in the "
        "log only as a queue operation, which does not say whether the model got it; left out"
        for number, text in queued
        # A slash command queued is run as one: its lines are read as a local command's.
        if text.strip() not in read
        and not text.lstrip().startswith("/")
        and first[text.strip()] == number  # enqueued, then removed: one prompt
    ]


def _quoted(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= limit else line[: limit - 1] + "…")


def _prompt(entry: Mapping[str, JSON]) -> bool:
    """Whether a user entry holds more than tool results (which answer calls, not prompts),
    and is not text read from a local command or a queued prompt."""
    if entry.get(READ_AS_USER_TEXT):
        return False
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
        elif entry.get(READ_AS_USER_TEXT):
            # What Claude Code adds beside the results (a hook's context, a prompt queued
            # mid-turn) does not end the reply: its next block may still stream.
            pass
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
