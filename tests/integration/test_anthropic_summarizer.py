"""`AnthropicSummarizer` through the real SDK, against a local server that speaks the API."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from abridged.adapters.anthropic.prompts import DEFAULT_PROMPT, SummaryPrompt
from abridged.adapters.anthropic.summarizer import (
    DEFAULT_MODEL,
    MAX_SUMMARY_TOKENS,
    AnthropicSummarizer,
)
from abridged.application.ports import (
    PromptTooLongError,
    ProviderUnavailableError,
    Summarizer,
    SummarizerError,
    TokenCounter,
)
from abridged.domain.messages import Message, RedactedThinkingBlock, ThinkingBlock, ToolUseBlock
from tests.contract.test_summarizer_contract import SummarizerContract, coding_session
from tests.support import fake_anthropic as api
from tests.support.fake_anthropic import (  # noqa: F401 (fixtures)
    FakeAnthropic,
    fake_anthropic_fixture,
    fake_anthropic_server_fixture,
)
from tests.support.fakes import FakeTokenCounter

SESSION_MODEL = "claude-opus-4-7"


@pytest.fixture
def server(fake_anthropic: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """The fake API; every request body it received must be valid."""
    yield fake_anthropic
    assert not fake_anthropic.violations


def summarizer(server: FakeAnthropic, **options: object) -> AnthropicSummarizer:
    return AnthropicSummarizer(server.client(), **options)  # type: ignore[arg-type]


def request_text(server: FakeAnthropic, index: int = -1) -> str:
    """The one user message of a summary request, as text."""
    (message,) = server.requests[index].body["messages"]
    (block,) = message["content"]
    assert message["role"] == "user"
    assert block["type"] == "text"
    text: str = block["text"]
    return text


def test_sends_the_conversation_the_prompt_and_the_focus_in_one_request(
    server: FakeAnthropic,
) -> None:
    summarizer(server).summarize(
        coding_session(), max_tokens=500, instructions="Keep the failing test name."
    )

    (request,) = server.requests
    assert request.body["model"] == DEFAULT_MODEL
    assert request.body["max_tokens"] == 500
    assert request.body["system"] == DEFAULT_PROMPT.system
    assert "tools" not in request.body
    text = request_text(server)
    assert "The CSV export drops the last row. Please fix it in reports/export.py." in text
    # The error of an is_error result, verbatim and marked; the call it answers, with its input.
    assert (
        "[tool result of bash (toolu_01) is_error=true]\n"
        "FAILED tests/test_export.py::test_last_row - AssertionError: 2 != 3"
    ) in text
    assert (
        '[tool call bash (toolu_01)] input: {"command": "python -m pytest tests/test_export.py"}'
        in text
    )
    assert "[tool result of str_replace_editor (toolu_02)]\n" in text
    assert text.index("</conversation>") < text.index(DEFAULT_PROMPT.instructions)
    assert text.rstrip().endswith("Keep the failing test name.")


def test_the_default_prompt_asks_for_what_an_agent_needs_as_reference_material() -> None:
    prompt = (DEFAULT_PROMPT.system + DEFAULT_PROMPT.instructions).lower()
    for needed in (
        "goals",
        "constraints",
        "environment",
        "verbatim",
        "commands",
        "files",
        "modified",
        "decisions",
        "why",
        "open items",
        "next",
        "reference material",
        "not as instructions",
    ):
        assert needed in prompt, needed


def test_the_reply_becomes_the_summary_with_its_model_and_usage(server: FakeAnthropic) -> None:
    server.enqueue(
        api.message(
            "The export dropped the last row; the slice is fixed.",
            model="claude-haiku-4-5-20251001",
            usage={"input_tokens": 900, "output_tokens": 12, "cache_read_input_tokens": 100},
        )
    )

    summary = summarizer(server).summarize(coding_session(), max_tokens=500)

    assert summary.text == "The export dropped the last row; the slice is fixed."
    assert summary.model == "claude-haiku-4-5-20251001"
    assert (summary.input_tokens, summary.output_tokens) == (1_000, 12)


def test_a_reply_cut_at_max_tokens_is_still_a_summary(server: FakeAnthropic) -> None:
    summary = summarizer(server).summarize(coding_session(), max_tokens=16)
    assert summary.text.split() == api.CANNED_TEXT.split()[:16]
    assert summary.output_tokens == 16


def test_a_huge_limit_is_capped(server: FakeAnthropic) -> None:
    summarizer(server).summarize(coding_session(), max_tokens=150_000)
    assert server.requests[-1].body["max_tokens"] == MAX_SUMMARY_TOKENS


def test_an_overloaded_summarizer_model_falls_back_to_the_session_model(
    server: FakeAnthropic,
) -> None:
    server.fail_model(DEFAULT_MODEL, api.overloaded())

    summary = summarizer(server, max_retries=1).summarize(
        coding_session(), max_tokens=500, session_model=SESSION_MODEL
    )

    assert [request.model for request in server.requests] == [
        DEFAULT_MODEL,
        DEFAULT_MODEL,
        SESSION_MODEL,
    ]
    assert summary.model == SESSION_MODEL
    assert server.requests[0].body["messages"] == server.requests[-1].body["messages"]


@pytest.mark.parametrize(
    "failure",
    [api.model_not_found(DEFAULT_MODEL), api.prompt_too_long()],
    ids=["not-found", "window-too-small"],
)
def test_other_failures_the_session_model_may_not_share_fall_back_too(
    server: FakeAnthropic, failure: api.Response
) -> None:
    server.fail_model(DEFAULT_MODEL, failure)
    summary = summarizer(server).summarize(
        coding_session(), max_tokens=500, session_model=SESSION_MODEL
    )
    assert summary.model == SESSION_MODEL
    assert [request.model for request in server.requests] == [DEFAULT_MODEL, SESSION_MODEL]


def test_everything_failing_is_a_summarizer_error(server: FakeAnthropic) -> None:
    server.fail_model(DEFAULT_MODEL, api.overloaded())
    server.fail_model(SESSION_MODEL, api.api_error())

    with pytest.raises(SummarizerError) as raised:
        summarizer(server, max_retries=0).summarize(
            coding_session(), max_tokens=500, session_model=SESSION_MODEL
        )

    assert DEFAULT_MODEL in str(raised.value)
    assert SESSION_MODEL in str(raised.value)
    assert isinstance(raised.value.__cause__, ProviderUnavailableError)
    assert len(server.requests) == 2


def test_no_fallback_when_it_is_turned_off(server: FakeAnthropic) -> None:
    server.fail_model(DEFAULT_MODEL, api.overloaded())
    with pytest.raises(SummarizerError):
        summarizer(server, max_retries=0, fallback_to_session_model=False).summarize(
            coding_session(), max_tokens=500, session_model=SESSION_MODEL
        )
    assert [request.model for request in server.requests] == [DEFAULT_MODEL]


def test_no_fallback_for_a_failure_the_session_model_would_share(server: FakeAnthropic) -> None:
    server.enqueue(api.authentication_error())
    with pytest.raises(SummarizerError, match="401 authentication_error"):
        summarizer(server).summarize(coding_session(), max_tokens=500, session_model=SESSION_MODEL)
    assert len(server.requests) == 1


def test_without_a_model_of_its_own_it_uses_the_session_model(server: FakeAnthropic) -> None:
    own = summarizer(server, model=None)
    assert own.name == "anthropic:session-model"
    assert own.summarize(coding_session(), max_tokens=100, session_model=SESSION_MODEL).model == (
        SESSION_MODEL
    )
    with pytest.raises(SummarizerError, match="no summarizer model"):
        own.summarize(coding_session(), max_tokens=100)


def test_a_refused_summary_is_not_taken_for_one_and_falls_back(server: FakeAnthropic) -> None:
    # A classifier refusal is a normal reply with what was written before it and
    # `stop_reason: "refusal"` (build-with-claude/handling-stop-reasons: "retry on a fallback
    # model"). It was taken for the summary: the range left the context for half a sentence.
    refused = api.message("The export dropped the", stop_reason="refusal")
    server.enqueue(refused)
    summary = summarizer(server).summarize(
        coding_session(), max_tokens=500, session_model=SESSION_MODEL
    )
    assert summary.model == SESSION_MODEL
    assert summary.text != "The export dropped the"
    assert [request.model for request in server.requests] == [DEFAULT_MODEL, SESSION_MODEL]

    server.enqueue(refused)
    with pytest.raises(SummarizerError, match="declined"):
        summarizer(server, fallback_to_session_model=False).summarize(
            coding_session(), max_tokens=500, session_model=SESSION_MODEL
        )


def test_a_blank_reply_is_a_summarizer_error(server: FakeAnthropic) -> None:
    server.enqueue(api.message([]), api.message("  \n "))
    for _ in range(2):
        with pytest.raises(SummarizerError, match="wrote no text"):
            summarizer(server).summarize(coding_session(), max_tokens=100)


def test_thinking_is_left_out_unless_asked_for(server: FakeAnthropic) -> None:
    messages = [
        Message.user("Why does the export drop a row?"),
        Message.assistant(
            ThinkingBlock("The slice [:-1] looks suspicious.", "sig-1"),
            RedactedThinkingBlock("opaque-bytes"),
            ToolUseBlock("toolu_01", "bash", {"command": "grep -n ':-1' reports/export.py"}),
        ),
    ]

    summarizer(server).summarize(messages, max_tokens=100)
    summarizer(server, include_thinking=True).summarize(messages, max_tokens=100)

    without, with_thinking = request_text(server, 0), request_text(server, 1)
    assert "suspicious" not in without
    assert "[thinking]\nThe slice [:-1] looks suspicious." in with_thinking
    assert "opaque-bytes" not in with_thinking
    assert json.dumps({"command": "grep -n ':-1' reports/export.py"}) in without


def test_a_custom_prompt_is_used(server: FakeAnthropic) -> None:
    prompt = SummaryPrompt(system="Write terse notes.", instructions="Notes, please.")
    summarizer(server, prompt=prompt).summarize(coding_session(), max_tokens=100)
    assert server.requests[-1].body["system"] == "Write terse notes."
    assert request_text(server).endswith("Notes, please.")
    with pytest.raises(ValueError, match="non-blank"):
        SummaryPrompt(system=" ", instructions="x")


def test_the_cause_of_a_final_failure_is_kept(server: FakeAnthropic) -> None:
    server.enqueue(api.prompt_too_long())
    with pytest.raises(SummarizerError) as raised:
        summarizer(server).summarize(coding_session(), max_tokens=100)
    assert isinstance(raised.value.__cause__, PromptTooLongError)


class TestAnthropicSummarizerContract(SummarizerContract):
    """The shared contract; the fake API cuts its canned text to `max_tokens` words, which is
    what `FakeTokenCounter` counts."""

    @pytest.fixture(autouse=True)
    def _server(self, fake_anthropic: FakeAnthropic) -> Iterator[None]:
        self.server = fake_anthropic
        yield
        assert not fake_anthropic.violations

    def make_summarizer(self) -> Summarizer:
        return AnthropicSummarizer(self.server.client(), max_retries=0)

    def make_counter(self) -> TokenCounter:
        return FakeTokenCounter()
