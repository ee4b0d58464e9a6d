"""What the API's own compaction counts for. A summary the API wrote counts as it is sent
in each request: the block while it leads, the text it reads as once another chunk leads or
a compaction summarizes its reply. A reply the API compacted does not calibrate: its usage
counts the context after the compaction, not the request sent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from abridged.application.auditing import audit_session
from abridged.application.ports import SentPrefix, Summary
from abridged.application.service import Sessions
from abridged.domain.messages import Message
from abridged.domain.reply_shapes import leads_with_compaction
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.conftest import MakeApp
from tests.support.builders import words
from tests.support.checks import check_request, play
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()


class BlockSummarizer:
    """Writes each summary as the API's signed `compaction` block, as its on-demand
    compaction does."""

    name = "api-compaction"

    def __init__(self) -> None:
        self.calls = 0

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
        sent: SentPrefix | None = None,
    ) -> Summary:
        self.calls += 1
        text = words(100, "summary")
        block = {"type": "compaction", "content": text, "signature": f"c2ln{self.calls}"}
        return Summary(text=text, model="m", block=json.dumps(block, separators=(",", ":")))


def start(app: Sessions, **settings: Any) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=20_000,
        max_output_tokens=1_000,
        system="You are a careful coding agent.",
        settings=CompactionSettings(threshold_floor_tokens=0, ledger_share=0.0, **settings),
    )


def texts(body: dict[str, Any]) -> list[str]:
    return [b.get("text", "") for m in body["messages"] for b in m["content"]]


def test_the_apis_summary_counts_once_a_compaction_summarizes_its_reply(app: Sessions) -> None:
    session_id = start(app, summaries_share=0.5)  # room to keep it beside the next chunk
    play(app, session_id, [Message.user("Fix the parser."), Message.assistant("Reading it.")])
    app.append_message(session_id, Message.user("Go on."))
    summary = words(2_000, "handled")
    block = {"type": "compaction", "content": summary, "signature": "c2ln"}
    app.prepare_request(session_id)
    app.record_reply(
        session_id, {"role": "assistant", "content": [block, {"type": "text", "text": "On it."}]}
    )
    play(app, session_id, [Message.user("Next."), Message.assistant("Done.")])
    app.append_message(session_id, Message.user("And then?"))

    app.compact(session_id)

    # Our compaction summarized the reply: the API's summary is sent as text, and counted.
    body = check_request(app.prepare_request(session_id), COUNTER)  # the estimate is exact
    assert any(summary in text for text in texts(body))
    (adopted,) = [e for e in app.history(session_id) if isinstance(e, Session.ApiCompacted)]
    assert adopted.summary.tokens > 2_000
    assert audit_session(app, session_id).ok  # replay derives the same counts


def test_an_earlier_block_counts_as_text_once_a_later_block_leads(make_app: MakeApp) -> None:
    app = make_app(summarizer=BlockSummarizer())
    session_id = start(app)
    for i in range(2):
        play(app, session_id, [Message.user(f"Step {i}."), Message.assistant(words(3_000))])
        app.append_message(session_id, Message.user("Go on."))
        app.compact(session_id)
        app.prepare_request(session_id)
        app.record_reply(session_id, Message.assistant("Going on."))
    app.append_message(session_id, Message.user("Next."))

    # The second block leads; the first reads as text, whose framing costs more than it.
    body = check_request(app.prepare_request(session_id), COUNTER)  # the estimate is exact
    assert body["messages"][0]["content"][0]["signature"] == "c2ln2"
    assert any(t.startswith('<conversation-summary generation="1"') for t in texts(body))


def test_a_reply_the_api_compacted_leaves_the_calibration_as_it_was(app: Sessions) -> None:
    session_id = start(app)
    for i in range(3):
        app.append_message(session_id, Message.user(f"Question {i}: " + words(500)))
        sent = app.prepare_request(session_id).context.raw_estimate
        usage = {"input_tokens": sent, "output_tokens": 5}  # the estimate was right
        app.record_reply(session_id, Message.assistant("Done."), usage=usage, request_estimate=sent)
    assert app.session(session_id).calibration == 1.0
    app.append_message(session_id, Message.user("Go on."))
    sent = app.prepare_request(session_id).context.raw_estimate
    summary = words(50, "done")
    # What the API returns when its threshold compaction ran: the top-level input is the
    # compacted context; the compaction entry of `iterations` read the request sent.
    reply = {
        "role": "assistant",
        "content": [
            {"type": "compaction", "content": summary, "signature": "c2ln"},
            {"type": "text", "text": "Going on."},
        ],
        "usage": {
            "input_tokens": 100,
            "output_tokens": 10,
            "iterations": [
                {"type": "compaction", "input_tokens": sent, "output_tokens": 60},
                {"type": "message", "input_tokens": 100, "output_tokens": 10},
            ],
        },
    }

    app.record_reply(session_id, reply, request_estimate=sent)

    assert app.session(session_id).calibration == 1.0  # it was 0.75
    replayed: Session = app.repository.get(session_id)
    assert replayed.calibration == 1.0
    app.append_message(session_id, Message.user("Next: " + words(2_000)))
    check_request(app.prepare_request(session_id), COUNTER, calibration=1.0)
    replies = [e for e in app.history(session_id) if isinstance(e, Session.MessageAppended)]
    compacted = next(e for e in replies if leads_with_compaction(e.message))
    assert compacted.request_estimate == sent
    assert not compacted.calibrates
