"""Clients that go away: a user who stops a streamed reply (Esc in Claude Code), an SDK that
gives up on a request and sends it again. The upstream stops being paid for what nobody
reads, nothing half is recorded, the session's lock is free, and the client's next request
(with or without the reply it cut) reaches the upstream whole and valid, in the same session.
Run on a SQLite file and on PostgreSQL, with the stores' own locks (the application opens
its store as `abridged serve` does)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import attrs
import httpx2
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import ServeConfig
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from abridged.domain.session import Session
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.postgres import fresh_database
from tests.support.serve import served, serving

MODEL = "claude-sonnet-4-6"
HEADERS = {"x-api-key": TEST_API_KEY, "anthropic-version": "2023-06-01"}
SECONDS = 10.0
"""How long a test waits for what must happen (far longer than it takes)."""


def said(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


QUESTION = said("user", "Why does the export drop the last row?")
PARTIAL = said("assistant", "The user asked to fix the CSV export")
INTERRUPTED = said("user", "[Request interrupted by user]")


@attrs.frozen
class Served:
    url: str
    store: Sessions
    """A second service on the same store, to read what the proxy wrote."""

    def conversations(self) -> list[list[dict[str, Any]]]:
        """Each session's messages as stored (role and content), oldest session first."""
        sessions = sorted(self.store.list_sessions().sessions, key=lambda info: info.created_at)
        return [self.conversation(info.id) for info in sessions]

    def conversation(self, session_id: UUID) -> list[dict[str, Any]]:
        """The messages in the session's view, as stored: withdrawn ones left out."""
        messages: list[dict[str, Any]] = []
        for event in self.store.history(session_id):
            if isinstance(event, MessageAppended):
                messages.append(said_as_stored(event.message.to_wire()))
            elif isinstance(event, Session.TurnWithdrawn):
                del messages[event.position :]
        return messages


@pytest.fixture(params=["sqlite", "postgres"])
def served_store(
    request: pytest.FixtureRequest, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> Iterator[Served]:
    if request.param == "postgres":
        db = fresh_database(request.getfixturevalue("postgres_server"))
    else:
        db = str(tmp_path / "sessions.sqlite3")
    store = bootstrap(db)  # the tables exist before the application opens them
    config = ServeConfig(db=db, upstream=fake_anthropic.base_url, upstream_timeout=60.0)
    try:
        with served(config) as url:
            yield Served(url, store)
    finally:
        store.close()


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """What a held upstream answer waits for; set at the end whatever happened."""
    event = threading.Event()
    yield event
    event.set()


def body(*messages: dict[str, Any], stream: bool = True) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 200, "messages": list(messages), "stream": stream}


def cut_mid_stream(url: str, messages: list[dict[str, Any]], **extra: Any) -> None:
    """Sends a streamed request (its body's other fields `extra`) and closes the connection
    once the first delta arrived."""
    payload = body(*messages) | extra
    with (
        httpx2.Client(base_url=url, timeout=SECONDS) as http,
        http.stream("POST", "/v1/messages", json=payload, headers=HEADERS) as answer,
    ):
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if line == "event: content_block_delta":
                break


def post(url: str, payload: dict[str, Any]) -> httpx2.Response:
    with httpx2.Client(base_url=url, timeout=SECONDS) as http:
        answer = http.post("/v1/messages", json=payload, headers=HEADERS)
        answer.read()
        return answer


ASKED_AGAIN = [QUESTION]
INTERRUPTION_IN_THE_QUESTION = [
    {"role": "user", "content": QUESTION["content"] + INTERRUPTED["content"]}
]
CUT_REPLY_KEPT = [QUESTION, PARTIAL, INTERRUPTED]


@pytest.mark.parametrize(
    "history",
    [ASKED_AGAIN, CUT_REPLY_KEPT, INTERRUPTION_IN_THE_QUESTION],
    ids=["asked again", "cut reply kept", "interruption in the question"],
)
def test_a_stream_the_client_stops_stops_upstream_and_the_session_goes_on(
    served_store: Served,
    fake_anthropic: FakeAnthropic,
    release: threading.Event,
    history: list[dict[str, Any]],
) -> None:
    fake_anthropic.enqueue(fake.held(fake.message(fake.CANNED_TEXT), release))
    cut_mid_stream(served_store.url, [QUESTION])

    # The upstream's connection is closed: the reply stops being generated (and paid for).
    assert fake_anthropic.abandoned.acquire(timeout=SECONDS)
    # Nothing of the cut reply is recorded, and the question it answered is taken back.
    wait_for_metric(served_store.url, "abridged_serve_withdrawn 1")
    assert served_store.conversations() == [[]]

    # The client goes on with what it kept; the session's lock is free, the request whole.
    answer = post(served_store.url, body(*history, stream=False))
    assert answer.status_code == 200, answer.text
    sent = fake_anthropic.requests_to()[-1].body["messages"]
    assert [said_as_stored(m) for m in sent] == history
    assert fake_anthropic.violations == []
    reply = said_as_stored({"role": "assistant", "content": answer.json()["content"]})
    # Whatever the client kept of its cut turn, it goes on in the same session (no branch
    # started from its whole history), and the audit trail keeps the question it took back.
    assert served_store.conversations() == [[*history, reply]]
    (info,) = served_store.store.list_sessions().sessions
    assert served_store.store.stats(info.id).withdrawn_messages == 1
    assert audit_session(served_store.store, info.id).ok


@pytest.mark.parametrize("refused", ["529", "error event"])
def test_a_retried_request_the_client_stops_is_taken_back_too(
    served_store: Served, fake_anthropic: FakeAnthropic, release: threading.Event, refused: str
) -> None:
    # The first try stored the question and was refused (a 529, or an `overloaded_error`
    # mid-stream); the client sends it again (nothing new to append) and the user presses
    # Esc. Only the messages a request appended itself were taken back: the question stayed,
    # and Claude Code's next request (the interruption joined to it) went to a branch
    # started from its whole history.
    if refused == "529":
        fake_anthropic.enqueue(fake.overloaded())
        assert post(served_store.url, body(QUESTION, stream=False)).status_code == 529
    else:
        fake_anthropic.enqueue(fake.overloaded_midstream())
        assert "overloaded_error" in post(served_store.url, body(QUESTION)).text
    assert served_store.conversations() == [[QUESTION]]
    fake_anthropic.enqueue(fake.held(fake.message(fake.CANNED_TEXT), release))
    cut_mid_stream(served_store.url, [QUESTION])
    assert fake_anthropic.abandoned.acquire(timeout=SECONDS)
    wait_for_metric(served_store.url, "abridged_serve_withdrawn 1")

    answer = post(served_store.url, body(*INTERRUPTION_IN_THE_QUESTION, stream=False))

    assert answer.status_code == 200, answer.text
    reply = said_as_stored({"role": "assistant", "content": answer.json()["content"]})
    assert served_store.conversations() == [[*INTERRUPTION_IN_THE_QUESTION, reply]]  # no branch
    (info,) = served_store.store.list_sessions().sessions
    assert audit_session(served_store.store, info.id).ok


def test_a_retried_request_answered_with_nothing_is_taken_back_too(
    served_store: Served, fake_anthropic: FakeAnthropic
) -> None:
    # The same after a 529, with the retry answered with nothing: the turn the client sends
    # again with "Please continue" joined (the API's advice) goes on in the same session.
    fake_anthropic.enqueue(fake.overloaded(), fake.message([]))
    assert post(served_store.url, body(QUESTION, stream=False)).status_code == 529
    assert post(served_store.url, body(QUESTION, stream=False)).status_code == 200
    again = {"role": "user", "content": [*QUESTION["content"], *said("user", "Go on")["content"]]}

    answer = post(served_store.url, body(again, stream=False))

    assert answer.status_code == 200, answer.text
    reply = said_as_stored({"role": "assistant", "content": answer.json()["content"]})
    assert served_store.conversations() == [[again, reply]]  # no branch


def said_as_stored(message: dict[str, Any]) -> dict[str, Any]:
    """Role and content, without the proxy's cache markers."""
    content = [
        {key: value for key, value in block.items() if key != "cache_control"}
        for block in message["content"]
    ]
    return {"role": message["role"], "content": content}


def sent_and_left_open(url: str, payload: dict[str, Any]) -> socket.socket:
    """A connection on which a whole request was sent, and nothing read yet."""
    raw = json.dumps(payload).encode()
    split = urlsplit(url)
    sock = socket.create_connection((split.hostname, split.port))
    head = [b"POST /v1/messages HTTP/1.1", b"host: test", b"content-type: application/json"]
    head += [f"{name}: {value}".encode() for name, value in HEADERS.items()]
    head.append(b"content-length: %d" % len(raw))
    sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + raw)
    return sock


def wait_for_metric(url: str, line: str) -> None:
    """Until the proxy's `/metrics` shows `line` (what it does for a client that left
    cannot be seen from the client's side)."""
    deadline = time.monotonic() + SECONDS
    while line not in httpx2.get(f"{url}/metrics").text:
        assert time.monotonic() < deadline, f"no {line} in /metrics"
        time.sleep(0.01)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_client_that_leaves_before_the_answer_starts_stops_the_upstream_request(
    served_store: Served, fake_anthropic: FakeAnthropic, release: threading.Event, stream: bool
) -> None:
    # An SDK gives up (its timeout) while the upstream has not begun to answer.
    nobody_waits = fake.message("The answer nobody waits for.")
    fake_anthropic.enqueue(fake.held(nobody_waits, release, whole=True))
    with sent_and_left_open(served_store.url, body(QUESTION, stream=stream)):
        assert fake_anthropic.holding.acquire(timeout=SECONDS)

    # The proxy closes the upstream request rather than wait for an answer nobody reads.
    assert fake_anthropic.abandoned.acquire(timeout=SECONDS)
    wait_for_metric(served_store.url, 'abridged_serve_abandoned{stage="upstream"} 1')
    assert served_store.conversations() == [[]]  # the question without an answer taken back

    # Its retry is answered and recorded; the conversation goes on in the same session.
    answer = post(served_store.url, body(QUESTION, stream=False))
    assert answer.status_code == 200, answer.text
    reply = said_as_stored({"role": "assistant", "content": answer.json()["content"]})
    follow_up = said("user", "And the header row?")
    answer = post(served_store.url, body(QUESTION, reply, follow_up, stream=False))
    assert answer.status_code == 200, answer.text
    last = said_as_stored({"role": "assistant", "content": answer.json()["content"]})
    assert served_store.conversations() == [[QUESTION, reply, follow_up, last]]
    assert fake_anthropic.violations == []
    (info,) = served_store.store.list_sessions().sessions
    assert audit_session(served_store.store, info.id).ok


def reply_of(lines: Iterator[str]) -> dict[str, Any]:
    """The assistant message a stream's text deltas make (asserting it ended whole)."""
    events = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert events[-1]["type"] == "message_stop", events[-1]
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    return said("assistant", text)


def test_a_retry_racing_the_original_gets_an_answer_and_records_one(
    served_store: Served, fake_anthropic: FakeAnthropic, release: threading.Event
) -> None:
    # The original's stream is under way when the same request comes again (an SDK that gave
    # up on the first, but whose first connection is still open), and finishes first.
    fake_anthropic.enqueue(
        fake.held(fake.message("The original answer, written slowly."), release),
        fake.message("The retry's answer."),
    )
    with (
        httpx2.Client(base_url=served_store.url, timeout=SECONDS) as http,
        http.stream("POST", "/v1/messages", json=body(QUESTION), headers=HEADERS) as original,
    ):
        lines = original.iter_lines()
        assert next(line for line in lines if line == "event: content_block_delta")
        with http.stream("POST", "/v1/messages", json=body(QUESTION), headers=HEADERS) as retry:
            retried = reply_of(retry.iter_lines())
        release.set()
        first = reply_of(lines)  # the rest of it
    assert retried["content"][0]["text"] == "The retry's answer."

    # Both got a whole answer; the first to complete is the session's, the other is not
    # recorded (nor appended twice, nor mixed in).
    assert first["content"][0]["text"].endswith("written slowly.")
    assert served_store.conversations() == [[QUESTION, retried]]
    assert 'abridged_serve_replies{outcome="superseded"} 1' in (
        httpx2.get(f"{served_store.url}/metrics").text
    )

    # Each client carries on with the answer it got: the retry's in the session, the
    # original's in a branch.
    follow_up = said("user", "And the header row?")
    for kept in (retried, first):
        answer = post(served_store.url, body(QUESTION, kept, follow_up, stream=False))
        assert answer.status_code == 200, answer.text
    main, branch = served_store.conversations()
    assert main[:3] == [QUESTION, retried, follow_up]
    assert branch[:3] == [QUESTION, first, follow_up]
    assert fake_anthropic.violations == []


def test_a_client_that_leaves_while_its_request_is_prepared_sends_nothing_upstream(
    fake_anthropic: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = bootstrap(tmp_path / "sessions.sqlite3")
    preparing, prepared = threading.Event(), threading.Event()
    prepare = store.prepare_request

    def slowly(*args: Any, **kwargs: Any) -> Any:  # a long compaction, say
        preparing.set()
        prepared.wait(SECONDS)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(store, "prepare_request", slowly)
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, upstream_timeout=60.0)
    with serving(config, store) as (url, server):
        with sent_and_left_open(url, body(QUESTION)):
            assert preparing.wait(SECONDS)
        deadline = time.monotonic() + SECONDS
        while server.server_state.connections:  # until the server saw the client leave
            assert time.monotonic() < deadline
            time.sleep(0.01)
        prepared.set()
        wait_for_metric(url, 'abridged_serve_abandoned{stage="upstream"} 1')
        monkeypatch.undo()

        # Nothing went upstream; the question written whole (a write is not cut in half),
        # then taken back from the view: nobody waits for its answer.
        assert fake_anthropic.requests_to() == []
        reader = Served(url, store)
        assert reader.conversations() == [[]]

        # The client's retry appends its question again and goes on in the same session.
        answer = post(url, body(QUESTION, stream=False))
        assert answer.status_code == 200, answer.text
        reply = said_as_stored({"role": "assistant", "content": answer.json()["content"]})
        assert reader.conversations() == [[QUESTION, reply]]
        (info,) = store.list_sessions().sessions
        assert store.stats(info.id).withdrawn_messages == 1
        assert audit_session(store, info.id).ok
    store.close()


def test_a_reply_to_messages_taken_back_is_not_recorded_after_those_that_replaced_them(
    served_store: Served, fake_anthropic: FakeAnthropic, release: threading.Event
) -> None:
    # The original request and its retry are both under way when the original's client
    # leaves (its question is taken back) and the user's next request, the question with
    # "[Request interrupted by user]" joined to it, replaces it. The retry's answer, which
    # comes next, answers the question taken back: recorded, it would answer another one.
    retry_goes, next_goes = threading.Event(), threading.Event()
    fake_anthropic.enqueue(
        fake.held(fake.message("The original's answer."), release),
        fake.held(fake.message("The retry's answer."), retry_goes, whole=True),
        fake.held(fake.message("The answer to the interrupted question."), next_goes, whole=True),
    )
    answers: dict[str, httpx2.Response] = {}

    def send(name: str, *messages: dict[str, Any]) -> None:
        answers[name] = post(served_store.url, body(*messages, stream=False))

    retry = threading.Thread(target=send, args=("retry", QUESTION))
    replacing = threading.Thread(target=send, args=("next", *INTERRUPTION_IN_THE_QUESTION))
    try:
        with (
            httpx2.Client(base_url=served_store.url, timeout=SECONDS) as http,
            http.stream("POST", "/v1/messages", json=body(QUESTION), headers=HEADERS) as original,
        ):
            lines = original.iter_lines()  # kept: a generator dropped closes the stream
            assert next(line for line in lines if line == "event: content_block_delta")
            retry.start()
            until(lambda: len(fake_anthropic.requests_to()) == 2)  # the retry is upstream
        wait_for_metric(served_store.url, "abridged_serve_withdrawn 1")
        replacing.start()
        until(lambda: len(fake_anthropic.requests_to()) == 3)
        retry_goes.set()
        retry.join(SECONDS)
        next_goes.set()
        replacing.join(SECONDS)
    finally:
        retry_goes.set()
        next_goes.set()

    assert answers["retry"].status_code == 200, answers["retry"].text  # passed back whole
    assert answers["next"].status_code == 200, answers["next"].text
    reply = said_as_stored({"role": "assistant", "content": answers["next"].json()["content"]})
    assert served_store.conversations() == [[*INTERRUPTION_IN_THE_QUESTION, reply]]
    assert 'abridged_serve_replies{outcome="superseded"} 1' in (
        httpx2.get(f"{served_store.url}/metrics").text
    )
    assert fake_anthropic.violations == []


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + SECONDS
    while not condition():
        assert time.monotonic() < deadline, "it did not happen"
        time.sleep(0.01)
