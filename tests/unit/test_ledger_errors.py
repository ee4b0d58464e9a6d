"""The error lines the ledger quotes: a Python traceback's last line whatever its exception is
called, and what a pasted log reports past the head of a long prompt."""

from __future__ import annotations

import pytest

from abridged.domain.ledger import render_ledger
from abridged.domain.ledger_errors import error_lines
from abridged.domain.ledger_extraction import REQUEST_CHARS, extract
from abridged.domain.messages import Message


def traceback(exception: str, frames: int = 3) -> str:
    stack = "".join(
        f'  File "/srv/app/jobs/step_{i}.py", line {10 + i}, in run_{i}\n    run_{i + 1}()\n'
        for i in range(frames)
    )
    return f"Traceback (most recent call last):\n{stack}{exception}\n"


@pytest.mark.parametrize(
    "exception",
    [
        'psycopg2.errors.UniqueViolation: duplicate key value violates "orders_pkey"',
        "StopIteration",
        "KeyboardInterrupt",
        "requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='api', port=443)",
        "django.core.exceptions.ImproperlyConfigured: SECRET_KEY must not be empty",
    ],
)
def test_a_traceback_s_last_line_is_an_error_line_whatever_the_exception_is_called(
    exception: str,
) -> None:
    output = "running the import\n" + traceback(exception) + "exit status 1\n"

    assert exception in error_lines(output)


def test_a_chained_traceback_gives_each_exception_and_not_the_line_between() -> None:
    output = (
        traceback("StopIteration")
        + "\nDuring handling of the above exception, another exception occurred:\n\n"
        + traceback("app.errors.Exhausted: no more pages")
    )

    lines = error_lines(output)

    assert "StopIteration" in lines
    assert "app.errors.Exhausted: no more pages" in lines
    assert not any(line.startswith("During handling") for line in lines)


def test_lines_after_a_traceback_s_exception_are_not_taken_for_it() -> None:
    output = traceback("KeyError: 'sku'") + "Retrying in 5 seconds\nDone.\n"

    assert error_lines(output) == ["Traceback (most recent call last):", "KeyError: 'sku'"]


def test_a_long_prompt_keeps_the_error_lines_its_pasted_log_reports_past_its_head() -> None:
    ask = "The payments worker crashed last night. Here is the log:\n\n```\n"
    log = "".join(f"2026-11-12 03:{i % 60:02d}:00 INFO batch {i} settled\n" for i in range(80))
    failure = "psycopg.errors.SerializationFailure: could not serialize access"
    prose = "4. **The cause:** it raises an `IndexError: No item with that key` here."
    text = ask + log + traceback(failure, frames=8) + "```\n" + prose + "\nPlease fix it."
    assert len(text) > REQUEST_CHARS
    assert failure not in text[:REQUEST_CHARS]
    prompt = Message.from_wire({"role": "user", "content": text})

    entries = extract([(3, prompt)])

    errors = [e for e in entries if e.kind == "error"]
    assert [(e.text, e.first_position, e.source) for e in errors] == [(failure, 3, "")]
    assert failure in render_ledger(entries)


def test_a_prompt_kept_whole_adds_no_error_entry_of_its_own() -> None:
    text = "It fails with\n" + traceback("ValueError: bad sku 'A-1'")
    assert len(text) <= REQUEST_CHARS
    prompt = Message.from_wire({"role": "user", "content": text})

    assert [e.kind for e in extract([(0, prompt)]) if e.kind == "error"] == []


def test_a_traceback_pasted_without_its_indent_still_gives_its_exception() -> None:
    output = (
        "Traceback (most recent call last):\n"
        'File "app.py", line 3, in <module>\n'
        "main()\n"
        'File "app.py", line 9, in main\n'
        "KeyError: 'sku'\n"
    )

    assert error_lines(output) == ["Traceback (most recent call last):", "KeyError: 'sku'"]


@pytest.mark.parametrize(
    "after",
    [
        "\nCan you deploy to staging after fixing it?\n",  # the user's question
        '  File "tests/fixtures.py", line 1\n"""\n',  # a test fixture quoting a traceback
        "\u200b\n",
    ],
)
def test_what_follows_a_traceback_s_frames_is_taken_only_when_it_reads_as_an_exception(
    after: str,
) -> None:
    assert error_lines("Traceback (most recent call last):\n" + after) == [
        "Traceback (most recent call last):"
    ]


def test_a_markdown_heading_of_a_long_prompt_is_not_an_error_line() -> None:
    text = "x " * REQUEST_CHARS + "\n## Error: what to do when the cache is cold\nRetry twice."
    prompt = Message.from_wire({"role": "user", "content": text})

    assert [e for e in extract([(0, prompt)]) if e.kind == "error"] == []
