"""Reading the facts ledger's entries from messages (`extract`): the user's requests and
constraints, files, commands, the calls of other tools with their arguments, error lines, test
runs' counts, the agent's plan and decisions, and the names, URLs, numbers and values written
in prose."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

from abridged.domain.command_lines import PATH_WORD, command_lines, named_paths
from abridged.domain.ledger_decisions import ANSWER_CHARS, decisions, question_asked
from abridged.domain.ledger_entry import LedgerEntry, LedgerKind, merge, outranks
from abridged.domain.ledger_errors import PROSE_OR_HEADER, error_lines
from abridged.domain.ledger_mentions import mentions
from abridged.domain.ledger_plans import PLAN_TOOL, plan_entries
from abridged.domain.ledger_runs import run_counts
from abridged.domain.ledger_values import (
    FILE_LINE_END,
    NUMBER,
    VALUE_CHARS,
    WRITTEN_DATE,
    dotted,
    script_numbers,
    values,
)
from abridged.domain.messages import (
    JSON,
    Message,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from abridged.domain.reply_shapes import compaction_summary
from abridged.domain.rule_words import stated_rules
from abridged.domain.tokens import CountText

REQUEST_CHARS = 1_500
"""A prompt is kept whole up to this many characters (the task is in it), its head beyond."""
TASK_CHARS = 6_000
"""The session's first prompt, the task (an issue to fix, a spec, a ticket), is kept whole up
to this many characters where the ledger has room (`task_chars`): its details (the commit, the
names, the numbers it gives) are what an agent works from to the end. A pasted log longer than
that keeps its head, with the constraints, error lines, names, links and numbers of the rest."""
TASK_SHARE = 0.15
"""The share of the ledger's room the task may take before its head is cut shorter."""
NAME_CHARS = 120
COMMAND_CHARS = 240
PATH_CHARS = 300
URL_CHARS = 2_048
"""A link is kept whole up to the length browsers and servers commonly take: cut short, it
leads elsewhere (a search's or a booking's query string runs to several hundred characters).
A short ledger weighs an entry by the room it takes, so long links go before short facts."""
CALL_CHARS = 300
"""A call's entry, its tool's name and arguments, is at most this long (whole arguments)."""
CALL_VALUE_CHARS = 120
"""A string argument longer than this (a prose note, a document) is left out of a call's entry."""
CALL_DEPTH = 4
ARGUMENT_KEY = re.compile(r"[^\s=,()]{1,64}")
"""An argument's name as a call's entry shows it (others are left out: the entry is one line
that reads `name(key=value, ...)`)."""

PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "target_file", "notebook_path")
CONTENT_KEYS = frozenset(
    {"content", "old_string", "new_string", "file_text", "text", "old_str", "new_str", "body"}
)
"""Tool inputs that hold file content, not paths the tool acts on; but see `_content`."""
MESSAGE_KEYS = frozenset({"body"})
"""Content keys that, holding one short line, are a message the agent sent (an SMS, an
issue comment), read as an argument: its ids, dates, links and labels are facts."""
WRITES = ("edit", "write", "replace", "patch", "insert", "delete", "move", "rename", "str_replace")
CREATES = ("create", "new_file", "mkdir", "touch")
SHELL_TOOL = re.compile(r"bash|shell|terminal|exec|run|cmd|command", re.IGNORECASE)
BACKTICKED = re.compile(r"`([^`\n]{3,80})`")
FLAG = re.compile(r"(?<![\w-])--[a-zA-Z][\w-]+")
URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`]+")


def task_chars(messages: Sequence[tuple[int, Message]], room: int, count: CountText) -> int:
    """How much of the task, the first prompt of `messages` (which start the session), the
    ledger keeps: up to `TASK_CHARS` characters, as many as `TASK_SHARE` of its `room` (tokens)
    holds, and never fewer than any prompt's `REQUEST_CHARS`."""
    prompt = next((m for _, m in messages if m.is_user_prompt), None)
    if prompt is None:
        return REQUEST_CHARS
    head = _prompt_text(prompt)[:TASK_CHARS]
    allowed = TASK_SHARE * room
    tokens = count(head)
    if len(head) <= REQUEST_CHARS or tokens <= allowed:
        return max(len(head), REQUEST_CHARS)
    cap = int(len(head) * allowed / tokens)
    while cap > REQUEST_CHARS and count(head[:cap]) > allowed:
        cap = int(cap * 0.95)
    return max(REQUEST_CHARS, cap)


def extract(
    messages: Sequence[tuple[int, Message]], *, task: int = REQUEST_CHARS
) -> tuple[LedgerEntry, ...]:
    """The ledger entries of `messages` (each with its position), merged in order: each
    prompt whole up to `REQUEST_CHARS`, the first up to `task` characters (when `messages`
    start the session, that prompt is its task: see `task_chars`)."""
    results: dict[str, ToolResultBlock] = {
        block.tool_use_id: block
        for _, message in messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }
    tools = {call.id: call.name for _, message in messages for call in message.tool_uses}
    found: list[LedgerEntry] = []
    first = next((p for p, m in messages if m.is_user_prompt), None)
    asked: str | None = None  # the question the message before ended with
    for position, message in messages:
        if message.is_user_prompt:
            cap = max(task, REQUEST_CHARS) if position == first else REQUEST_CHARS
            found.extend(_prompt_entries(message, position, cap, asked))
        asked = question_asked(message) if message.role is Role.ASSISTANT else None
        if message.role is Role.ASSISTANT:
            for block in message.content:
                if isinstance(block, TextBlock):
                    found.extend(_named(block.text, position, backticks=True))
                    found.extend(mentions(_prose(block.text), position))
                    found.extend(
                        LedgerEntry("decision", d, position, position)
                        for d in decisions(block.text)
                    )
                elif isinstance(block, ThinkingBlock):
                    found.extend(_backticked(block.thinking, position))
                    found.extend(mentions(_prose(block.thinking), position))
                elif (summary := compaction_summary(block)) is not None:
                    found.extend(_named(summary, position, backticks=True))
        for call in message.tool_uses:
            found.extend(
                LedgerEntry("url", url, position, position)
                for value in _strings(call.input)
                for url in _urls(value)
            )
            found.extend(_call_entries(call, results.get(call.id), position))
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                # The tool that wrote it is named: the line is quoted from its output.
                source = tools.get(block.tool_use_id, "tool")
                found.extend(
                    LedgerEntry("error", line, position, position, source)
                    for line in error_lines(block.text, block.is_error)
                )
                found.extend(
                    LedgerEntry("test-result", line, position, position, source)
                    for line in run_counts(block.text)
                )
    return merge((), found)


def carried(messages: Sequence[tuple[int, Message]]) -> dict[tuple[str, str], LedgerKind]:
    """The facts the recent tail `messages` (each with its position, as a request shows them)
    send verbatim, by key, with their kind: those of the user's prompts, the agent's text and
    its tool calls. Not what thinking or tool outputs hold: later requests drop older thinking,
    and pruning cuts outputs, so those facts could leave the request before the tail is folded
    (and extracted again).

    A compaction leaves these out of the ledger (`abridged.domain.ledger.advance`): the tail
    carries them until a later compaction summarizes it, which records them then."""
    shown: list[tuple[int, Message]] = []
    for position, message in messages:
        if message.role is Role.USER and not message.is_user_prompt:
            continue  # tool results (and the notes beside them)
        content = tuple(b for b in message.content if isinstance(b, TextBlock | ToolUseBlock))
        if content:
            shown.append((position, Message(message.role, content)))
    texts: dict[int, list[str]] = {}
    for position, message in shown:
        held = texts.setdefault(position, [])
        held += [b.text for b in message.content if isinstance(b, TextBlock)]
        # A tool's input as the request serializes it: a string with quotes is escaped there.
        held += [json.dumps(c.input, ensure_ascii=False) for c in message.tool_uses]
    everywhere = _Texts([text for held in texts.values() for text in held])

    def sent(entry: LedgerEntry) -> bool:
        # Usually in the message it was read from: looked for there first, then in all.
        near = (*texts.get(entry.first_position, ()), *texts.get(entry.last_position, ()))
        return any(entry.text in text for text in near) or entry.text in everywhere

    # A call's entry is read from a tool call the tail sends whole; a name from the prose
    # of a text block it sends, as written (looking each up took seconds for a reply
    # naming 30,000).
    return {
        entry.key: entry.kind for entry in extract(shown) if entry.kind in AS_WRITTEN or sent(entry)
    }


AS_WRITTEN = frozenset({"call", "identifier", "mention"})
"""Kinds `carried` knows the tail sends as they are: a call's entry is read from a call the
tail sends whole, and a name (in backticks, a flag, a mention) is a part of a text block's
text, unchanged."""


class _Texts:
    """Texts a string is looked for in, at once: joined by a character the string does not
    hold, or one by one when it holds it. Looking in each text of a long tail in turn, for
    each of its facts, took a second for a tail of 4,000 messages."""

    _JOIN = "\x00"

    def __init__(self, texts: list[str]) -> None:
        self._texts = texts
        self._joined = self._JOIN.join(texts)

    def __contains__(self, text: str) -> bool:
        if not self._texts:
            return False
        if self._JOIN in text:
            return any(text in held for held in self._texts)
        return text in self._joined


def uncarried(
    found: Iterable[LedgerEntry], carried: Mapping[tuple[str, str], LedgerKind]
) -> tuple[LedgerEntry, ...]:
    """`found` less the facts `carried` (`carried`) shows verbatim with the same kind or one
    that outranks it (a path the tail modifies carries a read; a read does not carry a
    modification, nor a command that succeeded one that failed)."""
    return tuple(e for e in found if e.key not in carried or outranks(e.kind, carried[e.key]))


def _prompt_entries(
    message: Message, position: int, cap: int, asked: str | None = None
) -> Iterable[LedgerEntry]:
    """A user prompt: whole when it fits `cap` characters; else its head, and what the rest
    states that an agent must not lose (constraints, error lines, names, links, numbers).
    A short answer (`ANSWER_CHARS`) to the question the agent `asked` just before is kept
    with it: "The larger one." or "Yes, drop it." says nothing alone."""
    text = _prompt_text(message)
    if not text:
        return
    head = text[:cap]
    if asked is not None and len(text) <= ANSWER_CHARS:
        head = f"{text} (answering: {asked})"
    yield LedgerEntry("request", head, position, position)
    if len(text) <= cap:
        return
    for sentence in stated_rules(text):
        if sentence not in head:
            yield LedgerEntry("constraint", sentence, position, position)
    # A pasted traceback or build log ends with what failed, past any head. A line written
    # in markdown (`code`, **bold**) is the user's prose about an error, not its output; a
    # traceback's first line says nothing its last does not.
    for line in error_lines(text):
        if line not in head and not PROSE_OR_HEADER.search(line):
            yield LedgerEntry("error", line, position, position)
    yield from (e for e in _named(text, position, backticks=False) if e.text not in head)


def _prompt_text(message: Message) -> str:
    return "\n".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()


def _named(text: str, position: int, *, backticks: bool) -> Iterable[LedgerEntry]:
    """The names (in backticks, flags), URLs, numbers and values a piece of prose gives."""
    named = list(_backticked(text, position)) if backticks else []
    named += [
        LedgerEntry("identifier", f[:NAME_CHARS], position, position) for f in FLAG.findall(text)
    ]
    named += [LedgerEntry("url", url, position, position) for url in _urls(text)]
    numbers = NUMBER.findall(text) + script_numbers(text)
    found = [v[:VALUE_CHARS] for v in dict.fromkeys(values(text))]
    # A number whose digits are a value found on its own (`clause 19.2.3`, `Python 3.11.4`,
    # `host 10.0.0.12`) is that value with the word before it.
    on_their_own = set(found)
    # (Read in what the entry keeps: a value past its cap would be lost with the bare one.)
    worded = {t for n in numbers if (t := dotted(n[:NAME_CHARS])) is not None and t in on_their_own}
    # A date's number (`April 19` of `April 19, 2026`) is in the date's value already.
    in_dates = {n for v in found if WRITTEN_DATE.fullmatch(v) for n in NUMBER.findall(v)}
    for number in numbers:
        if number in in_dates:
            continue
        kind: LedgerKind = "value" if dotted(number[:NAME_CHARS]) in worded else "number"
        named.append(LedgerEntry(kind, number[:NAME_CHARS], position, position))
    yield from named
    # A value already in backticks, or the whole of a name, is not listed twice; nor one a
    # number's entry gives with the word before it.
    shown = {e.text for e in named} | worded
    for value in found:
        if value not in shown:
            # A file's line is where the agent looked: a name, kept after the values.
            kind = "identifier" if FILE_LINE_END.search(value) else "value"
            yield LedgerEntry(kind, value, position, position)


def _backticked(text: str, position: int) -> Iterable[LedgerEntry]:
    for name in BACKTICKED.findall(text):
        if len(name.strip()) >= 3:
            yield LedgerEntry("identifier", name.strip(), position, position)


def _prose(text: str) -> str:
    """`text` without its backticked names (`identifier` entries) and its links."""
    return URL.sub(" ", BACKTICKED.sub(" ", text))


def _urls(text: str) -> Iterable[str]:
    for url in URL.findall(text):
        yield url.rstrip(".,;:!?")[:URL_CHARS]


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
    # An editor's `command` is its mode (`str_replace_editor` views, creates or replaces):
    # where it has one, the mode says what the call did, not the tool's name.
    mode = call.input.get("command")
    has_mode = not shell and isinstance(mode, str) and bool(mode.strip())
    action = str(mode).lower() if has_mode else " ".join([name, str(mode or "").lower()])
    kind = "file-read"
    if any(w in action for w in CREATES):
        kind = "file-created"
    elif any(w in action for w in WRITES):
        kind = "file-modified"
    # A shell command's paths are in its own entry, verbatim, as far as that entry goes: the
    # paths of its first line past the entry's cap are listed as files; those of the command
    # lines below it (`cd repo` then `pytest tests/x.py`) as files read, the least kept,
    # whatever the command did to them; a script's it carries (a here-document, a string
    # over several lines) not at all: they would crowd the ledger.
    skip = {"command", "cmd"} if shell else set()
    paths = list(_paths(call.input, skip))
    later: list[str] = []
    if command is not None and shell:
        first, *lines = command_lines(command)
        shown = first[:COMMAND_CHARS]
        paths += [w[:PATH_CHARS] for w in named_paths(first) if w not in shown]
        later = [w[:PATH_CHARS] for line in lines for w in named_paths(line)]
    for path in dict.fromkeys(paths):
        yield LedgerEntry(kind, path, position, position)
    for path in dict.fromkeys(p for p in later if p not in paths):
        yield LedgerEntry("file-read", path, position, position)
    if shell:
        return
    if PLAN_TOOL.search(name):
        yield from plan_entries(call.input, position)
    else:
        yield from _call_entry(call, position)


def _call_entry(call: ToolUseBlock, position: int) -> Iterable[LedgerEntry]:
    """A call of a tool that is not a shell, as `name(key=value, ...)` with its arguments as
    given (nested ones by their dotted keys), when one of them is a value no path or URL entry
    holds: an id, a query, a date, a name to find. A support or data agent's facts are these
    (`get_reservation_details(reservation_id=JG7FMM)`), and a coding agent's searches.
    Arguments are kept whole, in order, while the entry fits `CALL_CHARS`."""
    arguments = list(_arguments(call.input, "", 0))
    if not any(isinstance(v, str) and not _path_or_url(v) for _, v in arguments):
        return
    parts: list[str] = []
    size = len(call.name) + 2
    for key, value in arguments:
        part = f"{key}={value if isinstance(value, str) else json.dumps(value)}"
        if size + len(part) > CALL_CHARS:
            break
        parts.append(part)
        size += len(part) + 2
    if parts:
        yield LedgerEntry("call", f"{call.name}({', '.join(parts)})", position, position)


def _arguments(value: JSON, key: str, depth: int) -> Iterable[tuple[str, str | int | float]]:
    """The scalar arguments of a tool input, by dotted key, but file content, a `command` (an
    editor's mode; a shell's command has its own entry), empty and multi-line strings."""
    if isinstance(value, dict) and depth < CALL_DEPTH:
        for name, item in value.items():
            if (
                ARGUMENT_KEY.fullmatch(name)
                and not _content(name, item)
                and not (depth == 0 and name in ("command", "cmd"))
            ):
                yield from _arguments(item, f"{key}.{name}" if key else name, depth + 1)
    elif isinstance(value, list) and depth < CALL_DEPTH:
        for index, item in enumerate(value):
            yield from _arguments(item, f"{key}.{index}", depth + 1)
    elif isinstance(value, str):
        text = value.strip()
        if text and "\n" not in text and len(text) <= CALL_VALUE_CHARS:
            yield key, text
    elif isinstance(value, int | float):  # booleans too: `dry_run=true`
        yield key, value


def _content(key: str, value: JSON) -> bool:
    """Whether the input `key` holding `value` is file content (`CONTENT_KEYS`), not a
    message of one line of at most `CALL_VALUE_CHARS` characters (`MESSAGE_KEYS`)."""
    if key not in CONTENT_KEYS:
        return False
    if key in MESSAGE_KEYS and isinstance(value, str):
        text = value.strip()
        return "\n" in text or len(text) > CALL_VALUE_CHARS
    return True


def _path_or_url(text: str) -> bool:
    return bool(PATH_WORD.fullmatch(text) or URL.fullmatch(text))


def _paths(inputs: Mapping[str, JSON], skip: set[str]) -> Iterable[str]:
    for key in PATH_KEYS:
        value = inputs.get(key)
        if isinstance(value, str) and value.strip() and "\n" not in value:
            yield value.strip()[:PATH_CHARS]
    for key, value in inputs.items():
        if (
            isinstance(value, str)
            and key not in skip
            and key not in PATH_KEYS
            and not _content(key, value)
        ):
            for word in named_paths(value):
                yield word[:PATH_CHARS]
