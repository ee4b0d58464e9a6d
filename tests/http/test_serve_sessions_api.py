"""The sessions API over HTTP: a host's loop, bearer-token auth, and tenants that cannot see
each other's sessions."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.http.conftest import TOKENS
from tests.support.fake_anthropic import TEST_API_KEY

TOKEN_A, TOKEN_B = list(TOKENS)


def api(url: str, token: str) -> httpx2.Client:
    return httpx2.Client(base_url=url, headers={"authorization": f"Bearer {token}"})


def start(client: httpx2.Client, **fields: Any) -> str:
    answer = client.post(
        "/v1/sessions", json={"model": "claude-sonnet-4-6", "max_output_tokens": 1000, **fields}
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_a_host_runs_its_loop_over_http(secured: str) -> None:
    with api(secured, TOKEN_A) as client:
        session_id = start(client, system="Be brief.", metadata={"user": "ada"}, tags=["cli"])
        appended = client.post(
            f"/v1/sessions/{session_id}/messages",
            json={"message": {"role": "user", "content": "Why do the tests fail?"}},
        )
        assert appended.json() == {"position": 0}
        prepared = client.post(f"/v1/sessions/{session_id}/prepare").json()
        assert prepared["request"]["messages"][0]["content"][0]["text"] == "Why do the tests fail?"
        assert prepared["request"]["system"][0]["text"] == "Be brief."
        assert prepared["estimate"] <= prepared["budget"]
        reply = {
            "role": "assistant",
            "content": [{"type": "text", "text": "An off-by-one."}],
            "usage": {"input_tokens": 30, "output_tokens": 5},
        }
        recorded = client.post(
            f"/v1/sessions/{session_id}/replies",
            json={"message": reply, "request_estimate": prepared["raw_estimate"]},
        )
        assert recorded.json() == {"position": 1}

        stats = client.get(f"/v1/sessions/{session_id}/stats").json()
        assert (stats["messages"], stats["requests"], stats["input_tokens"]) == (2, 1, 30)
        history = client.get(f"/v1/sessions/{session_id}/history").json()
        assert [e["event"] for e in history][:3] == [
            "Started",
            "MessageAppended",
            "MessageAppended",
        ]
        assert client.get(f"/v1/sessions/{session_id}/audit").json()["ok"] is True
        assert client.get(f"/v1/sessions/{session_id}/compactions").json() == []
        listed = client.get("/v1/sessions", params={"tag": "cli"}).json()["sessions"]
        assert [s["id"] for s in listed] == [session_id]
        assert listed[0]["metadata"]["user"] == "ada"


def test_a_manual_compaction_and_a_deletion(secured: str) -> None:
    with api(secured, TOKEN_A) as client:
        session_id = start(client)
        for n in range(6):
            client.post(
                f"/v1/sessions/{session_id}/messages",
                json={"message": {"role": "user", "content": f"Step {n}: read the log."}},
            )
            client.post(
                f"/v1/sessions/{session_id}/replies",
                json={"message": {"role": "assistant", "content": f"Read {n}."}},
            )
        report = client.post(f"/v1/sessions/{session_id}/compact", json={"instructions": "logs"})
        assert report.status_code == 200, report.text
        assert report.json()["trigger"] == "manual"
        assert len(client.get(f"/v1/sessions/{session_id}/compactions").json()) == 1

        assert (
            client.delete(f"/v1/sessions/{session_id}", params={"reason": "done"}).status_code
            == 204
        )
        assert client.get(f"/v1/sessions/{session_id}/stats").status_code == 404
        assert client.get("/v1/sessions").json()["sessions"] == []


def test_a_refused_turn_is_taken_back_over_http(secured: str) -> None:
    with api(secured, TOKEN_A) as client:
        session_id = start(client)
        messages = f"/v1/sessions/{session_id}/messages"
        client.post(messages, json={"message": {"role": "user", "content": "Hello."}})
        client.post(
            f"/v1/sessions/{session_id}/replies",
            json={"message": {"role": "assistant", "content": "Hi."}},
        )
        client.post(messages, json={"message": {"role": "user", "content": "Break in."}})
        refusal = {"role": "assistant", "content": "I", "stop_reason": "refusal"}
        client.post(f"/v1/sessions/{session_id}/replies", json={"message": refusal})

        withdrawn = client.post(f"/v1/sessions/{session_id}/withdraw", json={"reason": "refusal"})

        assert withdrawn.status_code == 200, withdrawn.text
        assert withdrawn.json() == {"count": 2}
        again = client.post(messages, json={"message": {"role": "user", "content": "Help."}})
        assert again.json() == {"position": 2}
        request = client.post(f"/v1/sessions/{session_id}/prepare").json()["request"]
        assert "Break in." not in str(request["messages"])
        too_far = client.post(f"/v1/sessions/{session_id}/withdraw", json={"position": 9})
        assert too_far.status_code == 422
        assert "TurnNotWithdrawableError" in too_far.json()["detail"]
        assert (
            client.post(f"/v1/sessions/{session_id}/withdraw", json={"position": -1}).status_code
            == 422
        )
    with api(secured, TOKEN_B) as other:
        assert other.post(f"/v1/sessions/{session_id}/withdraw", json={}).status_code == 404


def test_a_bad_message_is_refused_and_nothing_is_written(secured: str) -> None:
    with api(secured, TOKEN_A) as client:
        session_id = start(client)
        answer = client.post(
            f"/v1/sessions/{session_id}/messages",
            json={
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "x"}],
                }
            },
        )
        assert answer.status_code == 422
        assert "tool results" in answer.json()["detail"]
        assert client.get(f"/v1/sessions/{session_id}/stats").json()["messages"] == 0


@pytest.mark.parametrize(
    "headers",
    [{}, {"authorization": "Bearer not-a-token-at-all"}, {"authorization": f"Basic {TOKEN_A}"}],
)
def test_every_route_needs_a_valid_token(secured: str, headers: dict[str, str]) -> None:
    with httpx2.Client(base_url=secured, headers=headers) as client:
        assert client.get("/v1/sessions").status_code == 401
        assert (
            client.post("/v1/sessions", json={"model": "m", "max_output_tokens": 5}).status_code
            == 401
        )


def test_without_tokens_the_sessions_api_is_closed(proxy: str) -> None:
    with httpx2.Client(base_url=proxy, headers={"authorization": "Bearer anything-at-all"}) as c:
        assert c.get("/v1/sessions").status_code == 401


def test_tenants_cannot_see_each_others_sessions(secured: str) -> None:
    with api(secured, TOKEN_A) as alice, api(secured, TOKEN_B) as bob:
        hers = start(alice)
        his = start(bob)
        assert [s["id"] for s in alice.get("/v1/sessions").json()["sessions"]] == [hers]
        assert [s["id"] for s in bob.get("/v1/sessions").json()["sessions"]] == [his]
        for method, path, body in [
            ("GET", f"/v1/sessions/{hers}/stats", None),
            ("GET", f"/v1/sessions/{hers}/history", None),
            ("GET", f"/v1/sessions/{hers}/audit", None),
            ("POST", f"/v1/sessions/{hers}/prepare", None),
            (
                "POST",
                f"/v1/sessions/{hers}/messages",
                {"message": {"role": "user", "content": "x"}},
            ),
            ("DELETE", f"/v1/sessions/{hers}", None),
        ]:
            answer = bob.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
        # Her session is as she left it.
        assert alice.get(f"/v1/sessions/{hers}/stats").json()["messages"] == 0
        # A tenant cannot claim another's tag either.
        tagged = bob.post(
            "/v1/sessions",
            json={"model": "m", "max_output_tokens": 5, "metadata": {"abridged:tenant": "a"}},
        )
        assert tagged.status_code == 422


def test_a_page_of_sessions_takes_the_limits_the_service_takes(secured: str) -> None:
    with api(secured, TOKEN_A) as alice:
        started = {start(alice) for _ in range(3)}
        assert alice.get("/v1/sessions", params={"limit": 1_000}).status_code == 200
        for bad in (0, 1_001):
            answer = alice.get("/v1/sessions", params={"limit": bad})
            assert answer.status_code == 422, answer.text
        first = alice.get("/v1/sessions", params={"limit": 2}).json()
        rest = alice.get("/v1/sessions", params={"limit": 2, "cursor": first["next_cursor"]}).json()
        assert {s["id"] for s in first["sessions"] + rest["sessions"]} >= started


def test_the_proxy_needs_a_token_when_tenants_are_configured(secured: str) -> None:
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    refused = httpx2.post(f"{secured}/v1/messages", json=body, headers={"x-api-key": TEST_API_KEY})
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    accepted = httpx2.post(
        f"{secured}/v1/messages",
        json=body,
        headers={"x-api-key": TEST_API_KEY, "x-abridged-token": TOKEN_B},
    )
    assert accepted.status_code == 200
    session_id = accepted.headers["x-abridged-session"]
    # The proxied session is the tenant's: listed for it, unknown to the other.
    with api(secured, TOKEN_B) as bob, api(secured, TOKEN_A) as alice:
        assert [s["id"] for s in bob.get("/v1/sessions").json()["sessions"]] == [session_id]
        assert alice.get(f"/v1/sessions/{session_id}/stats").status_code == 404
    # Naming another tenant's session by its id reaches nothing.
    other = httpx2.post(
        f"{secured}/v1/messages",
        json=body,
        headers={
            "x-api-key": TEST_API_KEY,
            "x-abridged-token": TOKEN_A,
            "x-abridged-session": session_id,
        },
    )
    assert other.status_code == 404
    assert other.json()["error"]["type"] == "not_found_error"


def test_the_schema_health_and_metrics(secured: str) -> None:
    schema = httpx2.get(f"{secured}/openapi.json").json()
    assert {"/v1/sessions", "/v1/sessions/{session_id}/prepare", "/v1/messages"} <= set(
        schema["paths"]
    )
    assert httpx2.get(f"{secured}/healthz").json() == {"status": "ok"}
    assert httpx2.get(f"{secured}/metrics").status_code == 200
