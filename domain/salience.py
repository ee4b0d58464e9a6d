"""Salient lines: what an elided stretch of tool output should still show.

When a large output is shown as its head and tail, the middle is where a build's first error,
a test run's failures or a traceback's frames often are. `salient_lines` picks, from the cut
text, the lines that matter most, up to a cap, in this priority:

1. error lines (an `…Error:`/`…Exception`, `error:`, `fatal:`, `panic:`, a traceback's head),
2. failing test names (`FAILED …`, `FAIL: …`, `… FAILED`, `not ok …`, `✗ …`),
3. the last two frames of each traceback (`File "…", line N, in …`),
4. lines naming a path (a word with a `/`, not a URL).

Rules 2 also take, as
error lines, log lines at ERROR, FATAL or CRITICAL level (`… ERROR [worker] job failed`,
`level=error`), the exception that ends a traceback whatever its name
(`psycopg.errors.SerializationFailure: …`), and, as failures, pytest's `E   …` lines. Rules 3
(`LATEST_RULES`) choose the same lines, and cut a head and a tail at line ends
(`abridged.domain.truncation.line_cut`), so that neither shows half a line and a line split
between head and middle is whole in the middle. Rules 1 are the first ones: a truncation or
a prune records which rules it was made with, so a session stored earlier is shown as it
was.

Lines are stripped of surrounding blank space, each capped at `LINE_CHARS`, deduplicated,
and returned in their order in the text. Pure and deterministic: the same text, cap and rules
give the same lines, so a view built from stored events is rebuilt identically.
"""

from __future__ import annotations

import re

from abridged.domain.ledger_errors import ERROR_WORD, reports_failure

LINE_CHARS = 240
FAILING_TEST = re.compile(
    r"^(?:FAILED|FAIL:|ERROR:|not ok)\b|\b(?:FAILED|FAIL)\s*$|^\s*[✗✘×]\s|\.\.\. (?:FAIL|ERROR)\b"
)
FRAME = re.compile(r'^\s*File "[^"]+", line \d+')
TRACEBACK_END = re.compile(r"^\w[\w.]*(?:Error|Exception|Exit|Interrupt)\b")
RAISED = re.compile(r"[A-Za-z_][\w.]*(?::[ \t]|:?$)")
"""Rules 2: the unindented line after a traceback's frames names the exception raised."""
LOG_ERROR = re.compile(
    r"(?<![\w.-])(?:ERROR|FATAL|CRITICAL)(?![\w.-])|\blevel[=:]\s*\"?(?i:error|fatal|critical)\b"
)
"""Rules 2: a log line at an error level (upper case as a word, or a `level=` field)."""
PYTEST_E = re.compile(r"^E {2,}\S")
PATH_REVERSED = re.compile(
    r"\w[.@+-]*(?:/[.@+-]{1,255})*/[\w.@+-]{1,255}/?(?:~|\.{1,2})?(?![\w:/.])"
)
r"""Found in a line read backwards exactly where the path of every rule so far,
`(?<![\w:/.])(?:~|\.{1,2})?/?(?:[\w.@+-]{1,255}/)+[\w.@+-]*\w`, is found in the line
(`names_a_path`): where a path matches, so does its shortest form (its first folder, then
folders without a letter or digit, then a letter or digit after a slash), and read
backwards, a search starts only at a letter or digit."""
LATEST_RULES = 3

PRIORITY_ERROR = 0
PRIORITY_TEST = 1
PRIORITY_FRAME = 2
PRIORITY_PATH = 3


def salient_lines(text: str, max_chars: int, rules: int = 1) -> list[str]:
    """The salient lines of `text`, at most `max_chars` characters in all (a newline each),
    chosen by `rules` (1 or 2: see the module)."""
    if max_chars <= 0 or not text:
        return []
    lines = text.splitlines()
    ranked: dict[str, tuple[int, int]] = {}

    def add(index: int, priority: int) -> None:
        line = lines[index].strip()[:LINE_CHARS]
        if line and (line not in ranked or ranked[line][0] > priority):
            ranked[line] = (priority, ranked.get(line, (priority, index))[1])

    frames: list[int] = []
    # Each pattern runs only on lines holding a substring it cannot match without (most lines
    # hold none), and not at all when the whole text holds none: the same lines are chosen,
    # for a fraction of the regex searches.
    may_frame = 'File "' in text
    may_error = ERROR_WORD.search(text) is not None
    may_test = _may_name_a_test(text)
    may_path = "/" in text
    later = rules >= 2
    may_log = later and _may_log_error(text)
    for index, line in enumerate(lines):
        if may_frame and 'File "' in line and FRAME.match(line):
            frames.append(index)
            continue
        if frames and later and line[:1].strip() and RAISED.match(line):
            for frame in frames[-2:]:
                add(frame, PRIORITY_FRAME)
            frames = []
            add(index, PRIORITY_ERROR)
            continue
        if frames and TRACEBACK_END.match(line.strip()):
            for frame in frames[-2:]:
                add(frame, PRIORITY_FRAME)
            frames = []
        if (may_error and reports_failure(line)) or (
            may_log and _may_log_error(line) and LOG_ERROR.search(line)
        ):
            add(index, PRIORITY_ERROR)
        elif (later and line.startswith("E  ") and PYTEST_E.match(line)) or (
            may_test and _may_name_a_test(line) and FAILING_TEST.search(line)
        ):
            add(index, PRIORITY_TEST)
        elif may_path and "/" in line and names_a_path(line):
            add(index, PRIORITY_PATH)
    for frame in frames[-2:]:
        add(frame, PRIORITY_FRAME)
    chosen: list[tuple[int, str]] = []
    used = 0
    for line, (_, index) in sorted(ranked.items(), key=lambda item: item[1]):
        if used + len(line) + 1 > max_chars:
            continue
        chosen.append((index, line))
        used += len(line) + 1
    return [line for _, line in sorted(chosen)]


def names_a_path(line: str) -> bool:
    """Whether the rules' path expression (see `PATH_REVERSED`) finds a path in `line`, in
    time linear in its length: searched forwards, it started at each slash of a run like
    `/+/+/+…` and read the rest of it (a megabyte of such output took hours to truncate)."""
    return PATH_REVERSED.search(line[::-1]) is not None


def _may_log_error(text: str) -> bool:
    """False only for a text `LOG_ERROR` cannot match."""
    return "ERROR" in text or "FATAL" in text or "CRITICAL" in text or "level" in text


def _may_name_a_test(line: str) -> bool:
    """False only for a line `FAILING_TEST` cannot match: each of its branches needs "FAIL",
    "ERROR", "not ok" or a cross mark."""
    return (
        "FAIL" in line
        or "ERROR" in line
        or "not ok" in line
        or "\u2717" in line
        or "\u2718" in line
        or "\u00d7" in line
    )


def elided(cut_chars: int, kept: list[str], what: str = "tool output") -> str:
    """The marker for a cut stretch of output (or of `what` else), with the salient lines it
    keeps."""
    if not kept:
        return f"[… {cut_chars:,} characters of {what} truncated …]"
    return "\n".join(
        [
            f"[… {cut_chars:,} characters of {what} truncated; {len(kept)} salient "
            "line(s) of them kept: …]",
            *kept,
            "[… end of the salient lines …]",
        ]
    )
