"""A turn asked again through `abridged serve`: after the model answered it with nothing
(the client sends it again with "Please continue", as the API's docs advise), and with the
same history on another model (a "regenerate on ..." button). Each goes on with a request
the API takes, in the session it belongs to; the fake API refuses any request that breaks
a rule."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from abridged.adapters.http.history import EMPTY_REPLY
from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from abridged.domain.session import Session
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import FakeAnthropic

MODEL = "claude-opus-4-8"
SESSION = {"x-abridged-session": "ticket-88"}


def ask(client: anthropic.Anthropic, history: list[Any], model: str = MODEL) -> Any:
    return client.messages.create(
        model=model, max_tokens=300, messages=history, extra_headers=SESSION
    )


def stored(store: Sessions, session_id: Any) -> list[dict[str, Any]]:
    return [
        e.message.to_wire() for e in store.history(session_id) if isinstance(e, MessageAppended)
    ]


@pytest.mark.parametrize(
    "empty", [[], [{"type": "text", "text": "\n\n"}]], ids=["no content", "white space"]
)
def test_a_turn_answered_with_nothing_goes_on_in_the_same_session(
    client: anthropic.Anthropic,
    fake_anthropic: FakeAnthropic,
    store: Sessions,
    empty: list[Any],
) -> None:
    history: list[Any] = [{"role": "user", "content": "Read the failing test."}]
    history.append({"role": "assistant", "content": ask(client, history).to_dict()["content"]})
    history.append({"role": "user", "content": "Run the tests."})
    fake_anthropic.enqueue(fake.message(empty, stop_reason="end_turn"))
    answered = ask(client, history).to_dict()["content"]
    assert answered == empty  # passed on as the API answered

    # The reply is not sent back (a request may not hold it): a new user message follows,
    # which the API (and the proxy) join to the turn before.
    history.append({"role": "user", "content": "Please continue"})
    ask(client, history)

    (info,) = store.list_sessions().sessions  # no branch
    withdrawn = [e for e in store.history(info.id) if isinstance(e, Session.TurnWithdrawn)]
    assert [e.reason for e in withdrawn] == [EMPTY_REPLY]
    joined = [
        {"type": "text", "text": "Run the tests."},
        {"type": "text", "text": "Please continue"},
    ]
    assert [m["role"] for m in fake_anthropic.requests_to()[-1].body["messages"]] == [
        "user",
        "assistant",
        "user",
    ]
    assert stored(store, info.id)[-2]["content"] == joined
    assert fake_anthropic.violations == []


def test_the_same_history_on_another_model_is_a_branch_sent_under_that_models_rules(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # A system message mid-conversation goes as it is to a model that takes one, and as
    # marked text to one that does not: the history asked again on such a model is not the
    # first model's request sent again.
    history: list[Any] = [
        {"role": "user", "content": "Fix the export."},
        {"role": "system", "content": "The user switched to plan mode."},
    ]
    first = ask(client, history)
    again = ask(client, history, model="claude-sonnet-4-6")
    back = ask(client, history)  # and back on the first model: its request, sent again

    sent = [r.body for r in fake_anthropic.requests_to()]
    assert [b["model"] for b in sent] == [MODEL, "claude-sonnet-4-6", MODEL]
    assert [m["role"] for m in sent[1]["messages"]] == ["user"]
    assert sent[2]["messages"] == sent[0]["messages"]
    assert fake_anthropic.violations == []
    sessions = store.list_sessions().sessions
    assert len(sessions) == 2  # the session, and one branch for the other model
    models = {store.session(info.id).model for info in sessions}
    assert models == {MODEL, "claude-sonnet-4-6"}
    assert all(reply.content for reply in (first, again, back))
