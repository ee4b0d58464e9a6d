"""What an `x-abridged-session` header names: a session's id only when it is written as
the sessions API writes ids; any other value, in UTF-8, is a name of up to 256 characters."""

from __future__ import annotations

import json
from uuid import UUID

import httpx2
import pytest

from abridged.application.service import Sessions
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.raw_http import RawAnswer, raw_request

BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 20,
    "messages": [{"role": "user", "content": "Hi"}],
}


def named(url: str, name: bytes) -> RawAnswer:
    """The request with `name` as the header's bytes, as a client writes them."""
    headers = [
        (b"x-api-key", TEST_API_KEY.encode()),
        (b"content-type", b"application/json"),
        (b"x-abridged-session", name),
    ]
    return raw_request(url, "POST", "/v1/messages", headers, json.dumps(BODY).encode())


def name_of(store: Sessions, answer: RawAnswer) -> str:
    session_id = answer.header("x-abridged-session")
    assert answer.status == 200, answer.body
    assert session_id is not None
    return store.session(UUID(session_id)).metadata["abridged:name"]


@pytest.mark.parametrize(
    "name",
    [
        "5d41402abc4b2a76b9719d911017c592",  # a digest: 32 hex digits
        "{12345678-1234-5678-1234-567812345678}",
        "urn:uuid:12345678-1234-5678-1234-567812345678",
    ],
)
def test_a_name_uuid_would_read_as_an_id_is_a_name(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions, name: str
) -> None:
    fake_anthropic.enqueue(fake.message())
    assert name_of(store, named(proxy, name.encode())) == name  # a session of that name


def test_a_session_is_named_by_its_id_written_with_hyphens(
    proxy: str, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(fake.message("Done."))
    session_id = named(proxy, b"ticket-4711").header("x-abridged-session")
    assert session_id is not None
    history: list[object] = list(BODY["messages"])  # type: ignore[call-overload]
    for spelling in (session_id, session_id.upper()):
        history += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "On."}]
        fake_anthropic.enqueue(fake.message("Done."))
        again = httpx2.post(
            f"{proxy}/v1/messages",
            json={**BODY, "messages": history},
            headers={"x-api-key": TEST_API_KEY, "x-abridged-session": spelling},
        )
        assert again.headers["x-abridged-session"] == session_id
    unknown = named(proxy, str(UUID(int=7)).encode())
    assert unknown.status == 404  # an id, never a new session at an id the client chose


def test_a_name_in_utf_8_is_read_as_written_and_limited_in_characters(
    proxy: str, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    fake_anthropic.enqueue(fake.message())
    assert name_of(store, named(proxy, "プロジェクト/αβγ".encode())) == "プロジェクト/αβγ"
    fake_anthropic.enqueue(fake.message())
    assert name_of(store, named(proxy, ("é" * 256).encode())) == "é" * 256  # 512 bytes
    for refused, why in [
        (("é" * 257).encode(), "x-abridged-session is over 256 characters"),
        ("café".encode("latin-1"), "x-abridged-session is not UTF-8"),
    ]:
        answer = named(proxy, refused)
        assert answer.status == 400
        assert answer.json()["error"] == {"type": "invalid_request_error", "message": why}
    assert len(store.list_sessions().sessions) == 2
