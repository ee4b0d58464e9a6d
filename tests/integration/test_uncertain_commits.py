"""A save whose COMMIT reached the store but whose answer did not (a connection lost right
after it): the store raises, yet the events are stored. The service reads the session's last
event back and, when its chained hash is the one it wrote, takes the save as done, so a host
does not retry (and duplicate) what is stored already. A failure before the commit is still
a `StoreError`, with nothing stored."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import OperationalError

from abridged.adapters.bootstrap import bootstrap
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.errors import StoreError
from abridged.domain.messages import Message
from abridged.domain.session import Session
from tests.support.fakes import FakeSummarizer, FakeTokenCounter
from tests.support.postgres import fresh_database


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "sessions.sqlite3")
    else:
        yield fresh_database(request.getfixturevalue("postgres_server"))


def open_app(db: str) -> Sessions:
    return bootstrap(db, counter=FakeTokenCounter(), summarizer=FakeSummarizer())


def failing_once(app: Sessions, *, after_commit: bool) -> Callable[[], bool]:
    """Makes the next write raise, after its events were stored or before; returns whether
    the failure happened yet."""
    insert = app.recorder.insert_events
    state = {"armed": True}

    def insert_then_fail(stored: Any, **kwargs: Any) -> Any:
        if not state["armed"]:
            return insert(stored, **kwargs)
        state["armed"] = False
        if after_commit:
            insert(stored, **kwargs)
        raise OperationalError("server closed the connection unexpectedly")

    app.recorder.insert_events = insert_then_fail  # type: ignore[method-assign,assignment]
    return lambda: not state["armed"]


def texts(app: Sessions, session_id: Any) -> list[str]:
    history = app.history(session_id)
    return [e.message.text for e in history if isinstance(e, Session.MessageAppended)]


def started(app: Sessions) -> Any:
    session_id = app.start_session(
        model="claude-sonnet-4-6", context_window=50_000, max_output_tokens=1_000
    )
    app.append_message(session_id, Message.user("What does the parser do?"))
    return session_id


def test_a_batch_whose_commit_landed_is_saved_once(db: str) -> None:
    app = open_app(db)
    session_id = started(app)
    failed = failing_once(app, after_commit=True)

    app.append_messages(
        session_id, [Message.assistant("It reads tokens."), Message.user("And the lexer?")]
    )

    assert failed()
    assert texts(app, session_id) == [
        "What does the parser do?",
        "It reads tokens.",
        "And the lexer?",
    ]
    # The session goes on from the stored state; its event chain holds, read afresh too.
    app.prepare_request(session_id)
    app.record_reply(session_id, Message.assistant("It splits the text."))
    app.close()
    reopened = open_app(db)
    assert texts(reopened, session_id)[-1] == "It splits the text."
    assert reopened.session(session_id).message_count == 4
    assert audit_session(reopened, session_id).ok
    reopened.close()


def test_a_write_that_failed_before_its_commit_raises_and_stores_nothing(db: str) -> None:
    app = open_app(db)
    session_id = started(app)
    failing_once(app, after_commit=False)
    batch = [Message.assistant("It reads tokens."), Message.user("And the lexer?")]

    with pytest.raises(StoreError, match="server closed the connection"):
        app.append_messages(session_id, batch)

    assert texts(app, session_id) == ["What does the parser do?"]
    app.append_messages(session_id, batch)  # the retry the error asks for
    assert texts(app, session_id) == [
        "What does the parser do?",
        "It reads tokens.",
        "And the lexer?",
    ]
    assert audit_session(app, session_id).ok
    app.close()
