"""A worker process for the reliability runs: it drives one session in a store, as a host app
would, and prints a line for every write the service acknowledged.

    python -m tests.reliability.worker agent  DB SESSION_ID STEPS
    python -m tests.reliability.worker writer DB SESSION_ID STEPS TAG

`agent` plays a coding agent: a user message (a prompt, or tool results), then the request is
prepared (pruned or compacted when due) and a reply recorded; it resumes a session in any
state, so it can be killed anywhere and started again. `writer` appends STEPS messages to a
session that other writers append to as well: a user message when the last is the model's,
a reply otherwise, re-reading the session when another writer got there first.

Each acknowledged write prints `ack POSITION DIGEST`; before each step the worker prints
`phase NAME`, so a kill can be put at a phase.
"""

from __future__ import annotations

import hashlib
import json
import sys
import uuid
from uuid import UUID

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.cli.common import configure_logging
from abridged.application.service import Sessions
from abridged.domain.errors import InvalidMessageError, SessionError
from abridged.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

WINDOW = 8_000
MAX_OUTPUT = 1_000


def digest(message: Message) -> str:
    """A short fingerprint of a message, to find it again in the history."""
    wire = json.dumps(message.to_wire(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(wire.encode()).hexdigest()[:16]


def say(*parts: object) -> None:
    print(*parts, flush=True)


def start(app: Sessions) -> UUID:
    """A session sized so that compaction comes every few turns."""
    return app.start_session(
        model="claude-sonnet-4-5",
        context_window=WINDOW,
        max_output_tokens=MAX_OUTPUT,
        system="You are a careful coding agent working in a repository.",
        tools=[
            {
                "name": "run_command",
                "description": "Runs a shell command.",
                "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
            }
        ],
    )


def _output(nonce: str) -> str:
    lines = [
        f"{nonce} line {k}: test_parser.py::test_case_{k} PASSED in 0.0{k % 9}s" for k in range(40)
    ]
    return "\n".join(lines)


def agent(app: Sessions, session_id: UUID, steps: int) -> None:
    for _ in range(steps):
        session = app.session(session_id)
        nonce = uuid.uuid4().hex[:12]
        if session.awaiting_reply:
            due = session.estimate() >= session.limits.threshold
            say("phase compaction" if due else "phase prepare")
            app.prepare_request(session_id)
            say("phase record")
            if nonce[0] in "0123":
                reply = Message.assistant(f"All done for now ({nonce}).")
            else:
                reply = Message.assistant(
                    TextBlock(f"Running the tests ({nonce})."),
                    ToolUseBlock(
                        f"toolu_{nonce}", "run_command", {"command": f"pytest -k {nonce}"}
                    ),
                )
            position = app.record_reply(session_id, reply)
        else:
            last = session.entries[-1].message if session.entries else None
            pending = last.tool_uses if last is not None else ()
            if pending:
                message = Message.user(
                    *(ToolResultBlock(use.id, _output(nonce)) for use in pending)
                )
            else:
                message = Message.user(f"Please fix the failing parser test ({nonce}).")
            say("phase append")
            position = app.append_message(session_id, message)
            reply = message
        say("ack", position, digest(reply))


def writer(app: Sessions, session_id: UUID, steps: int, tag: str) -> None:
    done = 0
    attempt = 0
    while done < steps:
        attempt += 1
        session = app.session(session_id)
        text = f"{tag} write {done} attempt {attempt}"
        try:
            if session.awaiting_reply:
                if done % 25 == 0:
                    say("phase prepare")
                    app.prepare_request(session_id)
                message = Message.assistant(text)
                position = app.record_reply(session_id, message)
            else:
                message = Message.user(text)
                position = app.append_message(session_id, message)
        except InvalidMessageError:
            continue  # another writer got there first: the roles no longer fit; read again
        except SessionError as error:
            say("error", type(error).__name__)
            continue
        say("ack", position, digest(message))
        done += 1


def main(argv: list[str]) -> None:
    mode, db, session_text, steps = argv[:4]
    configure_logging(verbose=False)
    app = bootstrap(db)
    session_id = UUID(session_text)
    say("ready")
    if mode == "agent":
        agent(app, session_id, int(steps))
    elif mode == "writer":
        writer(app, session_id, int(steps), argv[4])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    say("done")


if __name__ == "__main__":
    main(sys.argv[1:])
