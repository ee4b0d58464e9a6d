"""A working day of agent-harness traffic through `abridged serve`, and what it cost.

A `Harness` sends requests shaped like Claude Code's and the Agent SDK's (a system prompt in
cached text blocks ending with an `<env>` date line, `metadata.user_id`, tools, adaptive
thinking, streaming) through the real `anthropic` SDK to the proxy, in front of the fake
Messages API. Every request is logged with the session the proxy answered it from (the
`x-abridged-session` header) and the body the upstream received, so a flow can be held to
what a user relies on:

- `Harness.costs()`: the sessions and branches the proxy started, its compactions,
  summarizer calls and prunes, and the *prefix breaks*: consecutive upstream requests of
  one session, same model, system prompt and tools, no compaction, prune or other planned
  change of the view between them, whose earlier messages are not the later one's first
  messages (the prompt cache cannot be read);
- `Harness.check()`: every upstream request valid, every session's audit clean, no message
  stored twice or mixed into another conversation, and each conversation's last session
  holding exactly its client's history and the reply it got.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import anthropic
import attrs
import pytest

from abridged.adapters.bootstrap import bootstrap
from abridged.adapters.http import ServeConfig
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import default_token_counter
from abridged.application.auditing import audit_session
from abridged.application.ports import Summary, TokenCounter
from abridged.application.service import Sessions
from abridged.domain.events import (
    ApiCompacted,
    CompactionCompleted,
    MessageAppended,
    MessagesReshown,
    ReasoningDowngraded,
    ToolsPruned,
)
from abridged.domain.messages import Message
from abridged.domain.session import Session
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.postgres import fresh_database
from tests.support.serve import served

MAIN_MODEL = "claude-opus-4-6"
SWITCHED_MODEL = "claude-sonnet-4-6"
SIDE_MODEL = "claude-haiku-4-5"
USER_ID = "user_9c1f3e_account_5d2a7b_session_4f1c8a5e-2b7d-4e0a-9c3b-5d6e7f8a9b0c"
BRANCH_KEY = "abridged:branch_of"
CONTEXT_BETA = "context-management-2025-06-27"
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
VIEW_CHANGES = (
    CompactionCompleted,
    ApiCompacted,
    ToolsPruned,
    ReasoningDowngraded,
    MessagesReshown,
)
"""The events after which a session's request may differ from the one before in its
earlier messages: a compaction, a prune, a downgrade of old thinking, messages shown again."""
SDK_FIELDS = frozenset({"thinking", "cache_control", "extra_headers", "tool_choice"})
INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)


def tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {key: {"type": kind} for key, kind in properties.items()},
        },
    }


TOOLS: list[Any] = [
    tool("Bash", "Run a shell command in the repository.", command="string"),
    tool("Read", "Read a file.", file_path="string"),
    tool("Edit", "Replace a string in a file.", file_path="string", old="string", new="string"),
    {
        **tool("Task", "Launch a subagent for a focused task.", prompt="string"),
        "cache_control": {"type": "ephemeral"},
    },
]
SUBAGENT_TOOLS: list[Any] = TOOLS[:2]


def claude_code_system(date: str = "2026-11-28", ttl: str | None = None) -> list[Any]:
    """Claude Code's system prompt: an identity block and the instructions, each cached,
    the instructions ending with the environment (its date line changes at midnight)."""
    mark: dict[str, str] = {"type": "ephemeral"} | ({"ttl": ttl} if ttl else {})
    return [
        {
            "type": "text",
            "text": "You are Claude Code, Anthropic's official CLI for Claude.",
            "cache_control": mark,
        },
        {
            "type": "text",
            "text": "You are an interactive CLI tool that helps users with software "
            "engineering tasks. Use the tools available to you. Be concise.\n\n<env>\n"
            f"Working directory: /home/dev/bookminder\nPlatform: linux\nToday's date: {date}\n"
            "</env>",
            "cache_control": mark,
        },
    ]


def subagent_system(kind: str) -> str:
    return (
        f"You are the {kind} agent for Claude Code. Given the user's message, use the tools "
        "available to complete the task; report your findings in your final message.\n\n"
        "<env>\nWorking directory: /home/dev/bookminder\n</env>"
    )


TITLE_SYSTEM = (
    "Summarize this coding conversation in under 50 characters. Capture the main task, key "
    "files, problems addressed, and current status."
)
TOPIC_SYSTEM = (
    "Analyze if this message indicates a new conversation topic. If it does, extract a 2-3 "
    "word title that captures the new topic. Format your response as a JSON object with two "
    'fields: "isNewTopic" (boolean) and "title" (string, or null if isNewTopic is false).'
)


def thinking(text: str, n: int) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": f"EqQBCkYIAxgCKkA{n:06d}sig"}


def call(tool_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}


def result(tool_id: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, **extra}


def text(words: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": words, **extra}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


class CountingSummarizer:
    """The default summarizer, counting its calls."""

    def __init__(self, counter: TokenCounter) -> None:
        self.inner = ExtractiveSummarizer(counter)
        self.calls = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    def summarize(self, messages: Sequence[Message], **request: Any) -> Summary:
        with self._lock:
            self.calls += 1
        return self.inner.summarize(messages, **request)


@attrs.frozen
class Sent:
    """One request of the day: the session that answered it, what the upstream received,
    and how many view changes (`VIEW_CHANGES`) that session had once it was answered."""

    session_id: UUID
    upstream: Mapping[str, Any]
    view_changes: int


@attrs.frozen
class Costs:
    """What a flow cost, as a user would count it."""

    sessions: int
    branches: int
    compactions: int
    summarizer_calls: int
    prunes: int
    prefix_breaks: int
    upstream_requests: int


def _plain(value: Any) -> Any:
    """`value` without cache markers and null fields; string contents as one text block."""
    if isinstance(value, Mapping):
        out = {k: _plain(v) for k, v in value.items() if k != "cache_control" and v is not None}
        if isinstance(out.get("content"), str) and out.get("role") in ("user", "assistant"):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def joined(messages: Sequence[Any]) -> list[Any]:
    """`messages` with consecutive user messages joined into one turn, as the API joins
    them (and the proxy stores them)."""
    turns: list[Any] = []
    for message in _plain(list(messages)):
        if turns and message["role"] == "user" and turns[-1]["role"] == "user":
            turns[-1] = {**turns[-1], "content": turns[-1]["content"] + message["content"]}
        else:
            turns.append(message)
    return turns


def prefix_kept(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether `after` starts with `before`'s whole prompt (its cached prefix is read)."""
    for field in ("model", "system", "tools"):
        if _plain(before.get(field)) != _plain(after.get(field)):
            return False
    earlier, later = _plain(before["messages"]), _plain(after["messages"])
    return bool(later[: len(earlier)] == earlier)


class Harness:
    """Sends a harness's requests through the proxy at `url`, logging each one."""

    def __init__(
        self, url: str, fake_api: FakeAnthropic, store: Sessions, summarizer: CountingSummarizer
    ) -> None:
        self.url = url
        self.fake = fake_api
        self.store = store
        self.summarizer = summarizer
        self.client = anthropic.Anthropic(
            api_key=fake.TEST_API_KEY, base_url=url, max_retries=0, timeout=30.0
        )
        self.async_client = anthropic.AsyncAnthropic(
            api_key=fake.TEST_API_KEY, base_url=url, max_retries=0, timeout=30.0
        )
        self.log: list[Sent] = []
        self.finals: dict[str, tuple[UUID, list[Any]]] = {}
        """Each conversation's last request: its session and the history it ends with."""

    def close(self) -> None:
        self.client.close()

    # Sending.

    def send(
        self,
        conversation: str,
        messages: list[Any],
        *,
        model: str = MAIN_MODEL,
        system: Any = None,
        tools: list[Any] | None = None,
        max_tokens: int = 32_000,
        stream: bool = True,
        reply: Sequence[Any] | None = None,
        stop_reason: str = "end_turn",
        **extra: Any,
    ) -> list[Any]:
        """One request of `conversation` (its whole history); the upstream answers `reply`
        (blocks) or its canned text. Returns the reply's content as the client keeps it."""
        if reply is not None:
            self.fake.enqueue(fake.message(list(reply), stop_reason=stop_reason))
        body = self._body(messages, model, system, tools, max_tokens, extra)
        before = len(self.fake.requests_to())
        if stream:
            with self.client.messages.stream(**body) as streamed:
                answer = streamed.get_final_message()
                session = streamed.response.headers["x-abridged-session"]
        else:
            raw = self.client.messages.with_raw_response.create(**body)
            answer, session = raw.parse(), raw.headers["x-abridged-session"]
        upstream = self.fake.requests_to()[before:]
        assert len(upstream) == 1, "one upstream request for each request of a harness"
        return self._logged(conversation, UUID(session), upstream[0].body, messages, answer)

    async def send_async(
        self, conversation: str, messages: list[Any], *, system: Any, tools: list[Any]
    ) -> list[Any]:
        """A request from the async client (a subagent of the Agent SDK), canned reply."""
        body = self._body(messages, MAIN_MODEL, system, tools, 8_000, {})
        raw = await self.async_client.messages.with_raw_response.create(**body)
        answer, session = await raw.parse(), raw.headers["x-abridged-session"]
        # Sent beside others: its upstream request is the one that opens with its history.
        first = _plain(messages[0])
        upstream = [
            r.body
            for r in self.fake.requests_to()
            if r.body.get("system") == system and _plain(r.body["messages"][0]) == first
        ]
        return self._logged(conversation, UUID(session), upstream[-1], messages, answer)

    @staticmethod
    def _body(
        messages: list[Any],
        model: str,
        system: Any,
        tools: list[Any] | None,
        max_tokens: int,
        extra: dict[str, Any],
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": messages,
            "metadata": {"user_id": USER_ID},
        }
        # Fields this SDK's `create` does not name (temperature, context_management) go as
        # the harness sends them, in the body.
        for key, value in extra.items():
            if key in SDK_FIELDS:
                body[key] = value
            else:
                body.setdefault("extra_body", {})[key] = value
        if system is not None:
            body["system"] = system
        if tools:
            body["tools"] = tools
        return body

    def _logged(
        self,
        conversation: str,
        session_id: UUID,
        upstream: Mapping[str, Any],
        messages: list[Any],
        answer: Any,
    ) -> list[Any]:
        content = [block.model_dump(exclude_none=True) for block in answer.content]
        changes = sum(isinstance(e, VIEW_CHANGES) for e in self.store.history(session_id))
        self.log.append(Sent(session_id, upstream, changes))
        self.finals[conversation] = (
            session_id,
            [*messages, {"role": "assistant", "content": content}],
        )
        return content

    # Measuring.

    def costs(self) -> Costs:
        infos = self.store.list_sessions(limit=1_000).sessions
        previous: dict[UUID, Sent] = {}
        breaks = 0
        for sent in self.log:
            before = previous.get(sent.session_id)
            if (
                before is not None
                and before.view_changes == sent.view_changes
                and not prefix_kept(before.upstream, sent.upstream)
                and all(
                    _plain(before.upstream.get(f)) == _plain(sent.upstream.get(f))
                    for f in ("model", "system", "tools")
                )
            ):
                breaks += 1
            previous[sent.session_id] = sent
        return Costs(
            sessions=sum(1 for info in infos if BRANCH_KEY not in info.metadata),
            branches=sum(1 for info in infos if BRANCH_KEY in info.metadata),
            compactions=sum(len(self.store.compactions(info.id)) for info in infos),
            summarizer_calls=self.summarizer.calls,
            prunes=sum(
                isinstance(e, ToolsPruned) for info in infos for e in self.store.history(info.id)
            ),
            prefix_breaks=breaks,
            upstream_requests=len(self.fake.requests_to()),
        )

    def stored(self, session_id: UUID) -> list[Any]:
        """The session's messages in view (those withdrawn left out), as stored."""
        messages: list[Any] = []
        for event in self.store.history(session_id):
            if isinstance(event, MessageAppended):
                messages.append(_plain(event.message.to_wire()))
            elif isinstance(event, Session.TurnWithdrawn):
                del messages[event.position :]
        return messages

    def check(self) -> None:
        """What every flow must hold, whatever it cost."""
        assert self.fake.violations == []
        for info in self.store.list_sessions(limit=1_000).sessions:
            audit = audit_session(self.store, info.id)
            assert audit.ok, (info.id, audit.mismatches, audit.chain)
            messages = self.stored(info.id)
            roles = [m["role"] for m in messages if m["role"] != "system"]
            assert all(a != b for a, b in itertools.pairwise(roles)), roles
            # No tool call stored twice (a turn appended again would repeat its calls).
            calls = [b["id"] for m in messages for b in m["content"] if b.get("type") == "tool_use"]
            assert len(calls) == len(set(calls)), calls
        for conversation, (session_id, history) in self.finals.items():
            assert self.stored(session_id) == joined(history), conversation


def database(request: pytest.FixtureRequest, folder: Path) -> str:
    """A fresh store for a test parametrized with "sqlite" or "postgres"."""
    if request.param == "postgres":
        return fresh_database(request.getfixturevalue("postgres_server"))
    return str(folder / "sessions.sqlite3")


@contextmanager
def harness_day(
    fake_api: FakeAnthropic, db: str, *, context_window: int | None = None
) -> Iterator[Harness]:
    """The proxy on the store at `db` (its tables made first), with a counting summarizer,
    in front of `fake_api`; yields a `Harness` sending to it."""
    counter = default_token_counter()
    summarizer = CountingSummarizer(counter)
    store = bootstrap(db, counter=counter, summarizer=summarizer)
    config = ServeConfig(
        db=db, upstream=fake_api.base_url, upstream_timeout=30.0, context_window=context_window
    )
    try:
        with served(config, store) as url:
            harness = Harness(url, fake_api, store, summarizer)
            try:
                yield harness
            finally:
                harness.close()
    finally:
        store.close()
