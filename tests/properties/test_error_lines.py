"""The ledger's error lines are the lines of an output that the error pattern matches,
whatever the text: the quick scan that skips lines naming no failure finds the same ones."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.domain.ledger_extraction import ERROR_CHARS, ERROR_LINE, error_lines

PIECES = st.sampled_from(
    [
        "Error:",
        "ValueError: bad value",
        "error[E0425]:",
        " error: cannot find",
        "FAILED tests/test_x.py::test_y",
        "fatal: not a git repository",
        "panic: runtime error",
        "Traceback (most recent call last)",
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
    output is an error), capped and without repeats."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = dict.fromkeys([lines[0][:ERROR_CHARS]] if is_error and lines else [])
    found.update(dict.fromkeys(line[:ERROR_CHARS] for line in lines if ERROR_LINE.search(line)))
    return list(found)


@given(outputs, st.booleans())
def test_error_lines_are_the_lines_the_pattern_matches(text: str, is_error: bool) -> None:
    assert error_lines(text, is_error) == by_definition(text, is_error)
