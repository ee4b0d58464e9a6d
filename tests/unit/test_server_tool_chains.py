"""A chain of paused server-tool replies (`stop_reason: "pause_turn"`): each continuation
starts with the results of the calls the reply before it made, so no cut falls inside the
chain (`abridged.domain.reply_shapes.results_carried`). However long the chain grows, the
session stays usable: every request is valid and in budget, shown degraded if it must, and
only what can never be reduced is refused, when the reply that brings it is recorded
(docs/content.md#never-stuck).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.application.auditing import audit_session
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.errors import ContextTooSmallError
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, web_fetch, web_fetched, words
from tests.support.checks import check_request, stored_version
from tests.support.counting import MemoCounter

COUNTER = MemoCounter(TiktokenCounter())
WEB_FETCH: dict[str, Any] = {"type": "web_fetch_20250910", "name": "web_fetch"}
SERVER_TOOLS: tuple[dict[str, Any], ...] = (*TOOLS, WEB_FETCH)


def real_app() -> Sessions:
    return Sessions(
        counter=COUNTER,
        summarizer=ExtractiveSummarizer(COUNTER),
        env={"PERSISTENCE_MODULE": "eventsourcing.popo"},
    )


def thought(size: int, i: int) -> list[dict[str, Any]]:
    if not size:
        return []
    return [{"type": "thinking", "thinking": words(size, f"idea{i}"), "signature": f"sig{i}"}]


def checked(app: Sessions, session_id: UUID) -> PreparedRequest:
    prepared = app.prepare_request(session_id)
    check_request(prepared, COUNTER, app.session(session_id).calibration)
    return prepared


def start(
    app: Sessions,
    window: int,
    *,
    system_words: int = 0,
    ledger_share: float = 0.0,
    model: str = "claude-opus-4-8",
) -> UUID:
    session_id = app.start_session(
        model=model,
        context_window=window,
        max_output_tokens=1_000,
        system="You are a research agent. " + words(system_words, "rule"),
        tools=SERVER_TOOLS,
        settings=CompactionSettings(ledger_share=ledger_share),
    )
    for t in range(2):
        app.append_message(session_id, Message.user(f"Task {t}: read src/mod_{t}.py " + words(300)))
        checked(app, session_id)
        app.record_reply(
            session_id,
            {"role": "assistant", "content": [{"type": "text", "text": "Done " + words(200)}]},
        )
    return session_id


def paused_chain(
    app: Sessions,
    session_id: UUID,
    *,
    links: int,
    page: int,
    thinking: int = 0,
    client_every: int = 0,
) -> list[PreparedRequest]:
    """A prompt, then a reply paused on a fetch, then `links` replies each starting with the
    page the one before fetched (`page` words) and paused on the next fetch; every
    `client_every`-th one calls a client tool beside it, whose result (a page long) comes
    back first. Each request is checked; they are returned."""
    app.append_message(session_id, Message.user("Read every page linked from the index."))
    requests = [checked(app, session_id)]
    opening = [*thought(thinking, 0), {"type": "text", "text": "Fetching."}, web_fetch(0)]
    app.record_reply(session_id, {"role": "assistant", "content": opening})
    for i in range(1, links + 1):
        requests.append(checked(app, session_id))
        content = [web_fetched(i - 1, page), *thought(thinking, i)]
        content.append({"type": "text", "text": f"Page {i - 1} read. " + words(50)})
        content.append(web_fetch(i))
        if client_every and i % client_every == 0:
            read = {
                "type": "tool_use",
                "id": f"toolu_{i}",
                "name": "read_file",
                "input": {"path": f"notes/{i}.md"},
            }
            app.record_reply(session_id, {"role": "assistant", "content": [*content, read]})
            result = {
                "type": "tool_result",
                "tool_use_id": f"toolu_{i}",
                "content": words(page, "note"),
            }
            app.append_message(session_id, {"role": "user", "content": [result]})
        else:
            app.record_reply(session_id, {"role": "assistant", "content": content})
    requests.append(checked(app, session_id))
    closing = [web_fetched(links, page), {"type": "text", "text": "All pages read."}]
    app.record_reply(session_id, {"role": "assistant", "content": closing})
    app.append_message(session_id, Message.user("Summarize them."))
    requests.append(checked(app, session_id))
    return requests


def assert_replay_is_live(app: Sessions, session_id: UUID) -> None:
    live = app.session(session_id)
    replayed = None
    for event in app.history(session_id):
        replayed = event.mutate(replayed)
    assert replayed is not None
    for name, value in live.__dict__.items():
        if name != "_pending_events":
            assert getattr(replayed, name) == value, name
    audit = audit_session(app, session_id)
    assert audit.ok, (audit.mismatches, audit.chain)


CHAINS = [
    pytest.param(8_000, 12, 300, 0, 0, 0, 0.0, id="8k-12-short-pages"),
    pytest.param(8_000, 6, 3_000, 0, 0, 1_500, 0.0, id="8k-6-long-pages-long-system"),
    pytest.param(8_000, 12, 3_000, 0, 2, 0, 0.1, id="8k-12-long-pages-client-calls-ledger"),
    pytest.param(16_000, 12, 300, 250, 0, 0, 0.0, id="16k-12-thinking"),
    pytest.param(16_000, 12, 3_000, 200, 3, 1_500, 0.1, id="16k-12-thinking-client-ledger"),
    pytest.param(32_000, 12, 3_000, 400, 0, 0, 0.1, id="32k-12-thinking-long-pages"),
]


@pytest.mark.parametrize(
    ("window", "links", "page", "thinking", "client_every", "system_words", "ledger_share"),
    CHAINS,
)
def test_a_chain_of_paused_replies_is_always_sent_shown_degraded_if_it_must(
    window: int,
    links: int,
    page: int,
    thinking: int,
    client_every: int,
    system_words: int,
    ledger_share: float,
) -> None:
    # The chain outgrows the budget (alone, or beside a long system prompt), but shown at its
    # smallest (pages head and tail, thinking and server calls whole) it fits.
    app = real_app()
    session_id = start(app, window, system_words=system_words, ledger_share=ledger_share)

    paused_chain(
        app, session_id, links=links, page=page, thinking=thinking, client_every=client_every
    )

    assert_replay_is_live(app, session_id)


@pytest.mark.parametrize(
    ("window", "page", "thinking", "client_every"),
    [(8_000, 300, 150, 2), (16_000, 3_000, 150, 0)],
    ids=["8k-short-pages-client-calls", "16k-long-pages"],
)
def test_a_chain_whose_thinking_is_bound_to_its_prefix_is_sent_once_shown_smaller(
    window: int, page: int, thinking: int, client_every: int
) -> None:
    # On a model that binds thinking to its prefix, reducing the chain takes the thinking
    # after the first message reduced out of view. A reply whose thinking was taken out
    # was skipped by the reduction, and its fetched page, shown whole beside it, left the
    # request over the budget at every try.
    app = real_app()
    session_id = start(app, window, ledger_share=0.1, system_words=1_500, model="claude-fable-5-1")

    paused_chain(app, session_id, links=12, page=page, thinking=thinking, client_every=client_every)

    assert_replay_is_live(app, session_id)


def test_a_chain_that_outgrew_the_budget_is_not_compacted_again_at_every_request() -> None:
    app = real_app()
    session_id = start(app, 8_000, ledger_share=0.1)
    paused_chain(app, session_id, links=12, page=3_000, client_every=2)
    app.record_reply(
        session_id, {"role": "assistant", "content": [{"type": "text", "text": "Summary."}]}
    )
    app.append_message(session_id, Message.user("Fetching is done; " + words(40)))

    first = checked(app, session_id)
    version = stored_version(app, session_id)
    again = [checked(app, session_id) for _ in range(3)]

    assert stored_version(app, session_id) == version  # nothing more decided or written
    assert all(p.compaction is None for p in again)
    assert all(p.context.estimate == first.context.estimate for p in again)
    assert_replay_is_live(app, session_id)


def test_a_paused_continuation_that_cannot_fit_even_at_its_smallest_is_refused_at_record() -> None:
    # Thinking in a paused turn goes back whole: a chain whose thinking alone outgrows the
    # budget cannot be sent, so the reply that would make it so is refused, nothing written,
    # and the turn can still be continued from the reply before it.
    app = real_app()
    session_id = start(app, 8_000)
    app.append_message(session_id, Message.user("Read every page linked from the index."))
    checked(app, session_id)
    app.record_reply(
        session_id, {"role": "assistant", "content": [*thought(1_500, 0), web_fetch(0)]}
    )
    refused = None
    for i in range(1, 12):
        checked(app, session_id)
        before = len(app.history(session_id))
        reply = {
            "role": "assistant",
            "content": [web_fetched(i - 1, 300), *thought(1_500, i), web_fetch(i)],
        }
        try:
            app.record_reply(session_id, reply)
        except ContextTooSmallError as error:
            refused = error
            assert len(app.history(session_id)) == before
            break
    assert refused is not None
    checked(app, session_id)  # the paused reply before it is still continued
    assert not [e for e in app.history(session_id) if isinstance(e, Session.CompactionFailed)]
    assert_replay_is_live(app, session_id)


def searched(i: int, title_words: int) -> dict[str, Any]:
    """A web search's result whose page titles (sent back unchanged, as the encrypted
    parts are) are `title_words` words long."""
    hits = [
        {
            "type": "web_search_result",
            "url": f"https://example.com/{i}/{k}",
            "title": words(title_words, f"title{k}"),
            "encrypted_content": "RW5jcnlwdGVk",
            "page_age": None,
        }
        for k in range(2)
    ]
    return {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{i}", "content": hits}


def test_a_chain_reply_whose_search_result_cannot_shrink_gives_its_share_to_its_calls() -> None:
    # Reduced to one cap, a reply's blocks share what its thinking and server calls leave;
    # a search result whose titles cannot be cut kept its share unused, and the client
    # call's long input beside it was left whole: the reply stayed over the cap, and the
    # request over the budget, at every prepare.
    app = real_app()
    session_id = app.start_session(
        model="claude-opus-4-8",
        context_window=4_000,
        max_output_tokens=500,
        system="You are a research agent.",
        tools=(*SERVER_TOOLS, {"type": "web_search_20250305", "name": "web_search"}),
    )
    app.append_message(session_id, Message.user("Find the release notes."))
    checked(app, session_id)
    search = {"type": "server_tool_use", "id": "srvtoolu_0", "name": "web_search", "input": {}}
    app.record_reply(session_id, {"role": "assistant", "content": [search]})
    checked(app, session_id)
    read = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "read_file",
        "input": {"path": words(190, "dir")},
    }
    content = [searched(0, 150), *thought(200, 1), web_fetch(1), read]
    app.record_reply(session_id, {"role": "assistant", "content": content})
    app.append_message(
        session_id,
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    )
    for i in range(2, 8):
        checked(app, session_id)
        content = [web_fetched(i - 1, 100), web_fetch(i)]
        app.record_reply(session_id, {"role": "assistant", "content": content})
    checked(app, session_id)
    app.record_reply(
        session_id,
        {"role": "assistant", "content": [web_fetched(7, 100), {"type": "text", "text": "Done."}]},
    )
    app.append_message(session_id, Message.user("Thanks."))
    checked(app, session_id)
    assert_replay_is_live(app, session_id)
