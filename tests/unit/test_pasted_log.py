"""A log the user pastes into a prompt, too long to send whole, is shown head and tail like a
tool output, and keeps the lines that matter from its cut middle: the traceback the user asks
about."""

from __future__ import annotations

from abridged.adapters.anthropic.request import render_request
from abridged.application.service import Sessions
from abridged.domain.block_cuts import SALIENT_TEXT_CHARS
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()


def pasted_log(lines: int) -> str:
    rows = [f"2026-11-27 10:{k % 60:02d}:00 INFO worker {k} done" for k in range(lines)]
    middle = lines // 2
    rows[middle:middle] = [
        "Traceback (most recent call last):",
        '  File "/srv/app/jobs/import_rows.py", line 88, in run',
        "ValueError: bad row 17 in customers.csv",
    ]
    return "Why does the import job fail? Here is the log:\n" + "\n".join(rows)


def shown_text(prompt: str, salient_chars: int) -> str:
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=3_000,
        max_output_tokens=300,
        system="You are a careful agent.",
        tools=TOOLS,
        settings=CompactionSettings(salient_chars=salient_chars),
    )
    app.append_message(session_id, Message.user(prompt))
    prepared = app.prepare_request(session_id)
    body = render_request(prepared.context, model="claude-test", max_tokens=300)
    assert prepared.context.estimate <= prepared.context.budget
    return str(body["messages"][0]["content"][0]["text"])


def test_a_pasted_log_cut_to_fit_keeps_its_traceback_from_the_middle() -> None:
    prompt = pasted_log(1_500)

    text = shown_text(prompt, salient_chars=2_000)

    assert text.startswith("Why does the import job fail?")
    assert "characters of this message truncated; 3 salient line(s) of them kept" in text
    assert "ValueError: bad row 17 in customers.csv" in text
    assert 'File "/srv/app/jobs/import_rows.py", line 88, in run' in text
    # With salient lines off it is head and tail only, as before.
    plain = shown_text(prompt, salient_chars=0)
    assert "ValueError" not in plain
    assert "characters of this message truncated …]" in plain


def test_a_text_past_the_scanning_bound_is_cut_to_head_and_tail_only() -> None:
    prompt = pasted_log(SALIENT_TEXT_CHARS // 40)
    assert len(prompt) > SALIENT_TEXT_CHARS

    text = shown_text(prompt, salient_chars=2_000)

    assert "ValueError" not in text
    assert "characters of this message truncated …]" in text
