"""The ledger's error lines are the lines of an output that the error pattern matches, and
the exception that ends each Python traceback, whatever the text: the quick scan that skips
lines naming no failure finds the same ones."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.domain.ledger_errors import ERROR_CHARS, ERROR_LINE, error_lines, reports_failure

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
    output is an error), and after a line the pattern matches that starts a traceback, the
    first non-blank line indented no deeper than it, unless it starts "During handling";
    capped and without repeats."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = dict.fromkeys([lines[0][:ERROR_CHARS]] if is_error and lines else [])
    head: int | None = None
    for line in text.splitlines():
        stripped, indent = line.strip(), len(line) - len(line.lstrip())
        last = False
        if head is not None and stripped and indent <= head:
            head, last = None, not stripped.startswith("During handling")
        if ERROR_LINE.search(stripped) or last:
            found[stripped[:ERROR_CHARS]] = None
        if ERROR_LINE.search(stripped) and stripped.startswith("Traceback (most recent call"):
            head = indent
    return list(found)


@given(outputs, st.booleans())
def test_error_lines_are_the_lines_the_pattern_matches(text: str, is_error: bool) -> None:
    assert error_lines(text, is_error) == by_definition(text, is_error)


@given(outputs)
def test_the_quick_failure_check_agrees_with_the_pattern(text: str) -> None:
    for line in [text, *text.splitlines()]:
        assert reports_failure(line) == bool(ERROR_LINE.search(line))
