"""A long text counted in two pieces on two threads: the same count as counted whole.

cl100k's pieces never run from a line break on into a character that is not white space, so a
text cut there counts as its two pieces do, whatever comes before the line break or after the
cut: odd unicode, lone surrogates (JSON can carry them), long runs without white space.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from abridged.adapters import token_counters
from abridged.adapters.token_counters import (
    EXACT_COUNT_CHARS,
    SPLIT_COUNT_CHARS,
    TiktokenCounter,
    pieces,
    sampled_count,
)

exact = TiktokenCounter._exact

ODD = (
    "<|endoftext|>",
    "e\u0301\u0301",
    "\u200b\u200d",
    "🧑‍💻🏳️‍🌈",
    "\x00\x07\x1c\x1f\x85",
    "\u2028\u2029\u3000\xa0",
    "שלום",
    "日本語のテキスト",
    "\ufeff",
    "\ud800\udc00",
    "\udfff",
    "'s 'll",
    "1234567",
    "\r\n\r\n",
    " \t \n",
)

piece = st.one_of(
    st.text(st.characters(), max_size=40),
    st.sampled_from(ODD),
    st.builds(
        lambda c, n: c * n, st.sampled_from(["x", "QUJD", "9", "=", "数"]), st.integers(1, 600)
    ),
)
lines = st.lists(piece, min_size=1, max_size=12).map("\n".join)


def cuts(text: str) -> Iterator[int]:
    """Every place `TiktokenCounter` may cut `text`."""
    return (found.end() for found in token_counters._CUT.finditer(text))


@settings(max_examples=300)
@given(text=lines)
@example(text="a\n\ud800b")
@example(text="x!\n'sx")
@example(text="  \n\n\u0301x")
def test_a_text_cut_after_a_line_break_counts_as_its_two_pieces(text: str) -> None:
    whole = exact(text)
    for cut in cuts(text):
        assert exact(text[:cut]) + exact(text[cut:]) == whole, (cut, text)


@settings(max_examples=25)
@given(text=lines, runs=st.integers(1, 3))
def test_a_long_text_counts_the_same_in_pieces_on_two_threads(text: str, runs: int) -> None:
    long = "\n".join([text] * (SPLIT_COUNT_CHARS // max(len(text), 1) + 1) * runs)
    assert len(long) >= SPLIT_COUNT_CHARS

    assert TiktokenCounter().count(long) == exact(long)


def test_the_helper_thread_takes_pieces_of_a_long_text(monkeypatch: pytest.MonkeyPatch) -> None:
    counted_on: list[str] = []
    helper_count = token_counters._helper._take_and_count

    def recording(shared: token_counters._SharedSum) -> int:
        counted_on.append(threading.current_thread().name)
        return helper_count(shared)

    monkeypatch.setattr(token_counters._helper, "_take_and_count", recording)
    text = "".join(f"line {k}: all fine\n" for k in range(10_000))
    counter = TiktokenCounter()
    counter.count("warm")
    token_counters._helper.start()

    assert counter.count(text) == exact(text)
    assert counted_on
    assert counted_on[0].startswith("abridged-counting")


@settings(max_examples=100)
@given(text=lines, size=st.integers(1, 200))
def test_a_text_is_cut_into_pieces_only_where_counts_add_up(text: str, size: int) -> None:
    cut = pieces(text, size)

    assert "".join(cut) == text
    assert all(cut) or cut == [""]
    ends = list(itertools.accumulate(len(p) for p in cut))[:-1]
    assert set(ends) <= set(cuts(text))


def test_a_long_text_is_cut_into_pieces_of_about_the_size_asked() -> None:
    text = "".join(f"line {k}: all fine\n" for k in range(10_000))

    cut = pieces(text)

    assert abs(len(cut) - len(text) / token_counters.PIECE_CHARS) <= 1
    assert all(abs(len(p) - token_counters.PIECE_CHARS) < 40 for p in cut[:-1])


def test_a_busy_helper_leaves_the_caller_to_count_it_all() -> None:
    counter = TiktokenCounter()
    counter.count("warm")
    token_counters._helper.start()
    executor = token_counters._helper._executor
    assert executor is not None
    release = threading.Event()
    busy = executor.submit(release.wait, 10)
    text = "".join(f"line {k}: all fine\n" for k in range(4_000))
    try:
        assert counter.count(text) == exact(text)
        assert not busy.done()
    finally:
        release.set()
    busy.result()


def test_a_sampled_count_is_the_same_with_its_windows_on_two_threads() -> None:
    text = "".join(f"{k:06d} ERROR worker crashed: {'x' * (k % 50)}\n" for k in range(12_000))
    assert len(text) > EXACT_COUNT_CHARS

    assert TiktokenCounter().count(text) == sampled_count(text, exact)


def test_a_text_without_a_place_to_cut_is_counted_whole() -> None:
    run = "QUJDRA" * 6_000 + "\n" + " x" * 100

    assert pieces(run) == [run]
    assert TiktokenCounter().count(run) == exact(run)


def test_without_a_second_core_there_is_no_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    helper = token_counters.CountingHelper()
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    helper.start()

    assert helper._executor is None
    assert helper.sum_counts(["a\n", "b"]) == exact("a\n") + exact("b")


def test_a_helper_without_an_encoder_of_its_own_leaves_the_counting_to_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tiktoken

    def refused(*args: object, **kwargs: object) -> None:
        raise ValueError("no encoder here")

    monkeypatch.setattr(tiktoken, "Encoding", refused)
    helper = token_counters.CountingHelper()
    TiktokenCounter().count("warm")
    helper.start()
    texts = ["first line\n", "second line\n", "third"]

    assert helper.sum_counts(texts) == sum(map(exact, texts))


def test_a_process_that_cannot_start_a_thread_counts_on_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr("concurrent.futures.ThreadPoolExecutor.submit", refused)
    helper = token_counters.CountingHelper()
    TiktokenCounter().count("warm")
    helper.start()

    assert helper._executor is None
    assert helper.sum_counts(["a\n", "b"]) == exact("a\n") + exact("b")
