"""Tenants against each other: a session id that one tenant can compute is never one it can
take from another, and a credential sent twice is refused, not read one way here and
another way elsewhere."""

from __future__ import annotations

import json
from uuid import uuid4, uuid5

import httpx2

from abridged.adapters.http.history import NAMESPACE
from abridged.application.service import Sessions
from tests.http.conftest import TOKENS
from tests.support.fake_anthropic import TEST_API_KEY
from tests.support.raw_http import raw_request

TOKEN_A, TOKEN_B = list(TOKENS)
BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 5,
    "messages": [{"role": "user", "content": "Hi"}],
}


def proxied(url: str, token: str, session: str) -> httpx2.Response:
    headers = {"x-api-key": TEST_API_KEY, "x-abridged-token": token, "x-abridged-session": session}
    return httpx2.post(f"{url}/v1/messages", json=BODY, headers=headers)


def test_a_tenant_cannot_squat_the_id_another_tenants_name_maps_to(
    secured: str, store: Sessions
) -> None:
    # The namespace is in the source: tenant a computes the id b's "ticket-4711" maps to.
    squatted = uuid5(NAMESPACE, "b\nticket-4711")
    refused = proxied(secured, TOKEN_A, str(squatted))
    assert refused.status_code == 404
    assert refused.json()["error"]["type"] == "not_found_error"
    unknown = uuid4()
    assert proxied(secured, TOKEN_A, str(unknown)).status_code == 404
    # The same words for another tenant's session as for an unknown one.
    words = proxied(secured, TOKEN_A, str(unknown)).json()["error"]["message"]
    assert refused.json()["error"]["message"].replace(str(squatted), "ID") == words.replace(
        str(unknown), "ID"
    )
    assert store.list_sessions().sessions == ()

    assert proxied(secured, TOKEN_B, "ticket-4711").status_code == 200
    (info,) = store.list_sessions().sessions
    assert (info.id, info.metadata["abridged:tenant"]) == (squatted, "b")
    # By its id, the session is b's to carry on, and nobody else's.
    assert proxied(secured, TOKEN_B, str(squatted)).status_code == 200
    assert proxied(secured, TOKEN_A, str(squatted)).status_code == 404


def test_a_credential_sent_twice_is_refused(secured: str, store: Sessions) -> None:
    content = json.dumps(BODY).encode()
    twice = [
        (b"x-api-key", TEST_API_KEY.encode()),
        (b"x-abridged-token", TOKEN_B.encode()),
        (b"x-abridged-token", TOKEN_A.encode()),
    ]
    answer = raw_request(secured, "POST", "/v1/messages", twice, content)
    assert answer.status == 401
    assert answer.json()["error"]["type"] == "authentication_error"
    bearer_twice = [
        (b"authorization", f"Bearer {TOKEN_B}".encode()),
        (b"authorization", f"Bearer {TOKEN_A}".encode()),
    ]
    assert raw_request(secured, "GET", "/v1/sessions", bearer_twice).status == 401
    assert store.list_sessions().sessions == ()


def test_another_tenants_deleted_session_looks_like_an_unknown_one(
    secured: str, store: Sessions
) -> None:
    # b's names map to ids a can compute: a 404 that said "deleted" would tell a which
    # names b used, and the reason b gave would reach a as well.
    assert proxied(secured, TOKEN_B, "acquisition-talks").status_code == 200
    deleted = uuid5(NAMESPACE, "b\nacquisition-talks")
    b_api = httpx2.Client(base_url=secured, headers={"authorization": f"Bearer {TOKEN_B}"})
    assert b_api.delete(f"/v1/sessions/{deleted}", params={"reason": "Jane Roe asked"}).is_success
    never = uuid5(NAMESPACE, "b\nnever-used")
    a_api = httpx2.Client(base_url=secured, headers={"authorization": f"Bearer {TOKEN_A}"})
    for view in ("stats", "history", "audit", "compactions"):
        answers = [a_api.get(f"/v1/sessions/{sid}/{view}") for sid in (deleted, never)]
        assert [a.status_code for a in answers] == [404, 404]
        ids = (deleted, never)
        texts = [a.text.replace(str(sid), "ID") for a, sid in zip(answers, ids, strict=True)]
        assert texts[0] == texts[1]
        assert "Jane" not in texts[0]
    a_api.close()
    b_api.close()
