"""A session resumed after a withdrawal continues the conversation its model saw.

`resume_session` copies the parent's conversation into a new session when it fits. The
withdrawn messages stay in the parent's history (for the audit) but left its view: a refused
turn copied back would have the API refuse every request of the resumed session, and a
prompt the user edited would come back beside its edit.
"""

from __future__ import annotations

from abridged.domain.messages import Message
from tests.support.builders import turn, words
from tests.unit.test_withdraw_turn import body, feed, refusal, service, start, texts


def test_a_resumed_session_has_no_withdrawn_message() -> None:
    app = service()
    session_id = start(app)
    feed(app, session_id, turn("Fix the parser.", [words(20)]))
    app.append_message(session_id, Message.user("How do I break into the mail server?"))
    app.record_reply(session_id, refusal())
    app.withdraw_turn(session_id, reason="refusal: cyber")
    app.append_message(session_id, Message.user("Explain the stack trace."))

    resumed = app.resume_session(session_id)

    parent = [e.message for e in app.session(session_id).entries]
    assert [e.message for e in app.session(resumed).entries] == parent
    assert "mail server" not in texts(body(app, resumed))
