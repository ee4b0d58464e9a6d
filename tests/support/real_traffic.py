"""Claude Code's requests rebuilt from its session log, sent through `abridged serve`.

A Claude Code log holds the conversation, not the requests: before each reply the model
wrote, Claude Code sent the whole history so far, its system prompt, its tools, the model,
`max_tokens`, `thinking` and a cache breakpoint on the last message. `requests_of` rebuilds
that sequence from `load_transcript`'s reading of a log; each request carries the reply the
log recorded, which the fake upstream is told to answer with.

Claude Code compacts on its own too: it sends the history with its summarizing prompt,
under the same system prompt and tools (the API refuses tool calls in a request without
tools, and the same prefix reads the cache), and from then on a history that starts with
the summary it got (the log's `compact_boundary` line, then the `isCompactSummary` entry).
The importer leaves that summary out and reads the history whole;
`requests_of(..., compaction=...)` sends what Claude Code sent instead.

`RealRun.send` sends one request through the proxy and notes what a user pays for:
`Outcome` holds the upstream bodies, the time the proxy added, the sessions and branches,
compactions, prefix breaks (the previous request's prompt up to its last breakpoint not
repeated byte for byte, though no compaction, prune or other view change came between),
thinking blocks altered on the way, and the audits.

`main` runs the real logs (not in CI): see `python -m tests.support.real_traffic --help`.
"""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import httpx2

from abridged.adapters.transcripts import Transcript
from abridged.application.auditing import audit_session
from abridged.application.service import Sessions
from tests.support import fake_anthropic as fake
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.harness_traffic import BRANCH_KEY, VIEW_CHANGES
from tests.support.real_logs import Compaction, compaction_in, raw_replies
from tests.support.real_traffic_checks import cached_prefix_kept, whole_blocks_streamed

MAX_TOKENS = 32_000
"""Claude Code's `max_tokens` for its main models."""
THINKING_BUDGET = 16_000
"""The budget of manual thinking (models that refuse adaptive thinking)."""
ADAPTIVE_MODELS = ("claude-opus-4-6", "claude-sonnet-4-6")
COMPACT_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close "
    "attention to the user's explicit requests and your previous actions."
)
COMPACT_SYSTEM = "You are a helpful AI assistant tasked with summarizing conversations."
USER_ID = "user_5d2a7b9c1f3e_account_0a9c3b5d_session_{}"


@attrs.frozen
class Request:
    """One request Claude Code sent: its history, what it is sent under, and the reply the
    log recorded."""

    messages: tuple[Mapping[str, Any], ...]
    reply: tuple[Mapping[str, Any], ...]
    system: Any
    kind: str = "turn"
    """`turn`, `compact` (Claude Code's summarizing request) or `after` (a turn after
    Claude Code's compaction: its history starts with the summary)."""


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def requests_of(
    transcript: Transcript,
    system: Any,
    compaction: Compaction | None = None,
    compact_system: Any = None,
    raw: Mapping[int, tuple[Any, ...]] | None = None,
) -> list[Request]:
    """The requests Claude Code sent for `transcript`: one before each reply. With
    `compaction`, the summarizing request at its boundary, then histories that start with
    its summary; the summarizing request goes under `compact_system` if given (as Claude
    Code versions that summarize under a prompt of their own send it)."""
    wires = [dict(m.to_wire()) for m in transcript.messages]
    lines = transcript.line_numbers
    after = len(wires)
    if compaction is not None:
        after = next((i for i, n in enumerate(lines) if n > compaction.line), len(wires))
    requests: list[Request] = []
    for index, wire in enumerate(wires):
        if wire["role"] != "assistant":
            continue
        reply = (raw or {}).get(index) or tuple(_blocks(wire["content"]))
        if compaction is None or index < after:
            requests.append(Request(tuple(wires[:index]), reply, system))
            continue
        if not any(r.kind == "compact" for r in requests):
            history = wires[:after]
            ask = {"role": "user", "content": [{"type": "text", "text": COMPACT_PROMPT}]}
            answer = ({"type": "text", "text": compaction.summary},)
            requests.append(Request((*history, ask), answer, compact_system or system, "compact"))
        summary = {"role": "user", "content": [{"type": "text", "text": compaction.summary}]}
        requests.append(Request((summary, *wires[after:index]), reply, system, "after"))
    return requests


def body_of(
    request: Request, model: str, tools: Sequence[Any], user_id: str, thinks: bool
) -> dict[str, Any]:
    """The request's body as Claude Code sends it: streamed, a breakpoint on the last
    message's last block, thinking as the model takes it."""
    messages = [copy.deepcopy(dict(m)) for m in request.messages]
    last = messages[-1]
    last["content"] = _blocks(last["content"])
    last["content"][-1] = {**last["content"][-1], "cache_control": {"type": "ephemeral"}}
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": MAX_TOKENS,
        "messages": messages,
        "system": request.system,
        "metadata": {"user_id": user_id},
        "stream": True,
    }
    if tools:
        body["tools"] = list(tools)
    if model.startswith(ADAPTIVE_MODELS):
        body["thinking"] = {"type": "adaptive"}
    elif thinks:
        body["thinking"] = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
    return body


@attrs.define
class Outcome:
    """What the requests of one run cost, and what went wrong."""

    requests: int = 0
    refused: list[str] = attrs.field(factory=list)
    invalid: list[str] = attrs.field(factory=list)
    prefix_breaks: list[str] = attrs.field(factory=list)
    altered_thinking: list[str] = attrs.field(factory=list)
    added_seconds: list[float] = attrs.field(factory=list)
    sessions: int = 0
    branches: int = 0
    compactions: int = 0
    resummarized: list[str] = attrs.field(factory=list)
    over_budget: list[str] = attrs.field(factory=list)
    audit_failures: list[str] = attrs.field(factory=list)
    branch_starts: list[str] = attrs.field(factory=list)
    compact_requests: list[str] = attrs.field(factory=list)
    """Claude Code's summarizing requests: the client's tokens, then the upstream's."""
    upstream_tokens: int = 0
    largest: int = 0
    prefix_checked: int = 0
    """Requests whose prefix was compared with the one before (no view change between)."""
    view_changed: int = 0
    """Requests after a compaction, prune or other view change of their session."""
    """The largest upstream request (the fake's count: a token per four characters)."""
    client_tokens: int = 0

    def percentile(self, share: float) -> float:
        ordered = sorted(self.added_seconds)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def _signed(messages: Sequence[Any]) -> set[tuple[str, str]]:
    return {
        (b.get("thinking", b.get("data", "")), b.get("signature", ""))
        for m in messages
        for b in _blocks(m["content"])
        if isinstance(b, Mapping) and b.get("type") in ("thinking", "redacted_thinking")
    }


def _tokens(body: Mapping[str, Any]) -> int:
    return fake.estimate_tokens({k: body.get(k) for k in ("system", "tools", "messages")})


class RealRun:
    """Sends rebuilt requests through the proxy at `url`, in front of `fake_api`."""

    def __init__(
        self, url: str, fake_api: FakeAnthropic, store: Sessions, *, direct: bool = False
    ) -> None:
        self.client = httpx2.Client(base_url=url, timeout=120.0)
        self.fake = fake_api
        self.store = store
        self.direct = direct
        """Also send each upstream body straight to the fake, to take its time off."""
        self.outcome = Outcome()
        self._previous: dict[UUID, tuple[Mapping[str, Any], int]] = {}
        self._known: set[tuple[str, str]] = set()
        self._answered: dict[UUID, int] = {}
        """How many requests each session answered."""
        self._first: dict[UUID, str] = {}
        """What the first request each session answered held."""
        self._before = {info.id for info in store.list_sessions(limit=1_000).sessions}
        self._direct = httpx2.Client(timeout=120.0)

    def close(self) -> None:
        self.client.close()
        self._direct.close()

    def send(self, name: str, body: Mapping[str, Any], request: Request, header: bool) -> None:
        """One request; `header`: named by `x-abridged-session: name`, else by the rule."""
        self._known |= _signed([*request.messages, {"content": list(request.reply)}])
        stop = "tool_use" if any(b.get("type") == "tool_use" for b in request.reply) else None
        answer = fake.message(list(request.reply), stop_reason=stop or "end_turn")
        self.fake.enqueue(answer)
        headers = {"x-api-key": fake.TEST_API_KEY, "anthropic-version": "2023-06-01"}
        if header:
            headers["x-abridged-session"] = name
        before = len(self.fake.requests_to())
        started = time.perf_counter()
        response = self.client.post("/v1/messages", json=body, headers=headers)
        spent = time.perf_counter() - started
        out, where = self.outcome, f"{name} #{self.outcome.requests}"
        out.requests += 1
        out.client_tokens += _tokens(body)
        upstream = self.fake.requests_to()[before:]
        if response.status_code != 200 or len(upstream) != 1:
            out.refused.append(f"{where}: {response.status_code} {response.text[:300]}")
            self.fake.reset()
            return
        sent = upstream[0]
        if sent.violations:
            out.invalid.append(f"{where}: {sent.violations[0]}")
        out.upstream_tokens += _tokens(sent.body)
        out.largest = max(out.largest, _tokens(sent.body))
        if request.kind == "compact":
            out.compact_requests.append(f"{where}: {_tokens(body)} -> {_tokens(sent.body)} tokens")
        if altered := _signed(sent.body["messages"]) - self._known:
            out.altered_thinking.append(f"{where}: {len(altered)} thinking blocks not the log's")
        out.added_seconds.append(spent - self._upstream_time(sent.body, answer))
        session = UUID(response.headers["x-abridged-session"])
        changes = sum(isinstance(e, VIEW_CHANGES) for e in self.store.history(session))
        previous = self._previous.get(session)
        if previous is not None and previous[1] != changes:
            out.view_changed += 1
        elif previous is not None and previous[0].get("system") == sent.body.get("system"):
            out.prefix_checked += 1
            if not cached_prefix_kept(previous[0], sent.body):
                out.prefix_breaks.append(f"{where} ({request.kind})")
        self._previous[session] = (sent.body, changes)
        self._answered[session] = self._answered.get(session, 0) + 1
        self._first.setdefault(
            session, f"started with {len(body['messages'])} messages, {_tokens(body)} tokens"
        )

    def _upstream_time(self, body: Mapping[str, Any], answer: fake.Response) -> float:
        """The fake's own time for `body`, sent to it straight (0 unless `direct`)."""
        if not self.direct:
            return 0.0
        self.fake.enqueue(answer)
        started = time.perf_counter()
        self._direct.post(
            f"{self.fake.base_url}/v1/messages",
            json=body,
            headers={"x-api-key": fake.TEST_API_KEY, "anthropic-version": "2023-06-01"},
            timeout=120.0,
        ).read()
        return time.perf_counter() - started

    def finish(self) -> Outcome:
        """Counts the sessions, branches and compactions, and audits every session."""
        out = self.outcome
        for info in self.store.list_sessions(limit=1_000).sessions:
            if info.id in self._before:
                continue
            if BRANCH_KEY in info.metadata:
                out.branches += 1
            else:
                out.sessions += 1
            records = self.store.compactions(info.id)
            out.compactions += len(records)
            for earlier, later in itertools.pairwise(records):
                newly_from = later.last_position - later.messages_summarized + 1
                if newly_from <= earlier.last_position:
                    out.resummarized.append(
                        f"{info.id}: v{later.version} summarized {newly_from}.. again"
                    )
            if BRANCH_KEY in info.metadata:
                out.branch_starts.append(f"{info.id}: {self._first.get(info.id)}")
            audit = audit_session(self.store, info.id)
            if not audit.ok:
                out.audit_failures.append(f"{info.id}: {audit.mismatches[:2]} {audit.chain}")
            # The audit also lists the replies a session was started with (a branch's
            # history): only the requests it answered count.
            answered = audit.requests[len(audit.requests) - self._answered.get(info.id, 0) :]
            out.over_budget += [
                f"{info.id} request {r.number}: {r.tokens} > {r.budget}"
                for r in answered
                if r.tokens > r.budget
            ]
        return out


def send_log(
    run: RealRun,
    transcript: Transcript,
    name: str,
    *,
    header: bool,
    system: Any,
    compaction: Compaction | None = None,
    compact_system: Any = None,
    raw: Mapping[int, tuple[Any, ...]] | None = None,
) -> int:
    """Sends every request Claude Code sent for `transcript` as session `name`; returns
    how many."""
    model = transcript.model or "claude-opus-4-6"
    thinks = any(
        b.get("type") == "thinking"
        for m in transcript.messages
        for b in _blocks(m.to_wire()["content"])
    )
    requests = requests_of(transcript, system, compaction, compact_system, raw)
    for request in requests:
        body = body_of(request, model, transcript.tools, USER_ID.format(name), thinks)
        run.send(name, body, request, header)
    return len(requests)


def report(label: str, out: Outcome) -> str:
    """One line of figures, then each problem found."""
    lines = [
        f"{label}: {out.requests} requests, {len(out.refused)} refused, {len(out.invalid)} "
        f"invalid, {out.sessions} sessions, {out.branches} branches, {out.compactions} "
        f"compactions, {len(out.resummarized)} re-summarized, {len(out.prefix_breaks)} prefix "
        f"breaks of {out.prefix_checked} ({out.view_changed} after a view change), "
        f"{len(out.altered_thinking)} altered thinking, {len(out.over_budget)} over "
        f"budget, {len(out.audit_failures)} audit failures, upstream/client tokens "
        f"{out.upstream_tokens}/{out.client_tokens}, largest {out.largest}, added p50 "
        f"{out.percentile(0.5) * 1000:.0f} ms p99 {out.percentile(0.99) * 1000:.0f} ms "
        f"max {max(out.added_seconds, default=0) * 1000:.0f} ms"
    ]
    kinds = ("refused", "invalid", "prefix_breaks", "altered_thinking", "resummarized")
    for kind in (*kinds, "branch_starts", "compact_requests"):
        lines += [f"  {kind}: {item}" for item in getattr(out, kind)[:5]]
    lines += [f"  over budget: {item}" for item in out.over_budget[:5]]
    lines += [f"  audit: {item}" for item in out.audit_failures[:5]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Sends the real logs through the proxy at each window, each naming, with and without
    Claude Code's own compaction; prints the figures."""
    import argparse
    import contextlib
    import tempfile

    from abridged.adapters.bootstrap import bootstrap
    from abridged.adapters.http import ServeConfig
    from abridged.adapters.token_counters import default_token_counter
    from abridged.adapters.transcripts import load_transcript
    from tests.support.harness_traffic import claude_code_system, subagent_system
    from tests.support.serve import served

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("logs", nargs="+", type=Path)
    parser.add_argument("--window", type=int, action="append", default=[])
    parser.add_argument("--naming", choices=["header", "rule", "both"], default="both")
    parser.add_argument("--client-compaction", choices=["no", "yes", "both"], default="both")
    parser.add_argument(
        "--compact-system",
        action="store_true",
        help="Claude Code's summarizing request under a system prompt of its own",
    )
    parser.add_argument(
        "--fake-as-is",
        action="store_true",
        help="the fake's own streams (a tool call's `caller` left out: every turn diverges)",
    )
    parser.add_argument(
        "--raw-replies",
        action="store_true",
        help="the upstream answers as the log's reply streamed (blank text blocks kept)",
    )
    parser.add_argument("--direct", action="store_true", help="take the fake's time off")
    args = parser.parse_args(argv)
    namings = {"header": [True], "rule": [False], "both": [True, False]}[args.naming]
    compacts = {"no": [False], "yes": [True], "both": [False, True]}[args.client_compaction]
    with (
        FakeAnthropic() as fake_api,
        tempfile.TemporaryDirectory() as folder,
        contextlib.nullcontext() if args.fake_as_is else whole_blocks_streamed(),
    ):
        for window in args.window or [MAX_TOKENS + 32_000, MAX_TOKENS + 64_000]:
            for header in namings:
                for compacted in compacts:
                    db = f"{folder}/w{window}-{header}-{compacted}.sqlite3"
                    store = bootstrap(db, counter=default_token_counter())
                    config = ServeConfig(
                        db=db,
                        upstream=fake_api.base_url,
                        upstream_timeout=120.0,
                        context_window=window,
                    )
                    with served(config, store) as url:
                        for path in args.logs:
                            fake_api.reset()
                            run = RealRun(url, fake_api, store, direct=args.direct)
                            transcript = load_transcript(path)
                            sub = "__subagents__" in path.name
                            system = (
                                subagent_system("general-purpose") if sub else claude_code_system()
                            )
                            found = compaction_in(path) if compacted else None
                            send_log(
                                run,
                                transcript,
                                f"cc-{path.stem}",  # a UUID names a session by its id
                                header=header,
                                system=system,
                                compaction=found,
                                compact_system=COMPACT_SYSTEM if args.compact_system else None,
                                raw=raw_replies(path, transcript) if args.raw_replies else None,
                            )
                            # Each log in its own store would be cleaner; the figures are
                            # per session, so one store per setting is enough.
                            out = run.finish()
                            run.close()
                            label = (
                                f"{path.name} window {window} "
                                f"{'header' if header else 'rule'} "
                                f"{'client-compaction' if found else 'whole'}"
                            )
                            print(report(label, out), flush=True)
                    store.close()


if __name__ == "__main__":
    main()
