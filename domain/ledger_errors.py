"""The error lines the ledger quotes (`error` entries, and what marks a command failed): the
lines of an output that report a failure, and the exception that ends a Python traceback."""

from __future__ import annotations

import re

ERROR_CHARS = 200
ERROR_LINE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b:|(?:^|\s)(?:error|Error|ERROR)(?:\[\w+\])?:"
    r"|\bFAILED\b|\bfatal:|\bpanic:|^Traceback \(most recent call last\)"
)
"""A line that reports a failure: an exception, a compiler or tool `error:`, a failed test."""
PROSE_OR_HEADER = re.compile(r"`|\*\*|^#{1,6} |^Traceback \(most recent call last\)")
"""An error line of a prompt that is not output it quotes (`_prompt_entries`)."""
EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::(?:\s|$)|\s*$)")
"""The line that ends a Python traceback: the exception's class (its last name capitalized,
maybe after its module's), alone or before its message."""
ERROR_WORD = re.compile(r"Error|Exception|error|ERROR|FAILED|fatal:|panic:|Traceback")
"""What every line `ERROR_LINE` matches contains. Only lines holding it are searched with
the whole pattern, which, tried at every position of a long output, costs six to twenty
times more (up to a second for a 750 KB log)."""

_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b:")
_ERROR = re.compile(r"(?:^|\s)(?:error|Error|ERROR)(?:\[\w+\])?:")
_FAILED = re.compile(r"\bFAILED\b|\bfatal:|\bpanic:")


def reports_failure(line: str) -> bool:
    """Whether `ERROR_LINE` matches `line`, each of its branches tried only where the words
    it needs are in the line: the whole pattern, tried at every position of a long line,
    took 60 ms for a megabyte of JSON lines that name errors without reporting one."""
    return bool(
        (("Error" in line or "Exception" in line) and _EXCEPTION.search(line))
        or (("rror" in line or "ERROR" in line) and _ERROR.search(line))
        or (("FAILED" in line or "fatal:" in line or "panic:" in line) and _FAILED.search(line))
        or line.startswith("Traceback (most recent call last)")
    )


def error_lines(text: str, is_error: bool = False) -> list[str]:
    """The distinct lines of a tool output that report a failure, stripped and capped."""
    found: dict[str, None] = {}
    if is_error:
        first = next((line.strip() for line in text.splitlines() if line.strip()), None)
        if first is not None:
            found[first[:ERROR_CHARS]] = None
    if ERROR_WORD.search(text) is None:
        return list(found)
    traceback_at = -1  # the indent of the traceback being read, -1 outside one
    after_frame = False
    for line in text.splitlines():
        # A Python traceback ends with the exception, whatever its class is called
        # (`psycopg2.errors.UniqueViolation: ...`, `StopIteration`): the first line after
        # its frames indented no deeper than its head, when it reads as an exception (a
        # class's name, maybe dotted, alone or before `: `). Pasted without their indent,
        # the frames (`File "..."`) and each one's line of code are passed over.
        ends = False
        body = line.lstrip()
        if traceback_at >= 0 and body and len(line) - len(body) <= traceback_at:
            if body.startswith('File "'):
                after_frame = True
            elif after_frame and not EXCEPTION.match(body):
                after_frame = False
            else:
                traceback_at = -1
                ends = EXCEPTION.match(body) is not None
        matched = ERROR_WORD.search(line) and reports_failure(line.strip())
        if matched or ends:
            stripped = line.strip()
            found[stripped[:ERROR_CHARS]] = None
            if matched and stripped.startswith("Traceback (most recent call last)"):
                traceback_at, after_frame = len(line) - len(body), False
    return list(found)
