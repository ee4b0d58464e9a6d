"""The soak's clients: threads that talk to `abridged serve` through the anthropic SDK with
a mix an agent host sends for weeks (`tests.reliability.soak` runs them).

Each client, until the time is up, picks one of: a short new conversation (most), a turn of
one of its long conversations (which compact again and again), a conversation with a tool
call whose output is 100 KB to 1 MB, a branch (an earlier conversation with its last user
message changed), count_tokens, or a request the proxy must refuse. One more thread uses the
sessions API on the conversations the clients have finished: list, stats, history, audit,
delete and erase.

Every conversation remembers a digest of each message it sent or received, by the session
id the proxy answered with; `Traffic.expected` is what each session's stored messages must
be, message for message (`tests.reliability.soak` checks a sample).
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import Counter
from typing import Any

import anthropic
import attrs
import httpx2

from abridged.domain.messages import Message
from tests.support.fake_anthropic import TEST_API_KEY

MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 64
TOKEN = "soak-tenant-token-0123456789"
TOOL_REQUEST = "Please run the tool read_log"
"""A user message starting with this gets a `tool_use` reply from the soak's fake API."""
TOOLS = [
    {
        "name": "read_log",
        "description": "Reads a log file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
LONG_TURNS = 90
"""Turns after which a long conversation is left for a new one."""


def digest(wire: dict[str, Any]) -> str:
    """A message's digest as abridged stores it (`Message.to_wire`)."""
    canonical = json.dumps(Message.from_wire(wire).to_wire(), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def text(size: int, seed: str) -> str:
    line = f"{seed}: 2026-11-28 05:00:00 INFO worker processed item {size}, all fine\n"
    return (line * (size // len(line) + 1))[:size]


@attrs.define
class Conversation:
    name: str
    history: list[dict[str, Any]] = attrs.field(factory=list)
    digests: list[str] = attrs.field(factory=list)
    session_id: str | None = None
    broken: bool = False
    """A request of it failed: what the store holds of it is not known."""
    parent: str | None = None
    """The session a branch diverged from."""


@attrs.define
class Traffic:
    """What the clients did, shared by their threads."""

    url: str
    seed: int = 7
    deadline: float = 0.0
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    counts: Counter[str] = attrs.field(factory=Counter)
    errors: Counter[str] = attrs.field(factory=Counter)
    expected: dict[str, list[str]] = attrs.field(factory=dict)
    """Session id: the digests of the messages it must hold."""
    finished: list[str] = attrs.field(factory=list)
    """Sessions no client writes to any more (the sessions API's to read and delete)."""
    deleted: set[str] = attrs.field(factory=set)
    parents: dict[str, str] = attrs.field(factory=dict)
    """A branch's session id: its parent's (deleting a session deletes its branches)."""
    names: int = 0

    def count(self, what: str, n: int = 1) -> None:
        with self.lock:
            self.counts[what] += n

    def error(self, what: str) -> None:
        with self.lock:
            self.errors[what] += 1

    def new_name(self, kind: str) -> str:
        with self.lock:
            self.names += 1
            return f"soak-{kind}-{self.names}"

    @property
    def sessions(self) -> int:
        """Sessions the proxy started (branches included)."""
        with self.lock:
            return self.counts["sessions started"]

    def over(self) -> bool:
        return time.monotonic() >= self.deadline


def _reply_wire(message: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [block.model_dump(exclude_none=True) for block in message.content],
    }


class Client:
    """One client thread's conversations."""

    def __init__(self, traffic: Traffic, number: int) -> None:
        self.traffic = traffic
        self.random = random.Random(traffic.seed * 1000 + number)
        self.sdk = anthropic.Anthropic(
            api_key=TEST_API_KEY,
            base_url=traffic.url,
            default_headers={"x-abridged-token": TOKEN},
            max_retries=2,
            timeout=300,
        )
        self.long: list[Conversation] = []
        self.done: list[Conversation] = []

    def send(self, talk: Conversation, content: Any, *, tools: bool = False) -> bool:
        """Appends a user message, sends the history, appends the reply; False on a
        failure (the conversation is then left)."""
        talk.history.append({"role": "user", "content": content})
        options: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": MAX_TOKENS,
            "messages": talk.history,
            "extra_headers": {"x-abridged-session": talk.name},
        }
        if tools:
            options["tools"] = TOOLS
        streamed = self.random.random() < 0.5
        try:
            if streamed:
                with self.sdk.messages.stream(**options) as stream:
                    reply = stream.get_final_message()
                    session_id = stream.response.headers.get("x-abridged-session")
            else:
                raw = self.sdk.messages.with_raw_response.create(**options)
                reply, session_id = raw.parse(), raw.headers.get("x-abridged-session")
        except anthropic.APIStatusError as failure:
            self.traffic.error(f"messages {failure.status_code}: {failure.message[:90]}")
            talk.broken = True
            return False
        except anthropic.APIError as failure:
            self.traffic.error(f"messages {type(failure).__name__}")
            talk.broken = True
            return False
        self.traffic.count("streamed" if streamed else "not streamed")
        wire = _reply_wire(reply)
        talk.history.append(wire)
        talk.digests += [digest(talk.history[-2]), digest(wire)]
        if session_id != talk.session_id:
            if talk.session_id is not None and session_id is not None:
                self.traffic.count("branches")
            talk.session_id = session_id
            self.traffic.count("sessions started")
        with self.traffic.lock:
            self.traffic.expected[str(session_id)] = list(talk.digests)
            if talk.parent is not None and session_id != talk.parent:
                self.traffic.parents[str(session_id)] = talk.parent
        return True

    def short(self) -> None:
        talk = Conversation(self.traffic.new_name("short"))
        for turn in range(self.random.randint(1, 4)):
            if not self.send(talk, text(self.random.randint(200, 3_000), f"{talk.name} {turn}")):
                return
        self.finish(talk)

    def tool(self) -> None:
        talk = Conversation(self.traffic.new_name("tool"))
        if not self.send(talk, f"{TOOL_REQUEST} on {talk.name}", tools=True):
            return
        uses = [b for b in talk.history[-1]["content"] if b["type"] == "tool_use"]
        if not uses:
            self.traffic.error("no tool_use reply")
            return
        size = self.random.randint(100_000, 1_000_000)
        result = [
            {"type": "tool_result", "tool_use_id": use["id"], "content": text(size, talk.name)}
            for use in uses
        ]
        if self.send(talk, result, tools=True) and self.send(talk, "Thanks, go on.", tools=True):
            self.traffic.count("tool outputs")
            self.finish(talk)

    def long_turn(self) -> None:
        if len(self.long) < 2 or self.random.random() < 0.05:
            self.long.append(Conversation(self.traffic.new_name("long")))
        talk = self.random.choice(self.long)
        for _ in range(3):
            size = self.random.randint(3_000, 9_000)
            if not self.send(talk, text(size, f"{talk.name} {len(talk.history)}")):
                self.long.remove(talk)
                return
        if len(talk.history) >= 2 * LONG_TURNS:
            self.long.remove(talk)
            self.finish(talk)

    def branch(self) -> None:
        if not self.done:
            return self.short()
        parent = self.random.choice(self.done[-50:])
        talk = Conversation(parent.name, list(parent.history[:-2]), parent.digests[:-2])
        talk.session_id = parent.session_id
        talk.parent = parent.session_id
        tools = any(b.get("type") == "tool_use" for m in talk.history
                    if isinstance(m["content"], list) for b in m["content"])  # fmt: skip
        if self.send(talk, f"Let us try another way ({self.random.random()}).", tools=tools):
            self.finish(talk)
        return None

    def count_tokens(self) -> None:
        messages = [{"role": "user", "content": text(self.random.randint(100, 20_000), "count")}]
        try:
            self.sdk.messages.count_tokens(model=MODEL, messages=messages)  # type: ignore[arg-type]
            self.traffic.count("count_tokens")
        except anthropic.APIError as failure:
            self.traffic.error(f"count_tokens {type(failure).__name__}")

    def bad(self) -> None:
        """A request the proxy must refuse with a 4xx."""
        headers = {"x-api-key": TEST_API_KEY, "x-abridged-token": TOKEN}
        headers["x-abridged-session"] = self.traffic.new_name("bad")
        kind = self.random.randrange(4)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "hello"}]
        body: Any = {"model": MODEL, "max_tokens": MAX_TOKENS, "messages": messages}
        if kind == 0:
            del body["max_tokens"]
        elif kind == 1:
            messages.append({"role": "assistant", "content": "the last word"})
        elif kind == 2:
            messages[0]["content"] = [{"type": "tool_result", "tool_use_id": "toolu_x"}]
        else:
            headers["x-abridged-token"] = "not-the-token-at-all"
        answer = httpx2.post(f"{self.traffic.url}/v1/messages", json=body, headers=headers)
        if 400 <= answer.status_code < 500:
            self.traffic.count("refused (expected 4xx)")
        else:
            self.traffic.error(f"bad request answered {answer.status_code}")

    def finish(self, talk: Conversation) -> None:
        self.done = [*self.done[-49:], talk]
        if talk.session_id and not talk.broken:
            with self.traffic.lock:
                self.traffic.finished.append(talk.session_id)

    def run(self) -> None:
        actions = [
            (self.short, 55),
            (self.long_turn, 15),
            (self.tool, 6),
            (self.branch, 8),
            (self.count_tokens, 8),
            (self.bad, 8),
        ]
        while not self.traffic.over():
            action = self.random.choices([a for a, _ in actions], [w for _, w in actions])[0]
            try:
                action()
            except Exception as failure:  # a client's bug must not end the soak unseen
                self.traffic.error(f"client {type(failure).__name__}: {failure}"[:120])
        self.sdk.close()


def sessions_api(traffic: Traffic) -> None:
    """Reads and deletes finished sessions through the sessions API until the time is up."""
    chooser = random.Random(traffic.seed)
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx2.Client(base_url=traffic.url, headers=headers, timeout=300) as http:
        cursor: str | None = None
        while not traffic.over():
            time.sleep(0.5)
            with traffic.lock:
                candidates = [s for s in traffic.finished[-200:] if s not in traffic.deleted]
            params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            calls: list[tuple[str, str, Any]] = [("GET", "/v1/sessions", params)]
            unknown = f"/v1/sessions/{chooser.randrange(2**32):032x}/stats"
            calls.append(("GET", unknown, None))
            if candidates:
                chosen = chooser.choice(candidates)
                for what in ("stats", "history", "audit", "compactions"):
                    calls.append(("GET", f"/v1/sessions/{chosen}/{what}", None))
                if chooser.random() < 0.3:
                    erase = chooser.random() < 0.4
                    with traffic.lock:
                        traffic.deleted.add(chosen)
                    calls.append(("DELETE", f"/v1/sessions/{chosen}", {"erase": erase}))
            for method, path, query in calls:
                answer = http.request(method, path, params=query)
                if path == unknown and answer.status_code == 404:
                    traffic.count("refused (expected 4xx)")
                elif answer.status_code >= 400:
                    traffic.error(f"sessions API {method} {path.split('/')[-1]} "
                                  f"{answer.status_code}")  # fmt: skip
                elif path == "/v1/sessions":
                    cursor = answer.json().get("next_cursor")
                    traffic.count("sessions API calls")
                elif path.endswith("/audit") and not answer.json()["ok"]:
                    traffic.error("audit not ok")
                else:
                    traffic.count("sessions API calls")
                    if method == "DELETE":
                        traffic.count("erased" if query["erase"] else "deleted")
