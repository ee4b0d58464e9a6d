"""The shared transcripts replayed under the default settings, once per test run.

Replaying every transcript at a window takes seconds; the request checks, the audit tests
and the read model's tests read the same replays, so they share one in-memory store per
window, made once by the one xdist worker that runs them all (`ON_ONE_WORKER`). Each request
is checked as it is prepared (`Replayed.problems`); tests that use the replays only read
them (audits, histories, the notification log).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from uuid import UUID

import attrs
import pytest

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.transcripts import load_transcript
from abridged.application.preparing import PreparedRequest
from abridged.application.service import Sessions
from abridged.domain.messages import Role
from tests.support.anthropic_rules import assert_valid_request


@attrs.frozen
class Replayed:
    """One store holding every shared transcript replayed at one window."""

    app: Sessions
    session_ids: dict[str, UUID]
    """By transcript file name."""
    problems: dict[str, list[str]]
    """By transcript file name: what was wrong with each request prepared during the replay
    (rendered, checked against the API's rules, recounted from scratch, held to the budget);
    empty when nothing was."""


Check = Callable[[PreparedRequest], None]
"""Called with each request prepared during a replay; raises `AssertionError` when the
request is wrong."""


def replay(app: Sessions, path: object, window: int, check: Check | None = None) -> UUID:
    """Feeds a transcript through a new session as a host would, preparing a request before
    each assistant message (given to `check`); returns the session's id."""
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
            prepared = app.prepare_request(session_id)
            if check is not None:
                check(prepared)
            app.record_reply(session_id, message)
        else:
            app.append_message(session_id, message)
    return session_id


def checked_into(problems: list[str], window: int) -> Check:
    """A check that renders each request, checks it against the API's rules, recounts it
    from scratch and holds it to the budget, adding what is wrong to `problems`."""
    from tests.e2e.test_replay_transcripts import Recounter

    recounter = Recounter()
    requests = itertools.count(1)

    def check(prepared: PreparedRequest) -> None:
        number = next(requests)
        context = prepared.context
        try:
            body = render_request(context, model=prepared.model, max_tokens=prepared.max_tokens)
            assert_valid_request(body)
            assert recounter.body(body) == context.raw_estimate, "the estimate is not the recount"
            assert context.estimate <= window - prepared.max_tokens, "over the budget"
        except AssertionError as error:
            problems.append(f"request {number}: {error}")

    return check


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
        ids: dict[str, UUID] = {}
        problems: dict[str, list[str]] = {}
        for path in transcripts():
            found: list[str] = []
            problems[path.name] = found
            ids[path.name] = replay(app, path, window, checked_into(found, window))
        made[window] = Replayed(app, ids, problems)
    yield made.__getitem__
    for replayed in made.values():
        replayed.app.close()
