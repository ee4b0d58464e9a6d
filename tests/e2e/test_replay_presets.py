"""Every shared transcript with each preset, and each preset at 16k, 32k and 64k: valid,
in-budget requests, with prunes and compaction generations recorded; the audit re-derives
every recorded decision. (The default preset runs on every transcript at every window in
`test_replay_transcripts.py`.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.transcripts import load_transcript
from abridged.application.auditing import audit_session
from abridged.domain.errors import ContextOverflowError
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import PRESETS, settings_from
from tests.e2e.test_replay_transcripts import COUNTER, WINDOWS, Recounter, transcripts
from tests.support.anthropic_rules import assert_valid_request

PRESET_NAMES = [name for name in PRESETS if name != "default"]  # default: test_replay_transcripts


def each_preset_on_every_transcript() -> list[tuple[Path, int, str]]:
    """Every (transcript, preset) pair, at one window, the windows taken in turn so that each
    transcript meets every window and each preset every window on five transcripts: the
    pairs a replay's outcome depends on, at a third of the replays of every combination."""
    return [
        (path, WINDOWS[(i + j) % len(WINDOWS)], preset)
        for i, path in enumerate(transcripts())
        for j, preset in enumerate(PRESET_NAMES)
    ]


@pytest.mark.transcripts
@pytest.mark.skipif(not transcripts(), reason="the shared transcripts folder is absent")
@pytest.mark.parametrize(
    ("path", "window", "preset"),
    each_preset_on_every_transcript(),
    ids=lambda v: getattr(v, "stem", str(v)),
)
def test_each_preset_gives_valid_in_budget_requests(path: Path, window: int, preset: str) -> None:
    transcript = load_transcript(path)
    app = bootstrap(counter=COUNTER)
    reserve = min(8192, window // 4)
    session_id = app.start_session(
        model=transcript.model or "claude-sonnet-4-5",
        context_window=window,
        max_output_tokens=reserve,
        system=transcript.system,
        tools=transcript.tools,
        settings=settings_from(preset),
    )
    recounter = Recounter()
    requests = 0
    previous: tuple[Message, ...] = ()
    previous_view: tuple[int, ...] = ()
    for message in transcript.messages:
        if message.role is Role.ASSISTANT:
            try:
                prepared = app.prepare_request(session_id)
            except ContextOverflowError:  # pragma: no cover - none of the transcripts needs it
                pytest.fail(f"request {requests + 1} could not fit")
            body = render_request(prepared.context, model=prepared.model, max_tokens=reserve)
            assert_valid_request(body)
            # Between prunes, downgrades and compactions, each request starts with the last.
            session = app.session(session_id)
            view = (
                session.generation,
                session.prune_boundary,
                sum(len(e.replacements) for e in session.entries),
            )
            if view == previous_view:
                assert prepared.context.messages[: len(previous)] == previous
            previous, previous_view = prepared.context.messages, view
            assert recounter.context(prepared.context) == prepared.context.estimate
            assert prepared.context.estimate <= window - reserve
            requests += 1
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)

    history = app.history(session_id)
    session = app.session(session_id)
    estimates_over_half = requests and session.message_count > 100
    if window == WINDOWS[0] and estimates_over_half:
        assert session.generation > 0 or any(isinstance(e, Session.ToolsPruned) for e in history)
    generations = [e.generation for e in history if isinstance(e, Session.CompactionCompleted)]
    assert generations == list(range(1, len(generations) + 1))
    audited = audit_session(app, session_id)
    assert audited.mismatches == ()
    assert [c.generation for c in audited.compactions] == generations
    assert len(audited.requests) == requests
