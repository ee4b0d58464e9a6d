"""The `Summarizer` contract, run against the fake and every real summarizer."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import CharRatioCounter, TiktokenCounter
from abridged.application.ports import Summarizer, SummarizerError, TokenCounter
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock
from tests.support.fakes import FakeSummarizer, FakeTokenCounter


def coding_session() -> list[Message]:
    """A short agent session: a request, a failing command, an edit, a passing command."""
    return [
        Message.user("The CSV export drops the last row. Please fix it in reports/export.py."),
        Message.assistant(
            "I will reproduce it first.",
            ToolUseBlock("toolu_01", "bash", {"command": "python -m pytest tests/test_export.py"}),
        ),
        Message.user(
            ToolResultBlock(
                "toolu_01",
                "FAILED tests/test_export.py::test_last_row - AssertionError: 2 != 3",
                is_error=True,
            )
        ),
        Message.assistant(
            "The root cause is an off-by-one in the row slice.",
            ToolUseBlock(
                "toolu_02",
                "str_replace_editor",
                {"command": "str_replace", "path": "reports/export.py", "old_str": "[:-1]"},
            ),
        ),
        Message.user(ToolResultBlock("toolu_02", "The file reports/export.py has been edited.")),
        Message.assistant("Fixed: the export now keeps every row."),
    ]


any_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=300)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Any mix of prompts, tool calls and results (errors included) with arbitrary text."""
    messages = [Message.user(draw(any_text.filter(str.strip)))]
    for turn in range(draw(st.integers(0, 6))):
        tool_id = f"toolu_{turn}"
        name = draw(st.sampled_from(["bash", "str_replace_editor", "Read", "run_tests"]))
        key = draw(st.sampled_from(["command", "path", "query"]))
        messages.append(
            Message.assistant(
                draw(any_text.filter(str.strip)),
                ToolUseBlock(tool_id, name, {key: draw(any_text)}),
            )
        )
        messages.append(
            Message.user(ToolResultBlock(tool_id, draw(any_text), is_error=draw(st.booleans())))
        )
    return messages


class SummarizerContract:
    """What every `Summarizer` promises. Subclasses build it and say how its limit is counted."""

    def make_summarizer(self) -> Summarizer:
        raise NotImplementedError

    def make_counter(self) -> TokenCounter:
        """The counter the summarizer's `max_tokens` is measured with."""
        raise NotImplementedError

    def summarize(
        self, messages: Sequence[Message], max_tokens: int, instructions: str | None = None
    ) -> str:
        summary = self.make_summarizer().summarize(
            messages, max_tokens=max_tokens, instructions=instructions
        )
        assert summary.model.strip()
        return summary.text

    def test_name_is_a_non_empty_string(self) -> None:
        assert self.make_summarizer().name.strip()

    @pytest.mark.parametrize("max_tokens", [16, 20, 40, 100, 1_000, 10_000])
    def test_writes_non_blank_text_within_the_limit(self, max_tokens: int) -> None:
        text = self.summarize(coding_session(), max_tokens)
        assert text.strip()
        assert self.make_counter().count(text) <= max_tokens

    @pytest.mark.parametrize("max_tokens", [16, 60, 1_000])
    def test_focus_instructions_do_not_break_the_limit(self, max_tokens: int) -> None:
        instructions = "Focus on the CSV export and the off-by-one. " * 20
        text = self.summarize(coding_session(), max_tokens, instructions)
        assert text.strip()
        assert self.make_counter().count(text) <= max_tokens

    def test_any_conversation_fits_any_possible_limit(self) -> None:
        # Built per call: an inherited `@given` method would share its example database
        # entry across the different summarizers.
        @settings(max_examples=60, deadline=None)
        @given(messages=conversations(), max_tokens=st.integers(16, 400))
        def check(messages: list[Message], max_tokens: int) -> None:
            text = self.summarize(messages, max_tokens)
            assert text.strip()
            assert self.make_counter().count(text) <= max_tokens

        check()

    @pytest.mark.parametrize("max_tokens", [15, 1, 0, -5])
    def test_refuses_a_limit_too_small_for_a_summary(self, max_tokens: int) -> None:
        with pytest.raises(SummarizerError, match="max_tokens"):
            self.make_summarizer().summarize(coding_session(), max_tokens=max_tokens)

    def test_refuses_to_summarize_nothing(self) -> None:
        with pytest.raises(SummarizerError):
            self.make_summarizer().summarize([], max_tokens=1_000)


class TestFakeSummarizer(SummarizerContract):
    def make_summarizer(self) -> Summarizer:
        return FakeSummarizer()

    def make_counter(self) -> TokenCounter:
        return FakeTokenCounter()

    def test_fails_the_first_calls_it_is_told_to_then_recovers(self) -> None:
        summarizer = FakeSummarizer(fail=2)
        messages = coding_session()
        for _ in range(2):
            with pytest.raises(SummarizerError):
                summarizer.summarize(messages, max_tokens=100)
        assert summarizer.summarize(messages, max_tokens=100).text == summarizer.text
        assert summarizer.calls == [(tuple(messages), 100, None)] * 3

    def test_cuts_its_text_to_the_limit_in_words(self) -> None:
        summarizer = FakeSummarizer(" ".join(f"word{i}" for i in range(40)))
        assert summarizer.summarize(coding_session(), max_tokens=16).text.split() == [
            f"word{i}" for i in range(16)
        ]


class TestExtractiveSummarizerWithTiktoken(SummarizerContract):
    def make_summarizer(self) -> Summarizer:
        return ExtractiveSummarizer(TiktokenCounter())

    def make_counter(self) -> TokenCounter:
        return TiktokenCounter()


class TestExtractiveSummarizerWithCharRatio(SummarizerContract):
    def make_summarizer(self) -> Summarizer:
        return ExtractiveSummarizer(CharRatioCounter())

    def make_counter(self) -> TokenCounter:
        return CharRatioCounter()


class TestExtractiveSummarizerWithFakeCounter(SummarizerContract):
    def make_summarizer(self) -> Summarizer:
        return ExtractiveSummarizer(FakeTokenCounter())

    def make_counter(self) -> TokenCounter:
        return FakeTokenCounter()
