"""Helpers of the red-team tests (`tests/security/test_red_team*.py`): how a Markdown reader
splits and reads a summary, a summarizer that records what it is given, and a measure of how
the work of a function grows with its input."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from abridged.application.ports import Summary
from abridged.domain.messages import Message

MARKDOWN_LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""CommonMark's line endings: a `\\r` alone ends a line too."""
ANY_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
"""What any reader (Python's `splitlines`, a tokenizer) may take for the end of a line."""
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[^`]*")


def headings(markdown: str, breaks: re.Pattern[str] = ANY_LINE_BREAK) -> dict[str, str]:
    """The body of each `## title` section of `markdown`, its lines split at `breaks`; a line
    inside a fenced block (backticks or tildes, closed by a run as long or longer of the same
    character) is quoted text, never a heading."""
    found: dict[str, str] = {}
    title = ""
    fence: str | None = None
    for line in breaks.split(markdown):
        opening = FENCE.fullmatch(line)
        if fence is not None:
            if re.fullmatch(
                r" {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*", line
            ):
                fence = None
        elif opening is not None:
            fence = opening.group(1)
        elif line.startswith("## "):
            title = line[3:].strip()
            continue
        found[title] = found.get(title, "") + line + "\n"
    return found


class Recording:
    """A summarizer that records the messages and earlier texts it is given, and answers
    with `reply` (by default a fixed sentence)."""

    def __init__(self, reply: str = "The user asked for work; it was done.") -> None:
        self.reply = reply
        self.calls: list[tuple[tuple[Message, ...], tuple[str, ...]]] = []

    @property
    def name(self) -> str:
        return "recording"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
        earlier: Sequence[str] = (),
    ) -> Summary:
        self.calls.append((tuple(messages), tuple(earlier)))
        return Summary(self.reply, "recording-v1")


def _best_time(function: Callable[[str], object], text: str, calls: int, runs: int = 3) -> float:
    """The least CPU time this process spent on `calls` calls, of `runs` runs: CPU time, not
    wall time, since a test worker beside it on a busy machine (CI's other worker, its
    database) would stretch the wall time of one size and not the other's."""
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        for _ in range(calls):
            function(text)
        best = min(best, time.process_time() - start)
    return best


def growth(function: Callable[[str], object], make: Callable[[int], str], small: int) -> float:
    """How much longer `function` takes on `make(8 * small)` than on `make(small)` (the best
    of three runs each, each run of as many calls as take the small input 5 ms): about 8
    when its work is linear in the text, about 64 when it is quadratic. A ratio, never a
    duration: the machine's speed cancels out."""
    little_text = make(small)
    calls = 1
    while (little := _best_time(function, little_text, calls)) < 0.005 and calls < 4096:
        calls *= 2
    large = make(8 * small)
    # A super-linear function is run once on the large input (its ratio is already plain),
    # then twice more to confirm it: one run slowed by the machine's other work is not one.
    ratio = _best_time(function, large, calls, runs=1) / little
    for _ in range(2):
        if ratio <= LINEAR:
            break
        # Both sizes measured again: a busy moment may have slowed either one.
        ratio = min(
            ratio,
            _best_time(function, large, calls, runs=1)
            / min(little, _best_time(function, little_text, calls)),
        )
    if ratio > LINEAR:
        return ratio
    return _best_time(function, large, calls) / little


LINEAR = 32.0
"""The growth (`growth`, for an 8 times larger input) a linear function stays below, with
room for a noisy machine; a quadratic one is near 64."""
