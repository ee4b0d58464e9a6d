"""The audit view: the facts each event records, by event class.

One function per event type (`functools.singledispatch`), so renaming or adding an event
is a type-checked change here, not a string that silently stops matching in a printer.
The CLI and reports print these facts; they never read events themselves.
"""

from __future__ import annotations

import functools
from typing import Any

from abridged.application.chain import CORRELATION_KEY
from abridged.domain.session import Session
from abridged.domain.tokens import MESSAGE_OVERHEAD

Facts = dict[str, Any]


def event_facts(event: Any) -> Facts:
    """The event's version, name and time (ISO 8601, UTC), and the facts it records."""
    correlation = getattr(event, CORRELATION_KEY, None)
    return {
        "version": event.originator_version,
        "event": type(event).__name__,
        "time": event.timestamp.isoformat(),
        **({"correlation_id": correlation} if correlation is not None else {}),
        **facts(event),
    }


@functools.singledispatch
def facts(event: Any) -> Facts:
    """The facts an event records, for people and machines; {} for an unknown event."""
    return {}


@facts.register
def _(event: Session.Started) -> Facts:
    found: Facts = {
        "model": event.model,
        "window": event.context_window,
        "settings": event.settings_fingerprint,
        **({"metadata": dict(event.metadata)} if event.metadata else {}),
        **({"tags": list(event.tags)} if event.tags else {}),
    }
    if event.parent_id is not None:
        found["parent"] = str(event.parent_id)
        found["origin"] = event.origin
        found["parent_summary_tokens"] = event.parent_summary.tokens if event.parent_summary else 0
    return found


@facts.register
def _(event: Session.MessageAppended) -> Facts:
    found: Facts = {
        "role": event.message.role.value,
        "tokens": event.tokens,
        "shown_tokens": MESSAGE_OVERHEAD + sum(event.block_tokens),
    }
    if event.truncations:
        # Blocks requests show reduced (head and tail, or a placeholder); stored whole.
        found["reduced_blocks"] = len(event.truncations)
    if event.usage is not None:
        found["usage_prompt_tokens"] = event.usage.prompt_tokens
    return found


@facts.register
def _(event: Session.CompactionThresholdHit) -> Facts:
    decision = event.decision
    return {
        "trigger": decision.trigger,
        "estimate": decision.estimate,
        "threshold": decision.threshold,
        "retained_from": decision.retained_from,
        "turns_kept": decision.turns_kept,
        "reason": decision.reason,
    }


@facts.register
def _(event: Session.CompactionCompleted) -> Facts:
    return {
        "generation": event.generation,
        "strategy": event.strategy,
        "summarized": event.messages_summarized,
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "summary": event.summary.text,
    }


@facts.register
def _(event: Session.ToolsPruned) -> Facts:
    return {
        "boundary": event.boundary,
        "outputs": len(event.outputs),
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "reason": event.reason,
    }


@facts.register
def _(event: Session.ReasoningDowngraded) -> Facts:
    return {"blocks": len(event.blocks), "reason": event.reason}


@facts.register
def _(event: Session.CompactionSuppressed) -> Facts:
    return {"trigger": event.trigger, "reason": event.reason}


@facts.register
def _(event: Session.CompactionRequested) -> Facts:
    return {"reason": event.reason}


@facts.register
def _(event: Session.OverflowReported) -> Facts:
    return {
        "provider_tokens": event.provider_tokens,
        "maximum": event.maximum,
        "estimate": event.estimate,
    }


@facts.register
def _(event: Session.DoubleCompactionConfigured) -> Facts:
    return {"provider": event.provider, "detail": event.detail}


@facts.register
def _(event: Session.CompactionFailed) -> Facts:
    return {"summarizer": event.summarizer, "error": event.error, "fallback": event.fallback}


@facts.register
def _(event: Session.LedgerUpdated) -> Facts:
    return {
        "entries": event.count,
        "tokens": event.tokens,
        "consolidated": event.consolidated,
        "dropped": [f"{e.kind}: {e.text}" for e in event.dropped],
    }


@facts.register
def _(event: Session.SystemPromptChanged) -> Facts:
    return {"system_tokens": event.system_tokens}


@facts.register
def _(event: Session.ApiCompacted) -> Facts:
    return {
        "position": event.position,
        "generation": event.generation,
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
    }


@facts.register
def _(event: Session.SystemPromptInstructed) -> Facts:
    return {"system_chars": len(event.system), "queued": event.queued}


@facts.register
def _(event: Session.ToolsInstructed) -> Facts:
    return {"tools": [t.get("name") for t in event.tools], "queued": event.queued}


@facts.register
def _(event: Session.QueuedSystemMessagesAppended) -> Facts:
    return {"count": event.count}


@facts.register
def _(event: Session.ToolsChanged) -> Facts:
    return {"tools": [t.get("name") for t in event.tools], "tools_tokens": event.tools_tokens}


@facts.register
def _(event: Session.ModelChanged) -> Facts:
    return {
        "model": event.model,
        "window": event.context_window,
        "reserved_output": event.reserved_output,
    }


@facts.register
def _(event: Session.MessagesReshown) -> Facts:
    return {
        "cap": event.cap,
        "positions": [m.position for m in event.messages],
        "reason": event.reason,
    }


@facts.register
def _(event: Session.SettingsChanged) -> Facts:
    return {"settings": event.settings_fingerprint}


@facts.register
def _(event: Session.CompactionDiscarded) -> Facts:
    return {
        "generation": event.generation,
        "retained_from": event.retained_from,
        "reason": event.reason,
    }


@facts.register
def _(event: Session.Deleted) -> Facts:
    return {"reason": event.reason}
