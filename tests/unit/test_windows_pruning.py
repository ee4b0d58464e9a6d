"""`whole_until_threshold`: a session that never reaches its threshold is sent whole, its old
tool outputs included (docs/settings.md, docs/evaluation.md "A tenth outside check"). At
100k and larger windows `auto` otherwise prunes sessions far below the threshold, billed more
than sending them as they are."""

from __future__ import annotations

from uuid import UUID

from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.messages import Message
from abridged.domain.session import Session
from abridged.domain.settings import CompactionSettings
from tests.support.builders import TOOLS, exchange, words
from tests.support.checks import check_request
from tests.support.fakes import FakeTokenCounter

COUNTER = FakeTokenCounter()
WINDOW = 100_000


def start(app: Sessions, **settings: object) -> UUID:
    return app.start_session(
        model="claude-test",
        context_window=WINDOW,
        max_output_tokens=8_000,
        system="You are a careful coding agent.",
        tools=TOOLS,
        settings=CompactionSettings(**settings),  # type: ignore[arg-type]
    )


def loop(app: Sessions, session_id: UUID, steps: int, size: int) -> list[str]:
    """One turn of `read_file` calls, each output `size` words; returns the text of every
    request's tool outputs."""
    app.append_message(session_id, Message.user("Audit every module."))
    shown: list[str] = []
    for i in range(steps):
        call, result = exchange([f"module {i}\n" + words(size)], name="read_file")
        check_request(app.prepare_request(session_id), COUNTER)
        app.record_reply(session_id, call)
        app.append_message(session_id, result)
    context = app.prepare_request(session_id).context
    shown += [str(r.content) for m in context.messages for r in m.tool_results]
    return shown


def prunes(app: Sessions, session_id: UUID) -> list[Session.ToolsPruned]:
    return [e for e in app.history(session_id) if isinstance(e, Session.ToolsPruned)]


def compactions(app: Sessions, session_id: UUID) -> int:
    return sum(isinstance(e, Session.CompactionCompleted) for e in app.history(session_id))


def test_a_session_below_its_threshold_is_sent_whole(app: Sessions) -> None:
    # 30 outputs of about 1,000 tokens: past prune_protect_share + prune_min_share of the
    # budget (a quarter), below the threshold (40% of the window). The default settings.
    session_id = start(app)
    shown = loop(app, session_id, steps=30, size=1_000)
    estimate = app.prepare_request(session_id).context.estimate
    assert 0.25 * (WINDOW - 8_000) < estimate < 0.4 * WINDOW
    assert prunes(app, session_id) == []
    assert compactions(app, session_id) == 0
    assert not any("truncated" in text or "pruned" in text for text in shown)
    assert audit_session(app, session_id).mismatches == ()


def test_without_it_the_same_session_is_pruned_below_the_threshold(app: Sessions) -> None:
    session_id = start(app, whole_until_threshold=False)
    loop(app, session_id, steps=30, size=1_000)
    assert compactions(app, session_id) == 0
    assert prunes(app, session_id)
    assert audit_session(app, session_id).mismatches == ()


def test_once_compacted_auto_prunes_between_compactions_as_before(app: Sessions) -> None:
    session_id = start(app)
    loop(app, session_id, steps=90, size=1_000)
    history = app.history(session_id)
    first = next(k for k, e in enumerate(history) if isinstance(e, Session.CompactionCompleted))
    before = [e for e in history[:first] if isinstance(e, Session.ToolsPruned)]
    after = [
        e
        for e in history[first:]
        if isinstance(e, Session.ToolsPruned) and e.reason.startswith("about")
    ]
    assert before == []
    assert after  # between compactions a prune still puts the next one off
    assert audit_session(app, session_id).mismatches == ()


def test_a_session_stored_before_the_setting_keeps_its_rule_and_fingerprint() -> None:
    before = CompactionSettings(whole_until_threshold=False)
    stored = before.to_dict()
    del stored["whole_until_threshold"]
    assert not CompactionSettings.from_stored(stored).whole_until_threshold
    assert CompactionSettings.from_stored(stored).fingerprint == before.fingerprint
