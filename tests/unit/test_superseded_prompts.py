"""A host that gives its system prompt again at every turn (a date line, a memory section) on
a model that takes `role: "system"` messages: each new prompt goes as a system message, and a
compaction stops showing the ones a later prompt replaces. Before, a compaction carried every
one of them (system messages are never summarized away) until they filled the window and the
session could take no more messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from abridged.domain.instructions import INSTRUCTION_PREAMBLE, is_instruction
from abridged.domain.messages import Message
from abridged.domain.session import Session
from tests.support.builders import words
from tests.support.checks import check_request
from tests.unit.test_system_messages import COUNTER, RULE, feed, service, start, system_messages

PROMPT = "You are a support agent. " + words(250, "policy")
"""A prompt of about a tenth of the window: ten copies of it fill what the budget leaves."""


def prompt(turn: int) -> str:
    return f"{PROMPT}\nToday is day {turn}."


def converse_with_new_prompts(app: Sessions, session_id: UUID, turns: int) -> list[dict[str, Any]]:
    """Each turn: a new prompt, then a turn of the conversation; every request checked (valid,
    within the budget). The requests' bodies."""
    bodies = []
    for day in range(turns):
        app.reconfigure(session_id, system=prompt(day))
        app.append_message(session_id, Message.user(f"Question of day {day}. " + words(60)))
        bodies.append(check_request(app.prepare_request(session_id), COUNTER))
        app.record_reply(session_id, Message.assistant(f"Answer of day {day}. " + words(60)))
    return bodies


def instructions(body: dict[str, Any]) -> list[str]:
    return [
        m["content"][0]["text"]
        for m in system_messages(body)
        if m["content"][0]["text"].startswith(INSTRUCTION_PREAMBLE)
    ]


def test_a_prompt_given_at_every_turn_never_fills_the_window(tmp_path: Path) -> None:
    db = tmp_path / "sessions.sqlite3"
    app = service(db)
    session_id = start(app, window=3_000)

    bodies = converse_with_new_prompts(app, session_id, 40)

    session = app.session(session_id)
    assert session.generation >= 5  # compacted many times over the forty prompts
    # What a compaction carries holds one prompt at most, the latest it summarized; the
    # requests show the prompt in effect last (and those since, in the kept turns).
    carried = [e for e in session.carried_system if is_instruction(e.message)]
    assert len(carried) <= 1
    last = instructions(bodies[-1])
    assert last[-1].endswith("Today is day 39.")
    assert len(last) == len(set(last)) <= 3
    # Each compaction names the prompts it stopped showing; the audit re-derives them.
    completed = [e for e in app.history(session_id) if isinstance(e, Session.CompactionCompleted)]
    assert sum(len(e.superseded_system or ()) for e in completed) >= 30
    assert audit_session(app, session_id).ok
    app.append_message(session_id, Message.user("And tomorrow?"))
    cold = service(db)  # replayed from the file, event by event
    assert cold.session(session_id).carried_system == session.carried_system
    assert check_request(cold.prepare_request(session_id), COUNTER) == check_request(
        app.prepare_request(session_id), COUNTER
    )


def test_the_hosts_own_system_messages_stay_carried_beside_the_latest_prompt() -> None:
    app = service()
    session_id = start(app, window=3_000)
    app.append_message(session_id, Message.user("Start."))
    app.append_message(session_id, Message.system(RULE))
    app.record_reply(session_id, Message.assistant("Oui."))

    converse_with_new_prompts(app, session_id, 20)
    feed(app, session_id, 6, first=100)  # the last prompt's turn summarized too
    app.append_message(session_id, Message.user("And now?"))
    body = check_request(app.prepare_request(session_id), COUNTER)

    shown = [m["content"][0]["text"] for m in system_messages(body)]
    assert shown[0] == RULE  # an instruction of the host's: never summarized away
    assert instructions(body) == [INSTRUCTION_PREAMBLE + prompt(19)]
    assert audit_session(app, session_id).ok
