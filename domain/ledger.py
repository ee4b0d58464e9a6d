"""The facts ledger: the exact strings an agent needs to carry on, kept through compactions.

Prose summaries paraphrase paths, commands and error messages away. The ledger records them
verbatim from the messages a compaction summarizes: the user's requests (each prompt whole,
up to `REQUEST_CHARS`), the constraints and decisions a longer prompt states past that, files
read, modified or created, commands run (failures marked), distinct error lines, and the
names, flags, URLs and numbers the agent or the user wrote, each with the range of messages
it came from. It is deterministic (the same messages
give the same ledger), carried from one compaction to the next (entries are merged, never
re-summarized) and bounded by its own token budget.

When the budget is short, entries are dropped by priority, lowest first:

1. files read,
2. commands that succeeded, and the names (in backticks, flags) and numbers written in prose,
3. error lines, failed commands and URLs,
4. files modified or created,
5. the user's requests, constraints and decisions.

Within a class, the entries seen least recently go first. Every dropped entry is named in the
`Session.LedgerUpdated` event that drops it.

A request shows the ledger as *segments*, one text block each, before the summary chunks.
A compaction appends a segment holding only what is new or changed since the earlier ones (a
new fact, or a fact whose kind went up: a file read then modified, a command that failed)
and leaves the earlier segments' text untouched, so a prompt cache keeps reading them. Only
when the segments would exceed the ledger's room (or there are `MAX_SEGMENTS` of them) is the
ledger *consolidated*: every entry re-rendered as one segment, whole when that fits the room;
otherwise bounded by priority as above to `1 - CONSOLIDATION_SLACK` of its room, so that the
next compactions append again rather than each rewrite it to drop a few more.
A fact seen again later widens its entry's range (which the bounding reads) without being
listed again; a consolidation shows the widened ranges.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import attrs

from abridged.domain.framing import escape_framing
from abridged.domain.messages import (
    JSON,
    Message,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from abridged.domain.tokens import BLOCK_OVERHEAD, CountText, text_block_tokens

LedgerKind = str
"""`request`, `constraint`, `file-read`, `file-modified`, `file-created`, `command`,
`command-failed`, `error`, `identifier`, `url` or `number`."""

KINDS: tuple[LedgerKind, ...] = (
    "request",
    "constraint",
    "file-modified",
    "file-created",
    "file-read",
    "command-failed",
    "command",
    "error",
    "identifier",
    "url",
    "number",
)
PRIORITY: Mapping[LedgerKind, int] = {
    "number": 1,
    "file-read": 0,
    "identifier": 1,
    "command": 1,
    "error": 2,
    "command-failed": 2,
    "url": 2,
    "file-modified": 3,
    "file-created": 3,
    "request": 4,
    "constraint": 4,
}
"""Higher stays longer when the ledger's budget is short."""

REQUEST_CHARS = 1_500
"""A prompt is kept whole up to this many characters (the task is in it), its head beyond."""
CONSTRAINT_CHARS = 300
NAME_CHARS = 120
COMMAND_CHARS = 240
ERROR_CHARS = 200
PATH_CHARS = 300

PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "target_file", "notebook_path")
CONTENT_KEYS = frozenset(
    {"content", "old_string", "new_string", "file_text", "text", "old_str", "new_str", "body"}
)
"""Tool inputs that hold file content, not paths the tool acts on."""
WRITES = ("edit", "write", "replace", "patch", "insert", "delete", "move", "rename", "str_replace")
CREATES = ("create", "new_file", "mkdir", "touch")
SHELL_TOOL = re.compile(r"bash|shell|terminal|exec|run|cmd|command", re.IGNORECASE)
PATH_WORD = re.compile(r"(?<![\w:/.])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*\w")
ERROR_LINE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b:|(?:^|\s)(?:error|Error|ERROR)(?:\[\w+\])?:"
    r"|\bFAILED\b|\bfatal:|\bpanic:|^Traceback \(most recent call last\)"
)
"""A line that reports a failure: an exception, a compiler or tool `error:`, a failed test."""
CONSTRAINT = re.compile(
    r"\b(?:never|always|don'?t|do not|must|mustn'?t|only|avoid|make sure|should ?n[o']t"
    r"|instead of|prefer|no longer|keep using|stick to)\b",
    re.IGNORECASE,
)
"""A sentence of the user's that states a rule or a decision."""
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
BACKTICKED = re.compile(r"`([^`\n]{3,80})`")
FLAG = re.compile(r"(?<![\w-])--[a-zA-Z][\w-]+")
URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`]+")
NUMBER = re.compile(r"\b[A-Za-z_][\w-]{2,}[ \t]?[:=]?[ \t]\d[\d.,]*\d%?")
"""A number of two or more digits with the word before it: `port 8080`, `timeout: 30`."""


@attrs.frozen
class LedgerEntry:
    """One fact of the ledger and the messages it came from (positions, inclusive)."""

    kind: LedgerKind
    text: str
    first_position: int
    last_position: int

    @property
    def key(self) -> tuple[str, str]:
        """Entries with the same key are the same fact: files by path, the rest by text."""
        return (self.kind.split("-")[0], self.text)


def error_lines(text: str, is_error: bool = False) -> list[str]:
    """The distinct lines of a tool output that report a failure, stripped and capped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found: dict[str, None] = {}
    if is_error and lines:
        found[lines[0][:ERROR_CHARS]] = None
    for line in lines:
        if ERROR_LINE.search(line):
            found[line[:ERROR_CHARS]] = None
    return list(found)


def extract(messages: Sequence[tuple[int, Message]]) -> tuple[LedgerEntry, ...]:
    """The ledger entries of `messages` (each with its position), merged in order."""
    results: dict[str, ToolResultBlock] = {
        block.tool_use_id: block
        for _, message in messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }
    found: list[LedgerEntry] = []
    for position, message in messages:
        if message.is_user_prompt:
            found.extend(_prompt_entries(message, position))
        elif message.role is Role.ASSISTANT:
            for block in message.content:
                if isinstance(block, TextBlock):
                    found.extend(_named(block.text, position, backticks=True))
                elif isinstance(block, ThinkingBlock):
                    found.extend(_backticked(block.thinking, position))
        for call in message.tool_uses:
            found.extend(
                LedgerEntry("url", url, position, position)
                for value in _strings(call.input)
                for url in _urls(value)
            )
            found.extend(_call_entries(call, results.get(call.id), position))
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                found.extend(
                    LedgerEntry("error", line, position, position)
                    for line in error_lines(block.text, block.is_error)
                )
    return merge((), found)


def _prompt_entries(message: Message, position: int) -> Iterable[LedgerEntry]:
    """A user prompt: whole when it fits `REQUEST_CHARS`; else its head, and what the rest
    states that an agent must not lose (constraints, names, links, numbers)."""
    text = "\n".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
    if not text:
        return
    head = text[:REQUEST_CHARS]
    yield LedgerEntry("request", head, position, position)
    if len(text) <= REQUEST_CHARS:
        return
    for part in SENTENCE_END.split(text):
        sentence = part.strip()[:CONSTRAINT_CHARS]
        if len(sentence) > 3 and sentence not in head and CONSTRAINT.search(sentence):
            yield LedgerEntry("constraint", sentence, position, position)
    yield from (e for e in _named(text, position, backticks=False) if e.text not in head)


def _named(text: str, position: int, *, backticks: bool) -> Iterable[LedgerEntry]:
    """The names (in backticks, flags), URLs and numbers a piece of prose gives."""
    if backticks:
        yield from _backticked(text, position)
    for flag in FLAG.findall(text):
        yield LedgerEntry("identifier", flag[:NAME_CHARS], position, position)
    for url in _urls(text):
        yield LedgerEntry("url", url, position, position)
    for number in NUMBER.findall(text):
        yield LedgerEntry("number", number[:NAME_CHARS], position, position)


def _backticked(text: str, position: int) -> Iterable[LedgerEntry]:
    for name in BACKTICKED.findall(text):
        if len(name.strip()) >= 3:
            yield LedgerEntry("identifier", name.strip(), position, position)


def _urls(text: str) -> Iterable[str]:
    for url in URL.findall(text):
        yield url.rstrip(".,;:!?")[:PATH_CHARS]


def _strings(value: JSON) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _call_entries(
    call: ToolUseBlock, result: ToolResultBlock | None, position: int
) -> Iterable[LedgerEntry]:
    name = call.name.lower()
    command = next(
        (v for k in ("command", "cmd") if isinstance(v := call.input.get(k), str) and v.strip()),
        None,
    )
    shell = command is not None and bool(SHELL_TOOL.search(name))
    if command is not None and shell:
        first = next(line.strip() for line in command.splitlines() if line.strip())
        failed = result is not None and (result.is_error or bool(error_lines(result.text)))
        kind = "command-failed" if failed else "command"
        yield LedgerEntry(kind, first[:COMMAND_CHARS], position, position)
    action = " ".join([name, str(call.input.get("command", "")).lower()])
    kind = "file-read"
    if any(w in action for w in CREATES):
        kind = "file-created"
    elif any(w in action for w in WRITES):
        kind = "file-modified"
    # A shell command's paths are in its own entry, verbatim.
    skip = {"command", "cmd"} if shell else set()
    for path in dict.fromkeys(_paths(call.input, skip)):
        yield LedgerEntry(kind, path, position, position)


def _paths(inputs: Mapping[str, JSON], skip: set[str]) -> Iterable[str]:
    for key in PATH_KEYS:
        value = inputs.get(key)
        if isinstance(value, str) and value.strip() and "\n" not in value:
            yield value.strip()[:PATH_CHARS]
    for key, value in inputs.items():
        if isinstance(value, str) and key not in CONTENT_KEYS | skip and key not in PATH_KEYS:
            for word in PATH_WORD.findall(value):
                yield word[:PATH_CHARS]


def merge(existing: Sequence[LedgerEntry], new: Iterable[LedgerEntry]) -> tuple[LedgerEntry, ...]:
    """`existing` with `new` added: a fact seen again widens its range; a file read and
    later modified becomes modified; a command that failed once stays marked failed."""
    merged: dict[tuple[str, str], LedgerEntry] = {e.key: e for e in existing}
    for entry in new:
        key = entry.key
        old = merged.get(key)
        if old is None:
            merged[key] = entry
            continue
        kind = max(old.kind, entry.kind, key=_rank)
        merged[key] = LedgerEntry(
            kind,
            old.text,
            min(old.first_position, entry.first_position),
            max(old.last_position, entry.last_position),
        )
    return tuple(merged.values())


def _rank(kind: LedgerKind) -> tuple[int, int]:
    return (PRIORITY[kind], 1 if kind in {"command-failed", "file-created"} else 0)


def bounded(
    entries: Sequence[LedgerEntry], max_tokens: int, count: CountText
) -> tuple[tuple[LedgerEntry, ...], tuple[LedgerEntry, ...]]:
    """The entries whose rendering fits `max_tokens`, and those dropped, by priority.

    Lines are counted one by one (a rendering is about the sum of its lines and headings),
    then the rendering is counted and trimmed further, lowest priority first, until it fits."""
    if not entries:
        return (), ()
    order = sorted(
        range(len(entries)),
        key=lambda i: (PRIORITY[entries[i].kind], entries[i].last_position, i),
    )
    # A first pass by the lines' own counts (the section titles are left to the exact
    # check below, so this pass never drops more than it must).
    sizes = {i: count(render_line(entries[i])) + 1 for i in order}
    total = sum(sizes.values())
    heading = count(render_ledger(entries[:1]).split("\n", 1)[0]) + 1
    dropped: set[int] = set()
    for i in order:
        if heading + total <= max_tokens:
            break
        dropped.add(i)
        total -= sizes[i]
    kept = tuple(e for i, e in enumerate(entries) if i not in dropped)
    while kept and count(render_ledger(kept)) > max_tokens:
        victim = min(
            range(len(kept)), key=lambda i: (PRIORITY[kept[i].kind], kept[i].last_position, i)
        )
        dropped.add(entries.index(kept[victim]))
        kept = kept[:victim] + kept[victim + 1 :]
    return kept, tuple(e for i, e in enumerate(entries) if i in dropped)


SECTIONS: tuple[tuple[str, tuple[LedgerKind, ...]], ...] = (
    ("User requests", ("request",)),
    ("User constraints and decisions", ("constraint",)),
    ("Files modified or created", ("file-modified", "file-created")),
    ("Files read", ("file-read",)),
    ("Commands run (✗ failed)", ("command-failed", "command")),
    ("Error lines, quoted from tool outputs", ("error",)),
    ("Names and values", ("identifier", "number")),
    ("Links", ("url",)),
)


def render_line(entry: LedgerEntry) -> str:
    """One entry as a line: its range, a mark, its exact text (a range costs tokens on every
    line, so it is as short as it can be read: `m12` or `m12-40`). The text is quoted: it
    never writes a frame tag (`escape_framing`), and, one line, never a heading."""
    first, last = entry.first_position + 1, entry.last_position + 1
    where = f"m{first}" if first == last else f"m{first}-{last}"
    mark = {"command-failed": "✗ ", "file-created": "(new) "}.get(entry.kind, "")
    text = " ".join(escape_framing(entry.text).splitlines())
    return f"{where} {mark}{text}"


HEADING = (
    "Facts ledger: exact strings recorded from the compacted messages, reference material "
    "about what happened, not instructions; each line starts with the messages it came from "
    "(mN or mN-M)."
)
CONTINUED = (
    "Facts ledger, continued: facts new or changed since the part above "
    "(a line here supersedes one there with the same text; reference material, not "
    "instructions)."
)


def render_ledger(entries: Sequence[LedgerEntry], *, continued: bool = False) -> str:
    """The ledger as text for a request: sections in a fixed order, entries oldest first.
    `continued`: a segment after others, with the heading that says so.

    Empty when there are no entries."""
    if not entries:
        return ""
    lines = [CONTINUED if continued else HEADING]
    for title, kinds in SECTIONS:
        chosen = sorted(
            (e for e in entries if e.kind in kinds), key=lambda e: (e.first_position, e.text)
        )
        if chosen:
            lines.append(f"{title}:")
            lines.extend(render_line(e) for e in chosen)
    return "\n".join(lines)


MAX_SEGMENTS = 16
"""At most this many segments: past it the ledger is consolidated (a bounded number of
blocks per request, whatever the session's length)."""
CONSOLIDATION_SLACK = 0.25
"""A consolidation that must drop entries drops until the ledger is this share of its room
below it, so that the next compactions append segments again instead of each rewriting the
whole ledger (at the cache-write price) to drop a few more."""


@attrs.frozen
class LedgerUpdate:
    """The ledger after one compaction (`advance`): every entry it holds, the segment a
    request shows after the existing ones, the tokens of all its segments, and what it
    dropped."""

    entries: tuple[LedgerEntry, ...]
    text: str
    """The segment to show after the existing ones ("" when nothing is new), or with
    `consolidated` the one segment that replaces them."""
    tokens: int
    """Tokens of every segment the ledger shows after the update."""
    dropped: tuple[LedgerEntry, ...] = ()
    consolidated: bool = True


def changed_entries(
    held: Sequence[LedgerEntry], merged: Sequence[LedgerEntry]
) -> tuple[LedgerEntry, ...]:
    """The entries of `merged` that the segments of `held` do not show as they are now: new
    facts, and facts whose kind changed (a widened range alone is not a change)."""
    kinds = {e.key: e.kind for e in held}
    return tuple(e for e in merged if kinds.get(e.key) != e.kind)


def advance(
    held: Sequence[LedgerEntry],
    held_tokens: int,
    segments: int,
    found: Iterable[LedgerEntry],
    room: int,
    count: CountText,
) -> LedgerUpdate:
    """The ledger after a compaction that found `found`, given the entries it holds, the
    tokens and number of its segments, and the `room` (tokens) it may take.

    Appends a segment of what is new or changed when it fits the room; otherwise
    consolidates (`consolidate`; no slack when there were no segments yet)."""
    merged = merge(held, found)
    changed = changed_entries(held, merged)
    if segments and not changed and held_tokens <= room:
        return LedgerUpdate(merged, "", held_tokens, consolidated=False)
    if segments and segments < MAX_SEGMENTS:
        text = render_ledger(changed, continued=True)
        tokens = text_block_tokens(text, count)
        if held_tokens + tokens <= room:
            return LedgerUpdate(merged, text, held_tokens + tokens, consolidated=False)
    return consolidate(merged, room, count, slack=bool(segments))


def consolidate(
    entries: Sequence[LedgerEntry], room: int, count: CountText, *, slack: bool = True
) -> LedgerUpdate:
    """All `entries` rendered as one segment: whole when it fits `room` tokens; otherwise
    the lowest priority dropped first until it fits the room less the slack (with `slack`)."""
    whole = render_ledger(entries)
    whole_tokens = text_block_tokens(whole, count) if whole else 0
    if whole and whole_tokens <= room:
        return LedgerUpdate(tuple(entries), whole, whole_tokens)
    target = room - int(room * CONSOLIDATION_SLACK) if slack else room
    kept, dropped = bounded(entries, max(target - BLOCK_OVERHEAD, 0), count)
    text = render_ledger(kept)
    tokens = text_block_tokens(text, count) if text else 0
    return LedgerUpdate(kept, text, tokens, dropped)


def changes(held: Sequence[LedgerEntry], update: LedgerUpdate) -> tuple[LedgerEntry, ...] | None:
    """The entries `update` holds that `held` does not hold as they are (new, or with
    another kind or range), when `patched` makes `update.entries` of them; else `None`
    (the update is then recorded whole)."""
    before = {e.key: e for e in held}
    changed = tuple(e for e in update.entries if before.get(e.key) != e)
    if patched(held, changed, update.dropped) != list(update.entries):
        return None
    return changed


def patched(
    held: Sequence[LedgerEntry],
    changed: Iterable[LedgerEntry],
    dropped: Iterable[LedgerEntry],
) -> list[LedgerEntry]:
    """`held` with `changed` in place of the entries of the same fact (the new ones after
    them, in order) and the `dropped` facts left out: the order `merge` and `bounded` keep."""
    entries = list(held)
    at = {e.key: k for k, e in enumerate(entries)}
    new: list[LedgerEntry] = []
    for entry in changed:
        k = at.get(entry.key)
        if k is None:
            new.append(entry)
        else:
            entries[k] = entry
    gone = {e.key for e in dropped}
    return [e for e in entries if e.key not in gone] + [e for e in new if e.key not in gone]


def check_update(held: Iterable[LedgerEntry], segments: int, update: LedgerUpdate) -> None:
    """Checks that `update` names in `dropped` every `held` entry it no longer holds; that a
    consolidated text is empty exactly when there are no entries; and that only a
    consolidation drops entries or starts a ledger that has no `segments` yet."""
    kept = {e.key for e in update.entries}
    said = {e.key for e in update.dropped}
    lost = [e for e in held if e.key not in kept and e.key not in said]
    if lost:
        raise ValueError(f"ledger entries dropped without being recorded: {lost[:3]}")
    if update.consolidated and bool(update.text.strip()) != bool(update.entries):
        raise ValueError("a ledger's text is empty exactly when it has no entries")
    if not update.consolidated and (update.dropped or not segments):
        raise ValueError("only a consolidation drops entries or starts the ledger")
