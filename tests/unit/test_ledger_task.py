"""The session's first prompt is its task: the facts ledger keeps it whole further than other
prompts, where its room allows, and drops it last among the requests."""

from __future__ import annotations

from abridged.adapters.anthropic.request import render_request
from abridged.application.service import Sessions
from abridged.domain.ledger import (
    REQUEST_CHARS,
    TASK_CHARS,
    TASK_SHARE,
    LedgerEntry,
    bounded,
    extract,
    render_ledger,
    task_chars,
)
from abridged.domain.messages import Message
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, turn, words
from tests.support.fakes import FakeSummarizer, FakeTokenCounter

COUNTER = FakeTokenCounter()
COMMIT = "ff61416da46dd4a0712d330c59c25d6e8fbf36af"


def task_text() -> str:
    """An issue of about 3,900 characters whose details come at its end."""
    body = "\n".join(f"Step {k}: the reader keeps the previous offset here." for k in range(70))
    return (
        f"Fix the regression in the config reader.\n{body}\n"
        f"It was introduced by commit {COMMIT} in `BashTool.run`; see RFC-0038."
    )


def log_text() -> str:
    """A pasted log of about 4,000 characters whose last line matters."""
    lines = [f"2026-11-27 10:{k:02d}:00 INFO worker {k} processed a batch" for k in range(80)]
    return "\n".join([*lines, "ERROR final marker line"])


def test_the_task_is_kept_whole_where_the_room_holds_it_and_other_prompts_are_cut() -> None:
    task, log = task_text(), log_text()
    assert REQUEST_CHARS < len(task) <= TASK_CHARS
    assert len(log) > REQUEST_CHARS
    messages = list(enumerate([Message.user(task), Message.assistant("On it."), Message.user(log)]))
    room = int(COUNTER.count(task) / TASK_SHARE) + 1

    cap = task_chars(messages, room, COUNTER.count)
    requests = [e.text for e in extract(messages, task=cap) if e.kind == "request"]

    assert cap >= len(task)
    assert requests == [task, log[:REQUEST_CHARS]]


def test_a_task_past_its_share_keeps_a_head_that_fits_it_and_never_less_than_a_prompt() -> None:
    task = task_text()
    messages = [(0, Message.user(task))]
    tokens = COUNTER.count(task)

    half = task_chars(messages, round(tokens / TASK_SHARE / 2), COUNTER.count)
    tiny = task_chars(messages, 10, COUNTER.count)

    assert REQUEST_CHARS < half < len(task)
    assert COUNTER.count(task[:half]) <= tokens / 2
    assert tiny == REQUEST_CHARS
    # Not the session's start: no prompt there is its task.
    assert task_chars([(5, Message.assistant("Done."))], 10_000, COUNTER.count) == REQUEST_CHARS


def test_the_task_is_the_last_request_a_short_ledger_drops() -> None:
    requests = tuple(
        LedgerEntry("request", f"Request number {k}: {words(12)}", k, k) for k in range(20)
    )
    room = COUNTER.count(render_ledger(requests[-8:]))

    kept, dropped = bounded(requests, room, COUNTER.count)

    assert requests[0] in kept
    assert requests[1] in dropped


def run(window: int) -> str:
    """A session whose task is followed by enough work to compact; the text of the last
    request's messages."""
    app = Sessions(
        counter=COUNTER,
        summarizer=FakeSummarizer(),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )
    session_id = app.start_session(
        model="claude-test",
        context_window=window,
        max_output_tokens=500,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(threshold_floor_tokens=0),
    )
    messages = list(turn(task_text(), [words(300, "output")] * 3))
    for k in range(14):
        messages += list(turn(f"Next step {k}.", [words(600, "output")] * 2))
    body: dict[str, object] = {}
    for message in messages:
        if message.role.value == "assistant":
            prepared = app.prepare_request(session_id)
            body = render_request(prepared.context, model="claude-test", max_tokens=500)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    assert app.session(session_id).generation >= 1
    return repr(body["messages"])


def test_after_compactions_a_request_still_holds_the_whole_task_where_the_window_has_room() -> None:
    sent = run(24_000)
    assert COMMIT in sent
    assert "RFC-0038" in sent
    # Where the ledger's share cannot hold it, its head stays and the end goes.
    small = run(8_000)
    assert "Fix the regression in the config reader." in small
    assert "It was introduced by commit" not in small
    # The values its end names are kept on their own lines (`value` entries).
    assert COMMIT in small
