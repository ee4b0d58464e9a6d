"""Erasing through the sessions API reaches every copy of the conversation: the branches the
proxy started when the client's history diverged hold its earlier messages too."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import ServeConfig
from abridged.adapters.http.branches import BRANCH_KEY
from abridged.application.service import Sessions
from abridged.domain.errors import UnknownSessionError
from tests.http.conftest import TOKENS
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.serve import served

TOKEN_A, TOKEN_B = list(TOKENS)
SECRET = "my passport number is X1234567"


def post(url: str, messages: list[Any], name: str = "t", token: str = TOKEN_A) -> httpx2.Response:
    """The request as a client sends it, whatever the proxy answers."""
    headers = {"x-api-key": TEST_API_KEY, "x-abridged-token": token, "x-abridged-session": name}
    body = {"model": "claude-sonnet-4-6", "max_tokens": 20, "messages": messages}
    return httpx2.post(f"{url}/v1/messages", json=body, headers=headers)


def send(url: str, token: str, messages: list[Any]) -> list[Any]:
    answer = post(url, messages, token=token)
    assert answer.status_code == 200, answer.text
    return [*messages, {"role": "assistant", "content": answer.json()["content"]}]


@pytest.fixture
def filed(tmp_path: Path) -> Iterator[Sessions]:
    """A store on a SQLite file: one that can erase."""
    store = bootstrap(tmp_path / "sessions.db")
    yield store
    store.close()


@pytest.fixture
def url(fake_anthropic: FakeAnthropic, filed: Sessions) -> Iterator[str]:
    config = ServeConfig(db=":memory:", upstream=fake_anthropic.base_url, tokens=TOKENS)
    with served(config, filed) as base:
        yield base


def test_erasing_a_session_erases_its_branches_and_theirs(url: str, filed: Sessions) -> None:
    history = send(url, TOKEN_A, [{"role": "user", "content": SECRET}])
    send(url, TOKEN_A, [*history, {"role": "user", "content": "Remember it."}])
    # Edited, then edited again on the branch: a branch, and a branch of the branch.
    branch = send(url, TOKEN_A, [*history, {"role": "user", "content": "Forget it."}])
    send(url, TOKEN_A, [*branch, {"role": "user", "content": "Whisper it."}])
    send(url, TOKEN_A, [*branch, {"role": "user", "content": "Sing it."}])
    send(url, TOKEN_B, [{"role": "user", "content": "Another tenant's."}])
    sessions = filed.list_sessions().sessions
    ours = [s for s in sessions if s.metadata["abridged:tenant"] == "a"]
    (root,) = [s.id for s in ours if BRANCH_KEY not in s.metadata]
    assert len(ours) == 3  # the root, its branch and the branch's
    assert any(s.metadata.get(BRANCH_KEY) not in (None, str(root)) for s in ours)

    headers = {"authorization": f"Bearer {TOKEN_A}"}
    erased = httpx2.delete(f"{url}/v1/sessions/{root}?erase=true", headers=headers)

    assert erased.status_code == 204
    left = filed.list_sessions().sessions
    assert [s.metadata["abridged:tenant"] for s in left] == ["b"]
    for session in ours:
        gone = httpx2.get(f"{url}/v1/sessions/{session.id}/history", headers=headers)
        assert gone.status_code == 404
        with pytest.raises(UnknownSessionError):
            filed.history(session.id)


def test_a_session_deleted_already_may_still_be_erased(url: str, filed: Sessions) -> None:
    send(url, TOKEN_A, [{"role": "user", "content": SECRET}])
    (info,) = filed.list_sessions().sessions
    a, b = ({"authorization": f"Bearer {token}"} for token in (TOKEN_A, TOKEN_B))
    assert httpx2.delete(f"{url}/v1/sessions/{info.id}", headers=a).status_code == 204
    assert SECRET in repr(filed.history(info.id))  # deleted, still stored

    refused = httpx2.delete(f"{url}/v1/sessions/{info.id}?erase=true", headers=b)
    erased = httpx2.delete(f"{url}/v1/sessions/{info.id}?erase=true", headers=a)

    assert refused.status_code == 404  # not b's to erase, nor to know of
    assert erased.status_code == 204
    with pytest.raises(UnknownSessionError):
        filed.history(info.id)


def test_a_deleted_session_sends_no_recorded_reply_again(url: str, filed: Sessions) -> None:
    # A client retrying the request it was answered once gets that answer from the stored
    # session; once the session is deleted, it gets the deletion instead, by name or by id.
    first = [{"role": "user", "content": SECRET}]
    answered = send(url, TOKEN_A, first)
    (info,) = filed.list_sessions().sessions
    headers = {"authorization": f"Bearer {TOKEN_A}"}
    deleted = httpx2.delete(f"{url}/v1/sessions/{info.id}?reason=asked", headers=headers)
    assert deleted.status_code == 204
    for name in ("t", str(info.id)):
        again = post(url, first, name)
        assert again.status_code == 404
        error = again.json()["error"]
        assert (error["type"], error["message"]) == (
            "not_found_error",
            f"session {info.id} was deleted: asked",
        )
        assert str(answered[-1]["content"]) not in again.text


def test_an_erased_conversation_sent_again_is_not_stored_again(url: str, filed: Sessions) -> None:
    # The client still holds the history: going on with it after the session was erased
    # (here by the same worker, whose view of the session is older than the erasure) must
    # not start a branch holding it again.
    history = send(url, TOKEN_A, [{"role": "user", "content": SECRET}])
    (info,) = filed.list_sessions().sessions
    headers = {"authorization": f"Bearer {TOKEN_A}"}
    assert httpx2.delete(f"{url}/v1/sessions/{info.id}?erase=true", headers=headers).is_success
    edited = [*history[:1], {"role": "assistant", "content": "Edited."}]
    for messages in ([*history, {"role": "user", "content": "Go on."}], [*edited, history[0]]):
        again = post(url, messages)
        assert again.status_code == 404, again.text
        assert again.json()["error"]["type"] == "not_found_error"
    assert filed.list_sessions().sessions == ()


def test_a_retry_after_another_worker_erased_the_session_sends_nothing_upstream(
    url: str, filed: Sessions, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    # The upstream failed, so the client's question is stored unanswered; another worker
    # (a service of its own on the same file) erases the session; the client retries the
    # very same request here. Nothing is appended then, so only a look at the store tells
    # this worker, which still holds the session, that it is gone.
    messages = [{"role": "user", "content": SECRET}]
    fake_anthropic.enqueue(fake.api_error())
    failed = post(url, messages)
    assert failed.status_code == 500
    (info,) = filed.list_sessions().sessions
    other = bootstrap(tmp_path / "sessions.db")
    try:
        other.delete_session(info.id, "asked", erase=True)
    finally:
        other.close()
    sent_before = len(fake_anthropic.requests_to())

    retried = post(url, messages)

    assert retried.status_code == 404, retried.text
    assert len(fake_anthropic.requests_to()) == sent_before


@pytest.mark.parametrize("erase", [False, True])
@pytest.mark.parametrize("deleted", ["before the branch is stored", "after"])
def test_a_branch_started_while_its_parent_is_deleted_does_not_survive_it(
    url: str, filed: Sessions, monkeypatch: pytest.MonkeyPatch, erase: bool, deleted: str
) -> None:
    # The edited request has routed to a new branch of the session (its parent still
    # there) and is about to store it, or has just stored it, when the DELETE comes.
    history = send(url, TOKEN_A, [{"role": "user", "content": SECRET}])
    send(url, TOKEN_A, [*history, {"role": "user", "content": "Remember it."}])
    (root,) = [s.id for s in filed.list_sessions().sessions]
    reached, resume = threading.Event(), threading.Event()
    start = filed.start_session

    def paused_start(**kwargs: Any) -> Any:
        if BRANCH_KEY not in kwargs["metadata"]:
            return start(**kwargs)
        if deleted == "after":
            started = start(**kwargs)
        reached.set()
        assert resume.wait(10)
        return started if deleted == "after" else start(**kwargs)

    monkeypatch.setattr(filed, "start_session", paused_start)
    edited = [*history, {"role": "user", "content": "Forget it."}]
    answers: list[httpx2.Response] = []
    branching = threading.Thread(target=lambda: answers.append(post(url, edited)))
    branching.start()
    assert reached.wait(10)
    headers = {"authorization": f"Bearer {TOKEN_A}"}
    removed = httpx2.delete(f"{url}/v1/sessions/{root}?erase={str(erase).lower()}", headers=headers)
    resume.set()
    branching.join(10)

    assert removed.status_code == 204
    assert answers[0].status_code == 404, answers[0].text
    assert filed.list_sessions().sessions == ()  # no branch left holding the history
    again = post(url, [*edited, {"role": "assistant", "content": "Ok."}, history[0]])
    assert again.status_code == 404
    assert filed.list_sessions().sessions == ()


@pytest.mark.parametrize("erase", [False, True])
def test_a_branch_started_after_the_deletion_listed_the_branches_is_deleted_too(
    url: str, filed: Sessions, monkeypatch: pytest.MonkeyPatch, erase: bool
) -> None:
    # The DELETE has listed the branches (none) and is about to delete the session itself
    # when the edited request stores its branch, its parent still there.
    history = send(url, TOKEN_A, [{"role": "user", "content": SECRET}])
    send(url, TOKEN_A, [*history, {"role": "user", "content": "Remember it."}])
    (root,) = [s.id for s in filed.list_sessions().sessions]
    edited = [*history, {"role": "user", "content": "Forget it."}]
    delete = filed.delete_session
    answers: list[httpx2.Response] = []

    def branch_first(session_id: Any, *args: Any, **kwargs: Any) -> Any:
        if session_id == root and not answers:
            answers.append(post(url, edited))  # a branch of a session not deleted yet
        return delete(session_id, *args, **kwargs)

    monkeypatch.setattr(filed, "delete_session", branch_first)
    headers = {"authorization": f"Bearer {TOKEN_A}"}
    removed = httpx2.delete(f"{url}/v1/sessions/{root}?erase={str(erase).lower()}", headers=headers)

    assert removed.status_code == 204
    assert answers[0].status_code == 200  # answered: the branch was stored
    assert filed.list_sessions().sessions == ()  # and deleted with its parent


@pytest.mark.parametrize("deleted_first", ["the session", "its branch"])
def test_erasing_a_session_deleted_already_erases_its_deleted_branches(
    url: str, filed: Sessions, deleted_first: str
) -> None:
    # Deleted first, erased later: the deletion had deleted the branches with it, deleted
    # sessions are not listed, and the erase found none of them; each kept a copy of the
    # conversation the tenant could no longer reach (its id listed nowhere).
    history = send(url, TOKEN_A, [{"role": "user", "content": SECRET}])
    send(url, TOKEN_A, [*history, {"role": "user", "content": "Remember it."}])
    branch = send(url, TOKEN_A, [*history, {"role": "user", "content": "Forget it."}])
    send(url, TOKEN_A, [*branch, {"role": "user", "content": "Whisper it."}])
    send(url, TOKEN_A, [*branch, {"role": "user", "content": "Sing it."}])
    ours = filed.list_sessions().sessions
    (root,) = [s.id for s in ours if BRANCH_KEY not in s.metadata]
    (first,) = [s.id for s in ours if s.metadata.get(BRANCH_KEY) == str(root)]
    assert len(ours) == 3  # the root, its branch and the branch's
    headers = {"authorization": f"Bearer {TOKEN_A}"}

    gone = root if deleted_first == "the session" else first
    deleted = httpx2.delete(f"{url}/v1/sessions/{gone}", headers=headers)
    assert deleted.status_code == 204
    erased = httpx2.delete(f"{url}/v1/sessions/{root}?erase=true", headers=headers)

    assert erased.status_code == 204
    for session in ours:
        with pytest.raises(UnknownSessionError):
            filed.history(session.id)
