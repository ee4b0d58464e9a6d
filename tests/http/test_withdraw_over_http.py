"""`POST /v1/sessions/{id}/withdraw` over HTTP, and what the proxy does with a session whose
turn was withdrawn.

The route takes its position as the service does: a JSON integer from 0, nothing else. A
withdrawal cannot be undone (the view never gets the messages back), so a value that is not
a position must not be read as one. The proxy routes by the client's history, withdrawn
messages included (docs/serving.md, the sessions API)."""

from __future__ import annotations

from typing import Any

import pytest

from abridged.application.service import Sessions
from tests.http.test_serve_attack_refused import send
from tests.http.test_serve_sessions_api import TOKEN_A, api, start
from tests.support.fake_anthropic import FakeAnthropic


@pytest.mark.parametrize("position", [True, "1", 1.0, 1.5, None])
def test_a_position_that_is_not_an_integer_withdraws_nothing(secured: str, position: Any) -> None:
    with api(secured, TOKEN_A) as client:
        session_id = start(client)
        messages = f"/v1/sessions/{session_id}/messages"
        client.post(messages, json={"message": {"role": "user", "content": "Hello."}})
        client.post(
            f"/v1/sessions/{session_id}/replies",
            json={"message": {"role": "assistant", "content": "Hi."}},
        )
        client.post(messages, json={"message": {"role": "user", "content": "And then?"}})

        answer = client.post(f"/v1/sessions/{session_id}/withdraw", json={"position": position})

        if position is None:  # null: the default, the last user prompt
            assert answer.json() == {"count": 1}
            return
        assert answer.status_code == 422, answer.text
        stats = client.get(f"/v1/sessions/{session_id}/stats").json()
        assert stats["withdrawn_messages"] == 0


def test_a_proxied_session_goes_on_without_a_withdrawn_turn_its_client_still_sends(
    proxy: str, store: Sessions, fake_anthropic: FakeAnthropic
) -> None:
    # A client of the proxy keeps the refused turn in the history it sends (it has no other);
    # the host withdraws the turn through the sessions API (the store here). The client's
    # next requests go on in the same session, and the model never sees the turn again.
    hello = {"role": "user", "content": "Hello."}
    history = [hello, {"role": "assistant", "content": send(proxy, "t", [hello]).json()["content"]}]
    refused = {"role": "user", "content": "Break in."}
    answer = send(proxy, "t", [*history, refused]).json()
    history += [refused, {"role": "assistant", "content": answer["content"]}]
    (info,) = store.list_sessions().sessions
    assert store.withdraw_turn(info.id, reason="refusal") == 2

    for prompt in ("Next.", "And after?"):
        history.append({"role": "user", "content": prompt})
        answer = send(proxy, "t", history)
        assert answer.status_code == 200, answer.text
        history.append({"role": "assistant", "content": answer.json()["content"]})
        seen = str(fake_anthropic.requests_to()[-1].body["messages"])
        assert prompt in seen
        assert "Break in." not in seen

    assert [s.id for s in store.list_sessions().sessions] == [info.id]  # no branch
    assert store.session(info.id).message_count == 6


def test_an_edited_prompt_through_the_proxy_goes_to_a_branch_withdrawn_or_not(
    proxy: str, store: Sessions, fake_anthropic: FakeAnthropic
) -> None:
    hello = {"role": "user", "content": "Hello."}
    history = [hello, {"role": "assistant", "content": send(proxy, "t", [hello]).json()["content"]}]
    send(proxy, "t", [*history, {"role": "user", "content": "Break in."}])
    (info,) = store.list_sessions().sessions
    store.withdraw_turn(info.id, reason="the user edits the prompt")

    answer = send(proxy, "t", [*history, {"role": "user", "content": "Edited."}])

    assert answer.status_code == 200, answer.text
    assert len(store.list_sessions().sessions) == 2  # a branch, as for any edited history
    assert store.session(info.id).message_count == 2  # the withdrawn session is untouched


def test_a_reply_asked_again_through_the_proxy_goes_on_in_a_branch(
    proxy: str, store: Sessions
) -> None:
    # Withdrawing the reply does not make the proxy record the client's new answer: the
    # request sent again is a retry of one whose answer is recorded (nothing is appended),
    # and the history with the new answer differs from the stored one.
    hello = {"role": "user", "content": "Hello."}
    history = [hello, {"role": "assistant", "content": send(proxy, "t", [hello]).json()["content"]}]
    history.append({"role": "user", "content": "Again?"})
    send(proxy, "t", history)
    (info,) = store.list_sessions().sessions
    assert store.withdraw_turn(info.id, position=3, reason="asked again") == 1

    answer = send(proxy, "t", history)
    assert answer.status_code == 200, answer.text
    assert store.session(info.id).message_count == 3
    history += [
        {
            "role": "assistant",
            "content": answer.json()["content"] + [{"type": "text", "text": "!"}],
        },
        {"role": "user", "content": "Next."},
    ]
    assert send(proxy, "t", history).status_code == 200

    assert len(store.list_sessions().sessions) == 2
    assert store.session(info.id).message_count == 3  # still awaiting its reply
