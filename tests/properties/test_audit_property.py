"""The audit over generated conversations and settings: a session written by the service
always audits clean, whatever the summarizer does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.application.auditing import audit_session
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.properties.strategies import conversations
from tests.properties.test_invariants import COUNTER, PROPERTY, knobs, replay_live, windows
from tests.support.fakes import FakeSummarizer


@PROPERTY
@given(conversations(), windows, knobs, st.integers(0, 3))
def test_every_session_the_service_writes_audits_clean(
    messages: list[Message],
    window: tuple[int, int],
    knob: CompactionSettings,
    failures: int,
) -> None:

    summarizer = FakeSummarizer(fail=failures) if failures else ExtractiveSummarizer(COUNTER)
    app, session_id, _, _ = replay_live(messages, window, knob, summarizer)

    audited = audit_session(app, session_id)

    assert audited.mismatches == ()
    completed = [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]
    assert [c.generation for c in audited.compactions] == [c.generation for c in completed]
