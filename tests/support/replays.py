"""The shared transcripts replayed under the default settings, once per test process.

Replaying every transcript at a window takes seconds; the audit tests and the read model's
tests read the same replays, so they share one in-memory store per window, made once per
test process (each xdist worker). Tests that use it only read it (audits, histories, the
notification log).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from uuid import UUID

import attrs
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.transcripts import load_transcript
from abridged.application.service import Sessions
from abridged.domain.messages import Role


@attrs.frozen
class Replayed:
    """One store holding every shared transcript replayed at one window."""

    app: Sessions
    session_ids: dict[str, UUID]
    """By transcript file name."""


def replay(app: Sessions, path: object, window: int) -> UUID:
    """Feeds a transcript through a new session as a host would, preparing a request before
    each assistant message; returns the session's id."""
    transcript = load_transcript(path)  # type: ignore[arg-type]
    session_id = app.start_session(
        model=transcript.model or "claude-sonnet-4-5",
        context_window=window,
        max_output_tokens=min(8192, window // 4),
        system=transcript.system,
        tools=transcript.tools,
    )
    for message in transcript.messages:
        if message.role is Role.ASSISTANT:
            app.prepare_request(session_id)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    return session_id


ON_ONE_WORKER = pytest.mark.xdist_group("default-replays")
"""For the tests that read `default_replays`: run on one xdist worker, so that the replays
are made once per run rather than once per worker."""


@pytest.fixture(scope="session")
def default_replays() -> Iterator[Callable[[int], Replayed]]:
    """`default_replays(window)`: every shared transcript replayed at `window`, for each of
    the replay tests' windows. Made when the fixture is set up, before the per-test fixture
    that closes the services a test opens; closed at the end of the test process."""
    from tests.e2e.test_replay_transcripts import COUNTER, WINDOWS, transcripts

    made: dict[int, Replayed] = {}
    for window in WINDOWS:
        app = bootstrap(counter=COUNTER)
        made[window] = Replayed(app, {p.name: replay(app, p, window) for p in transcripts()})
    yield made.__getitem__
    for replayed in made.values():
        replayed.app.close()
