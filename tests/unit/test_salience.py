"""Salient truncation: an output shown head and tail keeps what matters from its middle."""

from __future__ import annotations

import inspect
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.domain.messages import Message, ToolResultBlock
from abridged.domain.pruning import head_tail
from abridged.domain.salience import PATH_REVERSED, names_a_path, salient_lines
from abridged.domain.tokens import block_tokens
from abridged.domain.truncation import marker, plan_truncations, shown, truncate_text
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()

TEST_RUN = "\n".join(
    [
        "collected 120 items",
        *(f"tests/test_mod.py::test_case_{i} PASSED" for i in range(60)),
        "tests/test_mod.py::test_case_60 FAILED",
        "Traceback (most recent call last):",
        '  File "/repo/runner.py", line 10, in <module>',
        "    main()",
        '  File "/repo/app/core.py", line 42, in main',
        "    load()",
        '  File "/repo/app/io.py", line 7, in load',
        "    raise KeyError(name)",
        "KeyError: 'config'",
        *(f"filler line {i} with nothing to see" for i in range(400)),
        "1 failed, 119 passed",
    ]
)


def test_the_lines_that_matter_are_picked_in_order_of_the_text() -> None:
    lines = salient_lines(TEST_RUN, 1_000)

    assert "tests/test_mod.py::test_case_60 FAILED" in lines
    assert "KeyError: 'config'" in lines
    # The last two frames of the traceback, not the first.
    assert 'File "/repo/app/io.py", line 7, in load' in lines
    assert 'File "/repo/app/core.py", line 42, in main' in lines
    assert 'File "/repo/runner.py", line 10, in <module>' not in lines
    assert not any(line.startswith("filler") for line in lines)
    assert lines == sorted(lines, key=TEST_RUN.index)


def test_errors_come_before_paths_when_the_cap_is_short() -> None:
    listing = "\n".join(f"src/pkg/module_{i}.py" for i in range(500))
    text = f"{listing}\nerror: linker failed for src/pkg/module_3.py\n{listing}"

    lines = salient_lines(text, 50)

    assert lines == ["error: linker failed for src/pkg/module_3.py"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(TEST_RUN.splitlines()), max_size=80), st.integers(0, 600))
def test_salient_lines_fit_their_cap_and_come_from_the_text(lines: list[str], cap: int) -> None:
    text = "\n".join(lines)

    found = salient_lines(text, cap)

    assert sum(len(line) + 1 for line in found) <= cap
    assert all(line in text for line in found)
    assert len(set(found)) == len(found)


def test_a_truncated_output_keeps_its_middle_errors_and_says_what_was_cut() -> None:
    head, tail = 200, 100
    cut = len(TEST_RUN) - head - tail

    text = truncate_text(TEST_RUN, head, tail, salient_chars=400)

    assert text.startswith(TEST_RUN[:head])
    assert text.endswith(TEST_RUN[-tail:])
    assert f"[… {cut:,} characters of tool output truncated;" in text
    assert "KeyError: 'config'" in text
    assert "end of the salient lines" in text


def test_without_a_salient_cap_a_truncation_shows_as_it_always_did() -> None:
    # Truncations recorded before salient lines existed must render byte for byte the same.
    assert (
        truncate_text(TEST_RUN, 200, 100)
        == TEST_RUN[:200] + marker(len(TEST_RUN) - 300) + TEST_RUN[-100:]
    )


def test_a_100k_character_output_is_cut_within_its_allowance_and_keeps_the_error() -> None:
    noise = "\n".join(f"log {i}: request served in {i % 97} ms" for i in range(3_000))
    output = f"{noise}\nfatal: database connection lost at db/pool.py:88\n{noise}"
    assert len(output) > 100_000
    message = Message.user(ToolResultBlock("toolu_1", output))
    counts = [block_tokens(b, COUNTER.count) for b in message.content]

    truncations, shown_counts = plan_truncations(message, 2_000, COUNTER.count, counts, 1_000)

    text = shown(message, truncations).content[0]
    assert isinstance(text, ToolResultBlock)
    assert "fatal: database connection lost at db/pool.py:88" in text.text
    assert shown_counts[0] <= 2_000 + 8
    assert COUNTER.count(text.text) + 8 == shown_counts[0]


def test_a_pruned_output_keeps_its_salient_lines_up_to_the_cap() -> None:
    pruned = head_tail(TEST_RUN, 100, 100, salient_chars=200)
    plain = head_tail(TEST_RUN, 100, 100)

    assert "KeyError: 'config'" in pruned
    assert "salient line(s) of them kept" in pruned
    assert "KeyError" not in plain
    assert len(pruned) <= len(plain) + 200 + 120


def _salient_lines_reference(text: str, max_chars: int) -> list[str]:
    """`salient_lines` as first written: every pattern tried on every line (its definition)."""
    from abridged.domain.ledger import ERROR_LINE, PATH_WORD
    from abridged.domain.salience import (
        FAILING_TEST,
        FRAME,
        LINE_CHARS,
        PRIORITY_ERROR,
        PRIORITY_FRAME,
        PRIORITY_PATH,
        PRIORITY_TEST,
        TRACEBACK_END,
    )

    if max_chars <= 0 or not text:
        return []
    lines = text.splitlines()
    ranked: dict[str, tuple[int, int]] = {}

    def add(index: int, priority: int) -> None:
        line = lines[index].strip()[:LINE_CHARS]
        if line and (line not in ranked or ranked[line][0] > priority):
            ranked[line] = (priority, ranked.get(line, (priority, index))[1])

    frames: list[int] = []
    for index, line in enumerate(lines):
        if FRAME.match(line):
            frames.append(index)
            continue
        if frames and TRACEBACK_END.match(line.strip()):
            for frame in frames[-2:]:
                add(frame, PRIORITY_FRAME)
            frames = []
        if ERROR_LINE.search(line):
            add(index, PRIORITY_ERROR)
        elif FAILING_TEST.search(line):
            add(index, PRIORITY_TEST)
        elif PATH_WORD.search(line):
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


# Pieces of the lines the patterns look for, and of lines that only look like them.
LINE_PIECES = st.sampled_from(
    [
        "FAILED",
        "FAIL",
        "FAIL:",
        "ERROR",
        "ERROR:",
        "error",
        "Error",
        "error[E0308]:",
        "not ok",
        "ok",
        "✗",
        "✘",
        "×",
        "...",
        "... FAIL",
        "... ERROR",
        "Traceback",
        "Traceback (most recent call last)",
        'File "',
        '  File "/repo/a.py", line 3, in f',
        "KeyError",
        "ValueError:",
        "IOException:",
        "Exception",
        "rror",
        "SystemExit",
        "KeyboardInterrupt",
        "fatal:",
        "panic:",
        "src/app/main.py",
        "./run.sh",
        "~/x/y",
        "http://host/a/b",
        "a/b",
        "/",
        ":",
        " ",
        "\t",
        "word",
        "tests/test_x.py::test_y",
        "\r",
        "\x0b",
        "\u2028",
        "é",
        "1",
    ]
)
LINES = st.lists(st.lists(LINE_PIECES, max_size=6).map("".join), max_size=30).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(LINES, st.integers(-1, 400))
def test_salient_lines_choose_what_trying_every_pattern_on_every_line_chooses(
    text: str, max_chars: int
) -> None:
    assert salient_lines(text, max_chars) == _salient_lines_reference(text, max_chars)


def test_salient_lines_on_a_test_run_as_the_reference_does() -> None:
    assert salient_lines(TEST_RUN, 600) == _salient_lines_reference(TEST_RUN, 600)
    assert salient_lines(TEST_RUN, 600)  # the run's failure is found


def test_a_large_text_cut_again_shows_what_cutting_it_afresh_shows() -> None:
    # Large texts' truncations are remembered; each cut must still be its own.
    from abridged.domain.truncation import REMEMBERED_TEXT_CHARS

    text = "\n".join(f"src/mod_{i}.py: ok" for i in range(600)) + "\nKeyError: 'x'\n" + "ok\n" * 900
    assert len(text) >= REMEMBERED_TEXT_CHARS
    for head, tail, salient in [(500, 500, 300), (500, 500, 20), (400, 600, 300), (500, 500, 300)]:
        fresh_truncation = inspect.unwrap(truncate_text)(text, head, tail, salient)
        fresh_head_tail = inspect.unwrap(head_tail)(text, head, tail, salient)
        assert truncate_text(text, head, tail, salient) == fresh_truncation
        assert head_tail(text, head, tail, salient) == fresh_head_tail
    assert "KeyError: 'x'" in truncate_text(text, 500, 500, 300)
    assert "KeyError: 'x'" not in truncate_text(text, 500, 500, 5)


# How a line was found to name a path until `names_a_path`: truncations already stored show
# the lines it chose, so `names_a_path` must choose exactly the same ones.
_FORWARD = r"(?<![\w:/.])(?:~|\.{1,2})?/?(?:[\w.@+-]{1,255}/)+[\w.@+-]*\w"
_PATH_CHARS = st.sampled_from(["a", "1", "_", "/", "/", "+", "-", "@", ".", ":", "~", " ", "é"])


@settings(max_examples=400)
@given(st.lists(_PATH_CHARS, max_size=14).map("".join))
def test_a_line_names_a_path_where_the_forward_search_found_one(line: str) -> None:
    assert names_a_path(line) == bool(re.search(_FORWARD, line))


@settings(max_examples=400)
@given(st.lists(_PATH_CHARS, max_size=18).map("".join))
def test_the_backward_search_keeps_the_forward_ones_bound_on_a_folders_name(line: str) -> None:
    """The same with folder names of at most 3 characters, where short lines reach it."""
    forward = _FORWARD.replace("{1,255}", "{1,3}")
    backward = PATH_REVERSED.pattern.replace("{1,255}", "{1,3}")
    assert bool(re.search(backward, line[::-1])) == bool(re.search(forward, line))
