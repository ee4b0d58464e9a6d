"""Every shared transcript, replayed at 16k, 32k and 64k: every request is valid and its
estimate, recounted from scratch, is within the window minus the output reservation; and
`abridged replay` dumps the same requests as files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from abridged.adapters.cli import main
from abridged.adapters.token_counters import TiktokenCounter
from abridged.domain.context import Context
from abridged.domain.messages import Message
from abridged.domain.tokens import REQUEST_OVERHEAD, message_tokens, system_tokens, tools_tokens
from tests.conftest import TRANSCRIPTS
from tests.support.anthropic_rules import assert_valid_request
from tests.support.checks import system_text
from tests.support.counting import MemoCounter
from tests.support.replays import ON_ONE_WORKER, Replayed

COUNTER = MemoCounter(TiktokenCounter())
WINDOWS = (16_000, 32_000, 64_000)


def transcripts() -> list[Path]:
    if not TRANSCRIPTS.is_dir():
        return []
    return sorted(TRANSCRIPTS.glob("*.jsonl"))


class Recounter:
    """Counts request bodies from scratch with the library's rule; consecutive requests share
    most messages, so each distinct message is counted once."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.by_message: dict[Message, int] = {}

    def message(self, wire: dict[str, object]) -> int:
        key = json.dumps(wire, sort_keys=True, ensure_ascii=False)
        if key not in self.seen:
            self.seen[key] = message_tokens(Message.from_wire(wire), COUNTER.count)
        return self.seen[key]

    def context(self, context: Context) -> int:
        """The same count, from the context's messages (keyed by value, not by JSON)."""
        total = REQUEST_OVERHEAD + system_tokens(context.system, COUNTER.count)
        total += tools_tokens(context.tools, COUNTER.count)
        for message in context.messages:
            if message not in self.by_message:
                self.by_message[message] = message_tokens(message, COUNTER.count)
            total += self.by_message[message]
        return total

    def body(self, body: dict[str, object]) -> int:
        return (
            REQUEST_OVERHEAD
            + system_tokens(system_text(body), COUNTER.count)
            + tools_tokens(body.get("tools", []), COUNTER.count)  # type: ignore[arg-type]
            + sum(self.message(m) for m in body["messages"])  # type: ignore[attr-defined,misc]
        )


@ON_ONE_WORKER
@pytest.mark.transcripts
@pytest.mark.skipif(not transcripts(), reason="the shared transcripts folder is absent")
@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("transcript", transcripts(), ids=lambda p: p.stem)
def test_every_request_is_valid_and_within_budget(
    transcript: Path, window: int, default_replays: Callable[[int], Replayed]
) -> None:
    replayed = default_replays(window)
    assert replayed.problems[transcript.name] == []
    session = replayed.app.session(replayed.session_ids[transcript.name])
    if window == WINDOWS[0] and session.message_count > 100:
        assert session.generation > 0


def one_window_each() -> list[tuple[Path, int]]:
    """Each transcript at one window, the windows taken in turn: every transcript and every
    window go through the command (every request is checked above, at every window)."""
    return [(path, WINDOWS[i % len(WINDOWS)]) for i, path in enumerate(transcripts())]


@pytest.mark.transcripts
@pytest.mark.skipif(not transcripts(), reason="the shared transcripts folder is absent")
@pytest.mark.parametrize(
    ("transcript", "window"), one_window_each(), ids=lambda v: getattr(v, "stem", str(v))
)
def test_every_dumped_request_is_valid_and_within_budget(
    transcript: Path, window: int, tmp_path: Path
) -> None:
    dump = tmp_path / "requests"
    result = CliRunner().invoke(
        main,
        [
            "replay",
            str(transcript),
            "--window",
            str(window),
            "--db",
            ":memory:",
            "--dump-requests",
            str(dump),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    reports, summary = lines[:-1], lines[-1]["summary"]
    bodies = sorted(dump.glob("*.json"))
    assert len(bodies) == len(reports) == summary["requests"] > 0
    recounter = Recounter()
    try:
        for path, report in zip(bodies, reports, strict=True):
            body = json.loads(path.read_text(encoding="utf-8"))
            assert_valid_request(body)
            counted = recounter.body(body)
            assert counted == report["tokens"], path.name
            assert counted <= window - body["max_tokens"], path.name
    finally:
        shutil.rmtree(dump)
