"""Esc in a long conversation through the proxy: the user stops a reply, and Claude Code
sends its next request with "[Request interrupted by user]" joined to the question it cut.

The question nobody waits for an answer to is taken back, so the next request goes on in the
same session, from the compactions it already has: no branch started from the client's whole
history (which would summarize the conversation again), and the request's prefix as it was
(what the provider's prompt cache holds)."""

from __future__ import annotations

import json
import threading

import anthropic
import httpx2

from abridged.adapters.http import ServeConfig
from abridged.adapters.http.history import stripped
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from tests.http.test_serve_disconnects import cut_mid_stream, wait_for_metric
from tests.http.test_serve_proxy import MODEL, SYSTEM, converse, only_session
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served

INTERRUPTED = {"type": "text", "text": "[Request interrupted by user]"}


def test_an_interrupted_question_in_a_compacted_session_goes_on_from_its_compactions(
    fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, context_window=6_000)
    release = threading.Event()
    with served(config, store) as url:
        with anthropic.Anthropic(api_key=TEST_API_KEY, base_url=url, max_retries=0) as sdk:
            history, _ = converse(
                sdk, [f"Task {n}: " + "inspect the module " * 60 for n in range(12)]
            )
        session_id = only_session(store)
        compactions = len(store.compactions(session_id))
        assert compactions  # a long conversation, compacted on the way

        # The user asks, and presses Esc while the answer streams.
        question = {"role": "user", "content": [{"type": "text", "text": "Why the 500?"}]}
        fake_anthropic.enqueue(fake.held(fake.message("Because the"), release))
        try:
            cut_mid_stream(url, [*history, question], system=SYSTEM, max_tokens=400)
            # The upstream's stream is closed before it could end: the reply was cut.
            assert fake_anthropic.abandoned.acquire(timeout=10)
        finally:
            release.set()
        wait_for_metric(url, "abridged_serve_withdrawn 1")
        cut = fake_anthropic.requests_to()[-1].body

        # The next request: the cut question with the interruption joined, and a new prompt.
        interrupted = {"role": "user", "content": [*question["content"], INTERRUPTED]}
        then = {"role": "user", "content": "Look at the logs instead."}
        answer = httpx2.post(
            f"{url}/v1/messages",
            json={
                "model": MODEL,
                "max_tokens": 400,
                "system": SYSTEM,
                "messages": [*history, interrupted, then],
            },
            headers={"x-api-key": TEST_API_KEY},
        )
        assert answer.status_code == 200, answer.text
        sent = fake_anthropic.requests_to()[-1].body

    assert only_session(store) == session_id  # no branch
    assert len(store.compactions(session_id)) == compactions  # nothing summarized again
    # Everything before the question is sent as it was: the prompt cache still holds it.
    assert stripped(sent["messages"][:-1]) == stripped(cut["messages"][:-1])
    assert stripped(sent["system"]) == stripped(cut["system"])
    last = json.dumps(sent["messages"][-1])
    assert "Why the 500?" in last
    assert "Look at the logs instead." in last
    assert store.stats(session_id).withdrawn_messages == 1
    assert audit_session(store, session_id).ok
    assert fake_anthropic.violations == []
