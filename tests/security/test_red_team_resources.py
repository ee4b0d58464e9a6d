"""Content that would make abridged's own work super-linear (docs/security.md, "A red-team
pass"): a tool output of a `<` and a long run of spaces, of `a-a-a-…`, of blank lines around a
`password`, read by the framing escape, the redaction patterns and the ledger's extraction.
Each is measured at two sizes, eight times apart (`growth`): a ratio, never a duration."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from abridged.adapters.anthropic.prompts import escape_delimiters
from abridged.adapters.bootstrap import redact_passwords
from abridged.adapters.http.sse import ReplyAccumulator
from abridged.adapters.simulation.facts import extract_facts
from abridged.adapters.summarizers.earlier import read_summary
from abridged.adapters.summarizers.errors import error_snippets
from abridged.application.redaction import DefaultRedactor
from abridged.domain.framing import escape_framing
from abridged.domain.ledger import LedgerEntry, advance
from abridged.domain.ledger_extraction import carried, extract
from abridged.domain.ledger_runs import run_counts
from abridged.domain.ledger_values import values
from abridged.domain.messages import Message, Role, ToolResultBlock
from abridged.domain.rule_words import stated_rules
from abridged.domain.salience import LATEST_RULES, salient_lines
from abridged.domain.validation import check_sequence
from tests.support.red_team import LINEAR, growth

ESCAPES = {"escape_framing": escape_framing, "escape_delimiters": escape_delimiters}


@pytest.mark.parametrize("escape", ESCAPES.values(), ids=ESCAPES.keys())
@pytest.mark.parametrize(
    "make",
    [
        lambda n: "<" + " " * n,
        lambda n: "</" + "\u200b" * n,
        lambda n: "<c" + "\u2066" * n + "o",
        lambda n: ("<" + " " * 40) * (n // 41),
    ],
    ids=["spaces", "zero-width", "isolates", "many"],
)
def test_a_frame_escape_reads_a_long_run_once(
    escape: Callable[[str], str], make: Callable[[int], str]
) -> None:
    """The tag's `\\s*/?\\s*` read a run of n spaces after a `<` in n² ways: 8,000 spaces
    took 4 s, a megabyte hours."""
    assert growth(escape, make, 8_000) < LINEAR


REDACTOR = DefaultRedactor()
ATTACKS = {
    # `^\s*` at every line start read the rest of the blank lines (`(?m)` and `\s` spans
    # `\n`): 8,000 blank lines took 4 s.
    "blank lines": lambda n: "password\n" + "\n" * n,
    "blank lines, secret": lambda n: "token\n" + "\n" * n,
    # `[A-Z0-9_]*PASSWORD[A-Z0-9_]*` tried every split of a long name.
    "long name": lambda n: "PASSWORD" * (n // 8),
    "long secret name": lambda n: "SECRET" * (n // 6),
    # `.pgpass`: the host and user parts' `[…]*[A-Za-z][…]*`.
    "pgpass host": lambda n: ".pgpass " + "a" * n,
    "pgpass user": lambda n: ".pgpass h:1:db:" + "a" * n,
    # A scheme's `\b[A-Za-z][…]*://` started at each word of `a-a-a-…`.
    "scheme": lambda n: "://" + "a-" * (n // 2),
    # `\\*"name\\*"` started at each backslash of a run.
    "backslashes": lambda n: "value " + "\\" * n,
    # YAML's `- name:` with `[ \t]*-?[ \t]*`.
    "indent": lambda n: " " * n + "value:",
    # A quoted value without its closing quote.
    "open quote": lambda n: "password: '" + "a b " * (n // 4),
    "open quotes": lambda n: "password='" * (n // 10),
}


@pytest.mark.parametrize("make", ATTACKS.values(), ids=ATTACKS.keys())
def test_the_default_redactor_reads_crafted_text_in_linear_time(make: Callable[[int], str]) -> None:
    assert growth(REDACTOR.redact, make, 4_000) < LINEAR


def _ledger(text: str) -> object:
    return extract([(0, Message.user(text)), (1, Message.assistant(text))])


def test_the_ledgers_extraction_reads_ordinary_runs_in_linear_time() -> None:
    assert growth(_ledger, lambda n: "port 8080 " * (n // 10), 4_000) < LINEAR


def test_the_ledgers_extraction_reads_a_hyphenated_run_in_linear_time() -> None:
    assert growth(_ledger, lambda n: "a-" * (n // 2), 1_000) < LINEAR


@pytest.mark.parametrize(
    "make",
    [lambda n: "+" * n, lambda n: "%" * n, lambda n: "a+" * (n // 2)],
    ids=["pluses", "percents", "a-plus"],
)
def test_the_ledgers_values_read_a_run_of_an_emails_characters_in_linear_time(
    make: Callable[[int], str],
) -> None:
    """An email's local part (`[A-Za-z0-9._%+-]+@`) started at each `+` or `%` of a run and
    read to its end: a megabyte of a table's `+----+` borders took minutes to compact."""
    assert growth(lambda text: list(values(text)), make, 4_000) < LINEAR


MONEY_RUNS = {
    # An amount whose thousands a space groups, or a code before it, tried at each group.
    "space-grouped digits": lambda n: "1 234" + " 567" * (n // 4),
    "apostrophes": lambda n: "CHF 1" + "'1" * (n // 2),
    "codes and digits": lambda n: "EUR 1" * (n // 5),
    "ids of many parts": lambda n: "INV" + "-2026" * (n // 5),
}


@pytest.mark.parametrize("make", MONEY_RUNS.values(), ids=MONEY_RUNS.keys())
def test_amounts_and_ids_are_read_in_linear_time(make: Callable[[int], str]) -> None:
    """Money with its sign or code either side, and ids of several parts, by the ledger
    and by `simulate`'s measure."""
    assert growth(lambda text: list(values(text)), make, 4_000) < LINEAR
    assert growth(lambda text: extract_facts([Message.user(text)]), make, 1_000) < LINEAR


GLUED_RUNS = {
    # A host (`name.name:port`) started after each dot or hyphen of a run read it to its end.
    "dots": lambda n: "x/" + "a." * (n // 2),
    "hyphens": lambda n: "x/" + "a-" * (n // 2),
    "dots and hyphens": lambda n: "x/" + "a.1-" * (n // 4),
    "hex digits": lambda n: "x/" + "0" * n,
    "constant": lambda n: "x/" + "A_" * (n // 2),
    "quoted words": lambda n: '"a/' * (n // 3),
    "colons": lambda n: "x/" + "a:" * (n // 2),
    # A user at a host: a local part started at each `+`, a host read back at each dot.
    "pluses": lambda n: "x/" + "a+" * (n // 2) + "@b.co",
    "a host of one-letter labels": lambda n: "x/a@" + "a." * (n // 2),
    # An email's local part of Latin letters beyond ASCII, started at each of them.
    "accented letters": lambda n: "é" * n + "@",
    "accented pluses": lambda n: "x/" + "é+" * (n // 2) + "@b.co",
}


@pytest.mark.parametrize("make", GLUED_RUNS.values(), ids=GLUED_RUNS.keys())
def test_the_ledgers_glued_values_are_read_in_linear_time(make: Callable[[int], str]) -> None:
    """A word holding `@`, `/`, `:` or `=` is searched for the values glued in it."""
    assert growth(lambda text: list(values(text)), make, 4_000) < LINEAR


SIMULATED = {
    # A word before a number (`\b[A-Za-z_][\w-]{2,}`) started at each word of `w-w-w-…`.
    "hyphenated": lambda n: "w-" * (n // 2),
    # A word of another script before a number, in a text of that script without spaces.
    "other script": lambda n: "日本" * (n // 2),
    # A number before a currency code, at each digit of `1,1,1,…`.
    "digits and commas": lambda n: "1," * (n // 2),
}


@pytest.mark.parametrize("make", SIMULATED.values(), ids=SIMULATED.keys())
def test_simulates_facts_read_crafted_text_in_linear_time(make: Callable[[int], str]) -> None:
    """`simulate` measures the facts of a user's own logs: 20,000 characters of one of these
    took 3 s, a long log hours."""
    assert growth(lambda text: extract_facts([Message.user(text)]), make, 1_000) < LINEAR


@pytest.mark.parametrize(
    "make",
    [lambda n: "`" * n, lambda n: "``" * (n // 2) + " → done", lambda n: "` → " * (n // 4)],
    ids=["backticks", "backticks then an arrow", "arrows"],
)
def test_an_earlier_summarys_command_lines_are_read_in_linear_time(
    make: Callable[[int], str],
) -> None:
    """Reading back a command line (`` `…` → outcome ``) backtracked over a run of
    backticks: 8,000 took 16 s."""
    assert growth(lambda text: read_summary("## Commands\n- " + text), make, 1_000) < LINEAR


PATH_RUNS = {
    # Each slash after a `+` started a try that read the rest of the run.
    "slashes": lambda n: "/+" * (n // 2),
    # Each `+` of a long folder name started one.
    "long names": lambda n: ("/" + "+" * 255) * (n // 256),
    # A path first, then the run.
    "a path, then slashes": lambda n: "src/app.py " + "/+" * (n // 2),
}


@pytest.mark.parametrize("make", PATH_RUNS.values(), ids=PATH_RUNS.keys())
def test_a_tool_output_is_searched_for_paths_in_linear_time(make: Callable[[int], str]) -> None:
    """The salient lines of a cut output name paths: 8,000 characters of `/+/+…` took 0.6 s
    to truncate, a megabyte hours, on the way to storing the message."""
    assert growth(lambda text: salient_lines(text, 2_000, LATEST_RULES), make, 1_000) < LINEAR


def _call(text: str) -> Message:
    return Message.from_wire(
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": text}}
            ],
        }
    )


@pytest.mark.parametrize("make", PATH_RUNS.values(), ids=PATH_RUNS.keys())
def test_a_tool_calls_paths_are_found_in_linear_time(make: Callable[[int], str]) -> None:
    """The ledger's files and `simulate`'s paths of a tool call's input: the same runs."""
    assert growth(lambda text: extract([(0, _call(text))]), make, 1_000) < LINEAR
    assert growth(lambda text: extract_facts([_call(text)]), make, 1_000) < LINEAR


def test_a_prompt_of_many_distinct_rules_is_read_in_linear_time() -> None:
    """Each rule a prompt states was looked for among those found before it: 16,000 of
    them took a second, a megabyte of them seconds more per compaction."""

    def rules(n: int) -> str:
        return "".join(f"You must do thing {k}.\n" for k in range(n // 22))

    assert growth(lambda text: extract([(0, Message.user(text))]), rules, 40_000) < LINEAR


RULE_RUNS = {
    # Every position a word start whose letter opens a group of rule words.
    "hyphenated": lambda n: "n-" * (n // 2),
    # A modal word whose negation is looked for after it, over and over.
    "modal words": lambda n: "darf " * (n // 5),
    # A stem read to the end of its word, in one long word.
    "one long stem": lambda n: "vermeide" + "x" * n,
    # Sentences that end without a space.
    "full stops": lambda n: "。" * n,
}


@pytest.mark.parametrize("make", RULE_RUNS.values(), ids=RULE_RUNS.keys())
def test_rules_in_every_language_are_read_in_linear_time(make: Callable[[int], str]) -> None:
    """The rule words of eleven languages (`domain/rule_words.py`), in the ledger and in
    `simulate`'s measure."""
    assert growth(stated_rules, make, 4_000) < LINEAR
    assert growth(lambda text: extract_facts([Message.user(text)]), make, 4_000) < LINEAR


def _batch_answered(size: str) -> None:
    n = int(size)
    calls = Message.from_wire(
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"toolu_{i}", "name": "run", "input": {}}
                for i in range(n)
            ],
        }
    )
    results = Message.from_wire(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}
                for i in range(n)
            ],
        }
    )
    check_sequence(calls, results, frozenset)


def test_the_results_of_a_batch_of_parallel_calls_are_matched_in_linear_time() -> None:
    """Each result was looked for among the calls in a list: 16,000 parallel calls took
    4.7 s to answer."""
    assert growth(_batch_answered, str, 2_000) < LINEAR


ERROR_LINES = {
    # make's `*** ... Error 2` was `\*\*\*.*\bError \d+`: from each `***` of a line, read
    # to its end and back: 20,000 asterisks before an `error` took 5 s, a megabyte hours.
    "asterisks": lambda n: "*" * n + " error",
    "make markers": lambda n: "*** " * (n // 4) + "error",
    "a bundle's module markers": lambda n: "/***/ function(){throw error}" * (n // 29),
    # `exit code` then `\s*[:=]?\s*` before the number: a run of spaces split every way.
    "spaces after an exit code": lambda n: "exit code" + " " * n,
    # pytest's `E   ` then `\s+.*`.
    "spaces after pytest's E": lambda n: "E   " + " " * n + " error",
}


@pytest.mark.parametrize("make", ERROR_LINES.values(), ids=ERROR_LINES.keys())
def test_a_tool_outputs_error_lines_are_found_in_linear_time(make: Callable[[int], str]) -> None:
    """The extractive summary quotes a failed tool's error lines, read line by line."""
    assert growth(error_snippets, make, 1_000) < LINEAR


def test_spaces_after_a_line_number_are_read_in_linear_time() -> None:
    """A listing's line number then `\\s*[:|]?\\s*[-+]?\\s*` (source code, not an error):
    1,000 spaces after a `1` took 11 s and 2,000 took 89 s, split every way among the three
    runs. Measured from 100 characters: a cubic reading of 8,000 would take hours."""
    assert growth(error_snippets, lambda n: "1" + " " * n + " error", 100) < LINEAR


@pytest.mark.parametrize(
    "make",
    [lambda n: "a." * (n // 2), lambda n: "a-" * (n // 2) + "://u:p"],
    ids=["dots", "a scheme's run"],
)
def test_passwords_in_an_error_message_are_found_in_linear_time(
    make: Callable[[int], str],
) -> None:
    """The command line redacts store passwords from every error it prints, whatever the
    error quotes."""
    assert growth(redact_passwords, make, 2_000) < LINEAR


def _reply(text: str) -> list[tuple[int, Message]]:
    return [(0, Message.user("go on")), (1, Message.assistant(text))]


@pytest.mark.parametrize(
    "make",
    [
        lambda n: " ".join(f"helper_{k}" for k in range(n // 12)),
        lambda n: " ".join(f"`helper_{k}`" for k in range(n // 14)),
    ],
    ids=["mentions", "backticked"],
)
def test_a_reply_naming_thousands_of_functions_is_read_in_linear_time(
    make: Callable[[int], str],
) -> None:
    """Each name of a recent reply was looked for in the whole reply to learn whether the
    tail sends it (`carried`): a reply naming 30,000 functions took 5 s a compaction."""
    assert growth(lambda text: carried(_reply(text)), make, 50_000) < LINEAR


def test_new_mentions_are_looked_up_among_the_ledgers_words_in_linear_time() -> None:
    """A new mention is left out when another entry quotes it: looked for as a substring of
    every entry, 30,000 names against a ledger of 700 prompts took 14 s."""

    def compact(text: str) -> object:
        names = text.split()
        held = [LedgerEntry("command", f"make {name}_x", 0, 0) for name in names]
        return advance(held, 0, 1, extract(_reply(text)), 10**9, len)

    names = lambda n: " ".join(f"helper_{k}" for k in range(n // 12))  # noqa: E731
    assert growth(compact, names, 20_000) < LINEAR


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "1 passed, " * (n // 10),
        lambda n: "1" * (n - 7) + " passed",
        lambda n: "passed " * (n // 7),
        lambda n: "Ran 1 tests, " * (n // 13),
    ],
    ids=["counts", "digits", "words", "runs"],
)
def test_a_test_runs_counts_are_read_in_linear_time(make: Callable[[int], str]) -> None:
    """The ledger and `simulate` read a test run's counts from every tool output."""
    assert growth(run_counts, make, 1_000) < LINEAR
    assert growth(lambda text: extract_facts([_output(text)]), make, 1_000) < LINEAR


def _output(text: str) -> Message:
    return Message(Role.USER, (ToolResultBlock("toolu_1", text),))


DATE_RUNS = {
    "days": lambda n: "1 " * (n // 2),
    "months": lambda n: "April " * (n // 6),
    "days and months": lambda n: "19 de " * (n // 6) + "abril",
    "dotted days": lambda n: "3. " * (n // 3),
}


@pytest.mark.parametrize("make", DATE_RUNS.values(), ids=DATE_RUNS.keys())
def test_dates_written_with_their_months_name_are_read_in_linear_time(
    make: Callable[[int], str],
) -> None:
    """The ledger's values and `simulate`'s read dates written with a month's name
    (2026-11-29) from every prompt and reply."""
    assert growth(lambda text: list(values(text)), make, 4_000) < LINEAR
    assert growth(lambda text: extract_facts([Message.user(text)]), make, 4_000) < LINEAR


def _stream(text: str, chunk: int) -> None:
    accumulator = ReplyAccumulator()
    data = text.encode()
    for at in range(0, len(data), chunk):
        accumulator.feed(data[at : at + chunk])
    assert accumulator.message is not None


def _reply_of_deltas(n: int) -> str:
    delta: dict[str, Any] = {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "a few words " * 16}}  # fmt: skip
    items: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "m", "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *[delta] * (n // 300),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]  # fmt: skip
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in items)


@pytest.mark.parametrize(
    ("make", "chunk"),
    [
        (_reply_of_deltas, 1 << 20),  # many events in one chunk
        (_reply_of_deltas, 100),  # an event a chunk, about
        (lambda n: _reply_of_deltas(800)[:-40] + " " * n + _reply_of_deltas(800)[-40:], 64),
    ],
    ids=["deltas, one chunk", "deltas, small chunks", "one long event, small chunks"],
)
def test_a_streamed_reply_is_read_in_linear_time(make: Callable[[int], str], chunk: int) -> None:
    """The proxy reads every reply it relays on its event loop. Each delta was added to the
    text received so far (a copy of it), and each event cut from the front of the buffer:
    100,000 deltas took 5 s."""
    assert growth(lambda text: _stream(text, chunk), make, 200_000) < LINEAR
