"""The lines of a shell command that are commands (`command_lines`): what a multi-line
command ran, without the scripts it carried (a here-document's body, a string left open
across lines, as `python -c "…"` spans them), and the paths a line names (`named_paths`).
The facts ledger lists them (`abridged.domain.ledger_extraction`)."""

from __future__ import annotations

import re

HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
"""A here-document's start (`<<EOF`, `<<-'END'`): the lines up to its terminator are its body."""
QUOTING = re.compile(r"[\\'\"#]")
"""The characters that change how a shell reads what follows them."""
LATER_LINES = 20
"""The command lines after the first that are read at most (a long script of commands names
its paths in its first ones; the rest would crowd the ledger)."""
PATH_WORD = re.compile(r"(?<![\w:/.@+-])(?:~|\.{1,2})?/?(?:[\w.@+-]{1,255}/)+[\w.@+-]*\w")
"""A path of folders, each named in at most 255 characters (as file systems allow), starting
where a run of the characters a path holds starts: a try that started at each word or slash
of a run like `a-a-a-…` or `/+/+/+…` read the rest of it (quadratic time)."""
HEADER = re.compile(
    r"""(?<![\w-])(?:-H|--header)(?:=|[ \t]*)(?:'[^'\n]{0,1000}'|"[^"\n]{0,1000}"|\S+)"""
    r"""|content[-_]type['"]?[ \t]*[:=][ \t]*['"]?[^\s'";,]+""",
    re.IGNORECASE,
)
"""A request's header in a command: a header flag's argument (`-H 'Accept: text/html'`,
`--header=…`; a quoted one read up to 1,000 characters, so that a line of unclosed quotes is
read in linear time), or a `Content-Type` and its value (`{"Content-Type": "…"}` too)."""
MEDIA_TYPE = re.compile(
    r"(?<![\w/.@+-])(?:application|audio|font|image|message|model|multipart|text|video)"
    r"/[\w.+-]+(?![\w/])",
    re.IGNORECASE,
)
"""A media type (`type/subtype`) of one of the registered top-level types."""


def command_lines(command: str, limit: int = LATER_LINES + 1) -> list[str]:
    """The first `limit` lines of `command`, stripped and not blank, that a shell reads as
    commands: not a here-document's body, nor the lines inside a quoted string a line left
    open (the line that closes it neither). The first is always the command's first line
    that is not blank."""
    found: list[str] = []
    terminator: str | None = None
    quote: str | None = None
    for raw in command.splitlines():
        line = raw.strip()
        if terminator is not None:
            if line == terminator:
                terminator = None
            continue
        inside = quote is not None
        quote = _quote_after(raw, quote)
        if inside or not line:
            continue
        found.append(line)
        if len(found) >= limit:
            break
        if quote is None and (heredoc := HEREDOC.search(line)) is not None:
            terminator = heredoc.group(2)
    return found


def named_paths(line: str) -> list[str]:
    """The paths `line` names (`PATH_WORD`), but the media types in a request's headers
    (`curl -H 'Content-Type: application/json'`), which name a format, not a file."""
    return PATH_WORD.findall(HEADER.sub(_blank_media_types, line))


def _blank_media_types(header: re.Match[str]) -> str:
    return MEDIA_TYPE.sub(lambda media: " " * len(media.group()), header.group())


def _quote_after(line: str, quote: str | None) -> str | None:
    """The quote still open at the end of `line`, read from `quote` (`None`: none open):
    single quotes take everything to the next `'`, double quotes honour backslashes, and
    outside them a `#` that starts a word starts a comment."""
    at = 0
    while True:
        if quote == "'":
            end = line.find("'", at)
            if end < 0:
                return quote
            quote, at = None, end + 1
            continue
        found = QUOTING.search(line, at)
        if found is None:
            return quote
        char, at = found.group(), found.end()
        if char == "\\":
            at += 1
        elif quote == '"':
            quote = None if char == '"' else quote
        elif char == "#":
            if found.start() == 0 or line[found.start() - 1].isspace():
                return None
        else:
            quote = char
