"""Claude Code's requests, rebuilt from logs in the shapes of real ones, through `abridged serve`.

The logs are written here in the shapes real Claude Code 2.1 logs have
(`tests/unit/test_importers_real_shapes.py`): a reply's signed thinking and parallel calls
streamed between their results, tool calls carrying `caller`, `isMeta` Stop-hook feedback,
and Claude Code's own compaction (a `compact_boundary` line, then its summary).
`tests.support.real_traffic` rebuilds the requests Claude Code sent from them and sends each
through the proxy, the fake upstream answering with the reply the log recorded. The same
driver runs the real logs (`python -m tests.support.real_traffic LOG...`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import ServeConfig
from abridged.adapters.transcripts import load_transcript
from abridged.application.service import Sessions
from tests.http.test_serve_flows import source
from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic
from tests.support.harness_traffic import claude_code_system
from tests.support.real_logs import compaction_in, raw_replies
from tests.support.real_traffic import (
    MAX_TOKENS,
    Outcome,
    RealRun,
    body_of,
    requests_of,
    send_log,
)
from tests.support.real_traffic_checks import cached_prefix_kept, whole_blocks_streamed
from tests.support.serve import served
from tests.unit.test_importers_real_shapes import RealLog, call, text

WINDOW = MAX_TOKENS + 8_000
"""An 8,000-token budget: the logs below reach it after a few rounds."""


def signed(words: str, n: int) -> dict[str, Any]:
    return {"type": "thinking", "thinking": words, "signature": f"EsMCCkYICxgCKkD{n:04d}=="}


def direct(tool_id: str, command: str) -> dict[str, Any]:
    """A tool call as Claude Code 2.1 logs it: with the `caller` the API streamed."""
    return {**call(tool_id, command), "caller": {"type": "direct"}}


def coding_log(
    path: Path, rounds: int = 8, compact_after: int | None = None, *, blank: bool = False
) -> Path:
    """A session of `rounds` prompts, each answered by thinking and two parallel calls
    streamed between their results, then a text reply; every third reply draws Stop-hook
    feedback. With `compact_after`, Claude Code compacts after that round's results. With
    `blank`, each reply of calls streams a blank text block before its thinking (as 29
    replies of the five long real logs do)."""
    log = RealLog()
    for r in range(rounds):
        log.user(f"Round {r}: read lib/mod_{r}.ex and lib/mod_{r}_test.exs, then fix them.")
        reply = f"msg_01R{r:03d}calls"
        if blank:
            log.block(reply, text("\n\n"))
        log.block(reply, signed(f"Round {r}: both files at once.", 2 * r))
        first = log.block(reply, direct(f"toolu_{r}a", f"cat lib/mod_{r}.ex"))
        log.progress()
        log.result(f"toolu_{r}a", source(f"mod_{r}", 40), parent=first)
        second = log.block(reply, direct(f"toolu_{r}b", f"cat lib/mod_{r}_test.exs"))
        log.result(f"toolu_{r}b", source(f"mod_{r}_test", 40), parent=second)
        if r == compact_after:
            boundary = log.add(
                "system",
                subtype="compact_boundary",
                content="Conversation compacted",
                isMeta=False,
                compactMetadata={"trigger": "auto", "preTokens": 167094},
            )
            log.entries[-1]["parentUuid"] = None
            log.user(
                "This session is being continued from a previous conversation that ran out "
                f"of context. Summary: rounds 0 to {r} read and fixed lib/mod_*.ex.",
                parent=boundary,
                isCompactSummary=True,
            )
        log.block(f"msg_01R{r:03d}text", text(f"Round {r}: mod_{r} fixed and tested."))
        if r % 3 == 2:
            log.user("Stop hook feedback:\n[stop.sh]: uncommitted changes", isMeta=True)
            log.block(f"msg_01R{r:03d}hook", signed("The hook wants a commit.", 2 * r + 1))
            log.block(f"msg_01R{r:03d}hook", text("Committed."))
    return log.write(path)


@pytest.fixture
def proxy(fake_anthropic: FakeAnthropic, tmp_path: Path) -> Iterator[tuple[str, Sessions]]:
    db = str(tmp_path / "sessions.sqlite3")
    store = bootstrap(db)
    config = ServeConfig(
        db=db, upstream=fake_anthropic.base_url, upstream_timeout=30.0, context_window=WINDOW
    )
    try:
        with whole_blocks_streamed(), served(config, store) as url:
            yield url, store
    finally:
        store.close()


def replay(
    proxy: tuple[str, Sessions],
    fake_api: FakeAnthropic,
    log: Path,
    *,
    header: bool,
    as_streamed: bool = False,
) -> Outcome:
    """Sends the log's requests; `as_streamed`: the upstream answers each reply as the log
    recorded it streamed (blank text blocks kept), the client sends it back as read."""
    url, store = proxy
    run = RealRun(url, fake_api, store)
    transcript = load_transcript(log)
    try:
        send_log(
            run,
            transcript,
            "cc-main",
            header=header,
            system=claude_code_system(),
            compaction=compaction_in(log),
            raw=raw_replies(log, transcript) if as_streamed else None,
        )
        return run.finish()
    finally:
        run.close()


def assert_clean(out: Outcome) -> None:
    assert out.refused == out.invalid == out.audit_failures == []
    assert out.prefix_breaks == out.altered_thinking == out.over_budget == []
    assert out.resummarized == []


@pytest.mark.parametrize("header", [True, False], ids=["named", "by-user-id"])
def test_a_real_shaped_session_compacts_in_one_session_with_its_prefix_kept(
    proxy: tuple[str, Sessions], fake_anthropic: FakeAnthropic, tmp_path: Path, header: bool
) -> None:
    out = replay(proxy, fake_anthropic, coding_log(tmp_path / "s.jsonl"), header=header)

    assert_clean(out)
    assert (out.sessions, out.branches) == (1, 0)
    assert out.compactions >= 1
    assert out.prefix_checked > out.view_changed > 0
    assert out.upstream_tokens < out.client_tokens


@pytest.mark.parametrize("header", [True, False], ids=["named", "by-user-id"])
def test_claude_codes_own_compaction_starts_one_branch_from_its_summary(
    proxy: tuple[str, Sessions], fake_anthropic: FakeAnthropic, tmp_path: Path, header: bool
) -> None:
    log = coding_log(tmp_path / "s.jsonl", compact_after=5)

    out = replay(proxy, fake_anthropic, log, header=header)

    # Its summarizing request extends the session; the shorter history that follows is a
    # divergence: one branch, started with the summary alone (nothing summarized again).
    assert_clean(out)
    assert (out.sessions, out.branches) == (1, 1)
    assert len(out.branch_starts) == 1
    assert "started with 1 messages" in out.branch_starts[0]


def test_the_requests_rebuilt_hold_each_reply_once_and_end_with_the_users_turn(
    tmp_path: Path,
) -> None:
    log = coding_log(tmp_path / "s.jsonl", compact_after=5)
    transcript = load_transcript(log)

    requests = requests_of(transcript, claude_code_system(), compaction_in(log))

    replies = sum(1 for m in transcript.messages if m.role.value == "assistant")
    assert len(requests) == replies + 1  # and Claude Code's summarizing request
    assert [r.kind for r in requests].count("compact") == 1
    for request in requests:
        assert request.messages[-1]["role"] == "user"
    after = [r for r in requests if r.kind == "after"]
    assert after
    assert all("being continued" in str(r.messages[0]) for r in after)


def test_a_session_named_by_claude_codes_own_session_id_is_not_found(
    proxy: tuple[str, Sessions], tmp_path: Path
) -> None:
    # A UUID names a session by its id (docs/serving.md): the id Claude Code gives its
    # sessions cannot name a new one.
    url, _ = proxy
    transcript = load_transcript(coding_log(tmp_path / "s.jsonl", rounds=1))
    request = requests_of(transcript, claude_code_system())[0]
    body = body_of(request, "claude-opus-4-6", transcript.tools, "u", thinks=True)
    answer = httpx2.post(
        f"{url}/v1/messages",
        json=body,
        headers={"x-api-key": TEST_API_KEY, "x-abridged-session": (name := RealLog().add("user"))},
    )
    assert answer.status_code == 404
    # The answer says how to name it instead, and that works.
    message = answer.json()["error"]["message"]
    assert f"x-abridged-session: conv-{name}" in message
    advised = httpx2.post(
        f"{url}/v1/messages",
        json=body,
        headers={"x-api-key": TEST_API_KEY, "x-abridged-session": f"conv-{name}"},
    )
    assert advised.status_code == 200


def test_the_fake_upstream_streams_a_real_tool_call_whole(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    db = str(tmp_path / "sessions.sqlite3")
    store = bootstrap(db)
    config = ServeConfig(db=db, upstream=fake_anthropic.base_url, context_window=WINDOW)
    try:
        with served(config, store) as url:
            out = replay(
                (url, store), fake_anthropic, coding_log(tmp_path / "s.jsonl", 2), header=True
            )
    finally:
        store.close()
    assert out.branches == 0


def test_a_prefix_changed_before_the_last_breakpoint_is_a_break(tmp_path: Path) -> None:
    transcript = load_transcript(coding_log(tmp_path / "s.jsonl", rounds=2))
    first, second = requests_of(transcript, claude_code_system())[1:3]
    before = body_of(first, "claude-opus-4-6", transcript.tools, "u", thinks=True)
    after = body_of(second, "claude-opus-4-6", transcript.tools, "u", thinks=True)
    assert cached_prefix_kept(before, after)

    after["messages"][1]["content"][0] = {**after["messages"][1]["content"][0], "thinking": "x"}
    assert not cached_prefix_kept(before, after)
    assert cached_prefix_kept(before, {**before, "messages": [*before["messages"], {}]})


def test_a_reply_streamed_with_a_blank_text_block_does_not_branch(
    proxy: tuple[str, Sessions], fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    log = coding_log(tmp_path / "s.jsonl", blank=True)

    out = replay(proxy, fake_anthropic, log, header=True, as_streamed=True)

    assert_clean(out)
    assert (out.sessions, out.branches) == (1, 0)


def test_a_conversation_that_diverged_65_times_is_still_answered(
    proxy: tuple[str, Sessions], fake_anthropic: FakeAnthropic
) -> None:
    # Each turn the client sends its last reply back as it kept it, not as it was streamed
    # (one of the ways above): each request diverges from the one before.
    url, _ = proxy
    history: list[Any] = [{"role": "user", "content": "Start."}]
    statuses = []
    with httpx2.Client(base_url=url, timeout=30.0) as client:
        for turn in range(66):
            body = {"model": "claude-opus-4-6", "max_tokens": 1_000, "messages": history}
            answer = client.post(
                "/v1/messages",
                json=body,
                headers={"x-api-key": TEST_API_KEY, "x-abridged-session": "cc-diverging"},
            )
            statuses.append(answer.status_code)
            kept = {"role": "assistant", "content": f"Reply {turn}, as the client kept it."}
            history = [*history, kept, {"role": "user", "content": f"Prompt {turn}."}]
    assert statuses == [200] * 66
