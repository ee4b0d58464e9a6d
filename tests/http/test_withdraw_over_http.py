"""`POST /v1/sessions/{id}/withdraw` takes its position as the service does: a JSON integer
from 0, nothing else. A withdrawal cannot be undone (the view never gets the messages
back), so a value that is not a position must not be read as one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.http.test_serve_sessions_api import TOKEN_A, api, start


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
