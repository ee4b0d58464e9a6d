"""Reading an earlier summary of this summarizer back into what it lists.

When chunks are folded, the service passes the texts of the earlier chunks it holds out of
band (`earlier=`), never as messages: a message's text that looks like a summary is only a
message. A chunk this summarizer wrote is read back: its items join the new ones and are
fitted again with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

from abridged.adapters.summarizers.items import COMMANDS, EARLIER, ERRORS, FILES, REQUESTS, TITLES
from abridged.adapters.summarizers.paths import paths_in

_FOCUS = "Focus: "
_HEADING = re.compile(r"## (.*)")
_FENCE = re.compile(r"`{3,}")
# The note `Fitter.fit` writes when a range held nothing to keep.
_NOTHING_KEPT = re.compile(
    r"Summarized \d+ messages: no user requests, errors, files, commands or decisions to keep\."
)
_OUTCOME = " → "


@attrs.frozen
class Entry:
    """One item of an earlier summary: `detail` is an error's label or a command's outcome."""

    section: int
    text: str
    detail: str = ""


def read_summary(text: str) -> list[Entry] | None:
    """The items `text` lists when it is a summary this summarizer wrote, else None.

    Such a text opens, perhaps after its "Focus: ..." line, with one of the section headings
    or with the note for a range that held nothing. Its other lines (the files footer the
    service appends, a cut line) keep only the file paths they name."""
    # Most user messages are prompts: they are turned away before being split into lines.
    if not text.startswith(("## ", _FOCUS, "Summarized ")):
        return None
    lines = text.split("\n")
    start = 2 if lines[0].startswith(_FOCUS) and len(lines) > 2 and not lines[1] else 0
    opening = lines[start] if start < len(lines) else ""
    heading = _HEADING.fullmatch(opening)
    if heading is not None and heading.group(1) in TITLES:
        body = lines[start:]
    elif _NOTHING_KEPT.fullmatch(opening):
        body = lines[start + 1 :]
    else:
        return None
    # A blank item (an empty fence) would be a summary line that says nothing.
    return [entry for entry in _entries(body) if entry.text.strip()]


def _entries(lines: list[str]) -> Iterator[Entry]:
    section: int | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        heading = _HEADING.fullmatch(line)
        if heading is not None:
            # A heading of other origin ("## The current request so far") is followed by
            # sections of this summarizer, whose items join the others.
            title = heading.group(1)
            section = TITLES.index(title) if title in TITLES else None
        elif not line or (section is None and line.startswith(_FOCUS)):
            # The focus of a summary that follows another heading is not carried either.
            continue
        elif _FENCE.fullmatch(line) and section in (REQUESTS, EARLIER):
            block, i = _fenced_block(lines, i, line)
            yield Entry(section, block)
        elif line.startswith("- ") and section is not None:
            body = line[2:]
            if section == ERRORS and body.endswith(":") and i < len(lines):
                fence = lines[i]
                if _FENCE.fullmatch(fence):
                    block, i = _fenced_block(lines, i + 1, fence)
                    yield Entry(ERRORS, block, body[:-1])
                    continue
            entry = _entry(section, body)
            if entry is not None:
                yield entry
            else:
                yield from _paths_entries(line)
        else:
            yield from _paths_entries(line)


def _fenced_block(lines: list[str], start: int, fence: str) -> tuple[str, int]:
    """The text inside a fence opened just before `start`, and the index after it closes."""
    end = start
    while end < len(lines) and lines[end] != fence:
        end += 1
    return "\n".join(lines[start:end]), end + 1


def _entry(section: int, body: str) -> Entry | None:
    """The item of one "- " line, or None when the line is not in its section's form."""
    if section == ERRORS:
        label, found, error = body.partition(": ")
        return Entry(ERRORS, error, label) if found else None
    if section == COMMANDS:
        parts = _command_line(body)
        if parts is None:
            return None
        command, outcome = parts
        # A code span pads a command that starts or ends with a backtick.
        if (
            len(command) > 2
            and command[0] == command[-1] == " "
            and "`" in command[1] + command[-2]
        ):
            command = command[1:-1]
        return Entry(COMMANDS, command, outcome)
    return Entry(section, body)


def _command_line(body: str) -> tuple[str, str] | None:
    """The command and its outcome of a line `` `command` → outcome `` (a code span of any
    number of backticks), or None: what `(`+)(.+?)\\1 → (.*)` would match, the longest
    opening first and then the first close, found in one pass over the arrows (the
    expression backtracked for seconds over a long run of backticks)."""
    ticks = len(body) - len(body.lstrip("`"))
    if not ticks or "\n" in body:
        return None
    best, close = 0, -1
    at = body.find(_OUTCOME, 1)
    while at >= 0:
        # The backticks just before this arrow, and room for a command of one character.
        run = 0
        while run < ticks and body[at - run - 1] == "`":
            run += 1
        opening = min(run, (at - 1) // 2)
        if opening > best:
            best, close = opening, at
        at = body.find(_OUTCOME, at + 1)
    if not best:
        return None
    return body[best : close - best], body[close + len(_OUTCOME) :]


def _paths_entries(line: str) -> Iterator[Entry]:
    for path in paths_in(line):
        yield Entry(FILES, path)
