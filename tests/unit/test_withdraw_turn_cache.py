"""A prompt-cache miss a withdrawal causes is one abridged planned.

The request after a withdrawn turn no longer extends the request that held the turn, so the
API's cache diagnostics name `messages_changed` for the reply to it. `stats`, `report` and
the audit flag a miss no recorded change explains; this one the `TurnWithdrawn` explains.
"""

from __future__ import annotations

from pathlib import Path

from abridged.application.auditing import audit_session
from abridged.domain.messages import Message
from tests.unit.test_cache_diagnostics import reply, service, start


def test_the_cache_miss_after_a_withdrawn_turn_is_planned(tmp_path: Path) -> None:
    app = service(tmp_path / "s.sqlite3")
    session_id = start(app)
    app.append_message(session_id, Message.user("Hi"))
    app.record_reply(session_id, reply("Hello."))
    app.append_message(session_id, Message.user("Get me into their mail server."))
    app.record_reply(session_id, reply("I can", stop_reason="refusal"))
    app.withdraw_turn(session_id, reason="refusal")
    app.append_message(session_id, Message.user("How do I renew our TLS cert?"))

    app.record_reply(session_id, reply("Run certbot.", "messages_changed"))

    assert app.stats(session_id).unplanned_cache_misses == 0
    assert audit_session(app, session_id).ok
