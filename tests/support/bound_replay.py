"""A conversation replayed against a model with preserved thinking, as the API would see it.

Each assistant message of the conversation becomes the reply to the request abridged builds
just before it, with a thinking block leading it (as with thinking on) signed over that
request (`tests.support.thinking_binding.sign_reply`): the signature names the prefix the
block was produced under. Every later request is then checked by the same rules as the API
(`anthropic_rules.violations`, which includes the prefix check for these models), and
`required_missing` counts the requests of an open tool loop whose last assistant message
was not sent starting with its thinking block — what the API requires with thinking on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

import attrs

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.application.auditing import Finding, audit_session
from abridged.application.ports import ContextProvider, RequestOptions, TokenCounter
from abridged.application.service import Sessions
from abridged.domain.errors import ContextOverflowError
from abridged.domain.messages import Message, Role
from abridged.domain.settings import CompactionSettings
from tests.support.anthropic_rules import Violation, violations
from tests.support.thinking_binding import THINKING_TYPES, sign_reply

BOUND_MODEL = "claude-fable-5-1"
THINKING = RequestOptions(thinking={"type": "adaptive"})


@attrs.frozen
class BoundReplay:
    requests: int
    not_sent: int
    compactions: int
    violations: tuple[Violation, ...]
    required_missing: int
    """Requests of an open tool loop whose last assistant message lacked its thinking."""
    thinking_resent: int
    """Thinking blocks sent back in later requests (all checked against their prefix)."""
    thinking_paused: int
    """Requests of an open loop whose thinking had to leave the view (`thinking_paused`),
    answered without thinking."""
    audit_mismatches: tuple[Finding, ...] = ()
    """With `audit`, every recorded decision the audit could not re-derive."""
    bodies: tuple[dict[str, Any], ...] = ()
    """With `keep_bodies`, every request body sent, in order."""


def with_thinking(message: Message, step: int) -> dict[str, Any]:
    """The reply as a model with thinking on returns it: a thinking block first."""
    wire = message.to_wire()
    content = list(wire["content"]) if isinstance(wire["content"], list) else []
    if not content or content[0].get("type") not in THINKING_TYPES:
        thought = f"Step {step}: weigh what the last result says before the next action."
        content.insert(0, {"type": "thinking", "thinking": thought, "signature": "unsigned"})
    return {"role": "assistant", "content": content}


def replay_bound(
    counter: TokenCounter,
    messages: Sequence[Message],
    *,
    system: str,
    tools: Sequence[Any],
    window: int,
    settings: CompactionSettings | None = None,
    model: str = BOUND_MODEL,
    capabilities: Mapping[str, Mapping[str, Any]] | None = None,
    audit: bool = False,
    between: Callable[[Sessions, UUID, int], None] | None = None,
    keep_bodies: bool = False,
    context_provider: ContextProvider | None = None,
    inspect: Callable[[Sessions, UUID], None] | None = None,
) -> BoundReplay:
    """`capabilities` are the service's `model_capabilities` (a control run may tell it the
    model does not bind thinking, to show what the checker then finds); `between(app,
    session_id, step)` runs before each message (a host reconfiguring the session, say);
    `context_provider` gives per-turn content; `inspect(app, session_id)` runs at the end."""
    app = Sessions(
        counter=counter,
        summarizer=ExtractiveSummarizer(counter),
        background=False,
        model_capabilities=capabilities,
        context_provider=context_provider,
    )
    reserve = min(8192, max(1, window // 4))
    try:
        session_id = app.start_session(
            model=model,
            context_window=window,
            max_output_tokens=reserve,
            system=system,
            tools=tools,
            settings=settings,
        )
        found: list[Violation] = []
        requests = not_sent = missing = resent = paused = 0
        last_had_thinking = False
        prepared = None
        kept: list[dict[str, Any]] = []
        for step, message in enumerate(messages):
            if between is not None:
                between(app, session_id, step)
            if message.role is not Role.ASSISTANT:
                app.append_message(session_id, message)
                continue
            if not app.session(session_id).awaiting_reply:
                app.record_reply(session_id, with_thinking(message, step))
                continue
            requests += 1
            # The loop's thinking had to leave the view: the model is taken to answer without
            # thinking (manual thinking is left out of such a request; adaptive thinking is
            # sent, and the API takes the loop without thinking first).
            paused_now = False
            try:
                prepared = app.prepare_request(session_id)
            except ContextOverflowError:
                not_sent += 1
                body: dict[str, Any] = {"model": model, "messages": [], "thinking": {}}
            else:
                paused_now = prepared.context.thinking_paused
                body = render_request(
                    prepared.context, model=model, max_tokens=reserve, options=THINKING
                )
                found.extend(violations(body))
                if keep_bodies:
                    kept.append(body)
                sent = body["messages"]
                resent += sum(
                    1
                    for m in sent[:-1]
                    if m["role"] == "assistant"
                    for b in m["content"]
                    if b.get("type") in THINKING_TYPES
                )
                in_loop = (
                    any(b.get("type") == "tool_result" for b in sent[-1]["content"])
                    and len(sent) >= 2
                )
                if in_loop and last_had_thinking and not paused_now:
                    first = sent[-2]["content"][0] if sent[-2]["content"] else {}
                    if sent[-2]["role"] != "assistant" or first.get("type") not in THINKING_TYPES:
                        missing += 1
            if "thinking" in body and not paused_now:
                reply = with_thinking(message, step)
                reply["content"] = sign_reply(body, reply["content"])
            else:
                # Thinking off for this request: the model answers without thinking.
                paused += 1
                wire = message.to_wire()
                content = wire["content"] if isinstance(wire["content"], list) else []
                reply = {
                    "role": "assistant",
                    "content": [b for b in content if b.get("type") not in THINKING_TYPES],
                }
            last_had_thinking = "thinking" in body and not paused_now
            app.record_reply(session_id, reply)
        compactions = app.session(session_id).generation
        mismatches = (
            [f for f in audit_session(app, session_id).findings if not f.matches] if audit else []
        )
        if inspect is not None:
            inspect(app, session_id)
    finally:
        app.close()
    return BoundReplay(
        requests,
        not_sent,
        compactions,
        tuple(found),
        missing,
        resent,
        paused,
        tuple(mismatches),
        tuple(kept),
    )
