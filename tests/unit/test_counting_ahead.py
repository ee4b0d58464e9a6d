"""A long text's count begun ahead on the helper thread, finished by the count that asks for
it: the same count as counted without it, exactly (stored sessions and replays hold them)."""

from __future__ import annotations

import pathlib
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters import token_counters
from abridged.adapters.http.wire import new_texts
from abridged.adapters.token_counters import (
    EXACT_COUNT_CHARS,
    SPLIT_COUNT_CHARS,
    TiktokenCounter,
    counting_ahead,
    pieces,
    sampled_count,
)
from tests.unit.test_counting_helper import exact, lines

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def helper() -> None:
    TiktokenCounter().count("warm")
    token_counters._helper.start()
    assert token_counters._helper.running


def whole(text: str) -> int:
    """The count without anything begun ahead."""
    return sampled_count(text, exact) if len(text) > EXACT_COUNT_CHARS else exact(text)


@settings(max_examples=20, deadline=None)
@given(text=lines, runs=st.integers(1, 12))
def test_a_count_begun_ahead_is_the_count(text: str, runs: int) -> None:
    long = "\n".join([text] * (SPLIT_COUNT_CHARS // max(len(text), 1) + 1) * runs)
    assert len(long) >= SPLIT_COUNT_CHARS

    with counting_ahead([long]):
        counted = TiktokenCounter().count(long)

    assert counted == whole(long)
    assert not token_counters._ahead


def real_log() -> str:
    """About 1 MB of real text: this project's documentation, sources and stored sessions
    (prose, code, JSON, tables), read in a fixed order."""
    parts: list[str] = []
    for pattern in ("docs/*.md", "tests/fixtures/*.json", "*/*.py", "tests/unit/*.py"):
        parts += (p.read_text(encoding="utf-8") for p in sorted(ROOT.glob(pattern)))
    text = "\n".join(parts)
    return text[: 1_000_000 - 1] + "\n"


def test_a_real_megabyte_counts_the_same_in_pieces_and_ahead() -> None:
    text = real_log()
    assert len(text) == 1_000_000, len(text)

    counted = exact(text)
    for size in (token_counters.PIECE_CHARS, 500):
        cut = pieces(text, size)
        assert len(cut) > 1_000_000 // size // 3
        assert sum(map(exact, cut)) == counted
    with counting_ahead([text]):
        assert TiktokenCounter().count(text) == sampled_count(text, exact)


def test_a_count_not_asked_for_is_dropped() -> None:
    text = "".join(f"line {k}: all fine\n" for k in range(40_000))
    with counting_ahead([text]):
        shared = token_counters._ahead[id(text)][1]
    assert not token_counters._ahead
    assert shared.take() is None
    if shared.helped is not None:
        shared.helped.result(timeout=10)


def test_an_equal_text_that_is_another_object_is_counted_on_its_own() -> None:
    text = "".join(f"line {k}: all fine\n" for k in range(5_000))
    copy = "".join(f"line {k}: all fine\n" for k in range(5_000))
    assert copy == text
    assert copy is not text
    with counting_ahead([text]):
        assert TiktokenCounter().count(copy) == exact(copy)
        assert id(text) in token_counters._ahead
        assert TiktokenCounter().count(text) == exact(text)


def test_a_busy_helper_leaves_a_count_begun_ahead_to_the_caller() -> None:
    executor = token_counters._helper._executor
    assert executor is not None
    release = threading.Event()
    busy = executor.submit(release.wait, 10)
    text = "".join(f"line {k}: all fine\n" for k in range(4_000))
    try:
        with counting_ahead([text]):
            assert TiktokenCounter().count(text) == exact(text)
        assert not busy.done()
    finally:
        release.set()
    busy.result()


def test_short_texts_are_not_counted_ahead() -> None:
    with counting_ahead(["short", "x" * (SPLIT_COUNT_CHARS - 1)]):
        assert not token_counters._ahead


def test_the_new_texts_are_the_last_messages_text_and_tool_results() -> None:
    messages = [
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "reply"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "tool_result", "tool_use_id": "t1", "content": "b"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "c"}, {"type": "image"}],
                },
                {"type": "image", "source": {"type": "base64", "data": "d"}},
            ],
        },
    ]

    assert new_texts(messages) == ["a", "b", "c"]
    assert new_texts([{"role": "user", "content": "e"}]) == ["e"]
    assert new_texts([]) == []
    assert new_texts("not messages") == []
    assert new_texts([{"role": "user"}]) == []
