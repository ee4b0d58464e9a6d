"""The ledger's error lines are the lines of an output that the error pattern matches, and
the exception that ends each Python traceback, whatever the text: the quick scan that skips
lines naming no failure finds the same ones."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.domain.ledger_errors import (
    ERROR_CHARS,
    ERROR_LINE,
    EXCEPTION,
    error_lines,
    reports_failure,
)

PIECES = st.sampled_from(
    [
        "Error:",
        "ValueError: bad value",
        "error[E0425]:",
        " error: cannot find",
        "FAILED tests/test_x.py::test_y",
        "FAILEDX",
        "xfatal:",
        "KeyError",
        "error[",
        "]:",
        ":",
        "fatal: not a git repository",
        "panic: runtime error",
        "Traceback (most recent call last)",
        "Traceback (most recent call last):\n",
        "    Traceback (most recent call last):\n",
        '  File "a.py", line 3, in <module>\n',
        "StopIteration",
        'File "b.py", line 1\n',
        "main()\n",
        "KeyError: 'k'\n",
        "\u200b",
        "During handling of the above exception",
        "Exception",
        "ERROR:",
        "errors",
        "no errors",
        "\n",
        "\r\n",
        "\u2028",
        "\x0b",
        "  ",
        "ok",
        "Über",
    ]
)
outputs = st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=30).map("".join)


def by_definition(text: str, is_error: bool) -> list[str]:
    """Every non-blank line, stripped, that the pattern matches (the first one too when the
    output is an error); and after each line the pattern matches that starts a traceback,
    the first non-blank line indented no deeper than it that is neither a frame (`File "`)
    nor the line of code after such a frame (unless it reads as an exception), taken when
    it reads as an exception; capped and without repeats."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = dict.fromkeys([lines[0][:ERROR_CHARS]] if is_error and lines else [])
    head: int | None = None
    code_next = False
    for line in text.splitlines():
        body = line.lstrip()
        indent = len(line) - len(body)
        closing = None
        if head is not None and body and indent <= head:
            if body.startswith('File "'):
                code_next = True
            elif code_next and EXCEPTION.match(body) is None:
                code_next = False
            else:
                head, closing = None, body
        pattern = ERROR_LINE.search(line.strip()) is not None
        if pattern or (closing is not None and EXCEPTION.match(closing)):
            found[line.strip()[:ERROR_CHARS]] = None
        if pattern and line.strip().startswith("Traceback (most recent call"):
            head, code_next = indent, False
    return list(found)


@given(outputs, st.booleans())
def test_error_lines_are_the_lines_the_pattern_matches(text: str, is_error: bool) -> None:
    assert error_lines(text, is_error) == by_definition(text, is_error)


@given(outputs)
def test_the_quick_failure_check_agrees_with_the_pattern(text: str) -> None:
    for line in [text, *text.splitlines()]:
        assert reports_failure(line) == bool(ERROR_LINE.search(line))
