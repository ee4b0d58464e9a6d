"""Which lines of a tool's output say that something went wrong."""

from __future__ import annotations

import re
from collections.abc import Sequence

from abridged.adapters.summarizers.rendering import clip_line, one_line

_ERROR_SNIPPETS_PER_OUTPUT = 5
_OUTCOME_CHARS = 200
_ERROR_HEAD_LINES = 3
_ERROR_TAIL_LINES = 12

# Cheap substring checks first: the regular expressions below only see lines holding one.
_ERROR_HINTS = (
    "error",
    "exception",
    "fail",
    "traceback",
    "fatal",
    "panic",
    "exit",
    "returncode",
    "return code",
    "not found",
    "no such file",
    "denied",
    "segmentation",
)
_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):")
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception)\b|(?i:error|fatal|panic)\b|FAIL(?:ED)?\b)"
    r"|^E\s.*(?:Error|Exception)\b"
    r"|(?i:\berror(?:\[\w+\])?:)"
    r"|(?i:\bexception\b)"
    r"|\bFAILED\b|\bERROR\b"
    r"|(?i:command not found|no such file or directory|permission denied|segmentation fault)"
)
_MAKE_ERROR = re.compile(r"\bError \d+")
"""After make's `***` (`make: *** [Makefile:12: test] Error 1`): searched from the first
`***` of a line, not as a pattern from each one, which read a long line of asterisks
to its end from every one of them (5 s for 20,000)."""
_EXIT_CODE = re.compile(
    r"(?i)\b(?:exit(?:ed)?(?:\s+with)?(?:\s+(?:code|status))?|exit_code|returncode|return code)"
    r"\s*(?:[:=]\s*)?(-?\d+)"
)
r"""`exit code 2`, `returncode=1`: the spaces around a `:` or `=` read one way only (as
`\s*[:=]?\s*`, a long run of spaces after `exit code` was split every way: 16,000 took 3 s)."""
# Source code that merely mentions errors (file listings, diffs, grep hits) is not an error.
# Each run of spaces is read by one quantifier: as `\s*[:|]?\s*[-+]?\s*`, a line number and
# 1,000 spaces before an `error` were split every way (11 s; 2,000 took 89 s).
_CODE_LINE = re.compile(
    r"^\s*\d+\t"
    # Optionally behind a listing's line number ("1480:", "12 +"), a line of source code.
    r"|^\s*(?:\d+\s*(?:[:|]\s*)?(?:[-+]\s*)?)?(?:raise|except|catch|throw|throws|class|def|fn|func|"
    r"import|from|return|if|elif|assert|try|new|let|const|var|pub|#|//|/\*|\*)(?:\b|\s|$)"
    r"|^\s*\d+\s*[-+]\s"
    r"|(?:Error|Exception)\("
)


def _is_error_line(line: str) -> bool:
    if _CODE_LINE.search(line):
        return False
    if _ERROR_LINE.search(line):
        return True
    stars = line.find("***")
    if stars >= 0 and _MAKE_ERROR.search(line, stars + 3):
        return True
    exit_code = _EXIT_CODE.search(line)
    return exit_code is not None and int(exit_code.group(1)) != 0


def error_snippets(output: str) -> list[str]:
    """Error lines of a tool's output, verbatim; of a traceback, its last frame and exception."""
    snippets: list[str] = []
    lowered = output.lower()
    if not any(hint in lowered for hint in _ERROR_HINTS):
        return snippets
    lines = output.splitlines()
    lowered_lines = lowered.splitlines()
    if len(lowered_lines) != len(lines):
        lowered_lines = [line.lower() for line in lines]
    i = 0
    while i < len(lines) and len(snippets) < _ERROR_SNIPPETS_PER_OUTPUT:
        line = lines[i]
        if not any(hint in lowered_lines[i] for hint in _ERROR_HINTS):
            i += 1
            continue
        if _TRACEBACK.match(line):
            j = i + 1
            last_frame: int | None = None
            while j < len(lines) and (lines[j][:1] in (" ", "\t") or not lines[j].strip()):
                if lines[j].lstrip().startswith("File "):
                    last_frame = j
                j += 1
            kept = lines[last_frame:j] if last_frame is not None else []
            kept = [clip_line(k.rstrip()) for k in kept if k.strip()][:3]
            if j < len(lines):
                kept.append(clip_line(lines[j].strip()))
            if kept:
                snippets.append("\n".join(kept))
            i = j + 1
            continue
        if _is_error_line(line):
            snippet = clip_line(line.strip())
            # A bare heading ("ERROR:") says nothing without the line that follows it.
            if snippet.endswith(":") and len(snippet) < 40:
                following = next((f for f in lines[i + 1 : i + 4] if f.strip()), None)
                if following is not None:
                    snippet += "\n" + clip_line(following.strip())
            snippets.append(snippet)
        i += 1
    return snippets


def first_error_line(output: str, snippets: Sequence[str]) -> str:
    """The line that says what went wrong: a traceback's exception line, else the first."""
    if snippets:
        return one_line(snippets[0].splitlines()[-1], _OUTCOME_CHARS)
    for line in output.splitlines():
        if line.strip():
            return one_line(line, _OUTCOME_CHARS)
    return "(no output)"


def clip_error(output: str) -> str:
    """A failed tool's output: verbatim, or its first and last lines when it is long."""
    lines = [clip_line(line.rstrip()) for line in output.strip().splitlines()]
    if len(lines) > _ERROR_HEAD_LINES + _ERROR_TAIL_LINES:
        omitted = len(lines) - _ERROR_HEAD_LINES - _ERROR_TAIL_LINES
        lines = [
            *lines[:_ERROR_HEAD_LINES],
            f"[… {omitted} lines omitted …]",
            *lines[-_ERROR_TAIL_LINES:],
        ]
    return "\n".join(lines)
