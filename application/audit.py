"""The audit view: the facts each event records, by event class.

Dispatched by event class (`functools.singledispatch`), so renaming or adding an event is a
change here, not a string that silently stops matching in a printer. Most events' facts are
a row of `FACT_READS` naming the attributes they show (a test checks every name against the
event's fields). The CLI and reports print these facts; they never read events themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from operator import attrgetter
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


Read = str | tuple[str, str | Callable[[Any], Any]]
"""One fact: an attribute of the event named as it is, or a fact's name with the dotted path
of the attribute it shows, or a function of the event."""


def _tool_names(event: Any) -> list[Any]:
    return [tool.get("name") for tool in event.tools]


FACT_READS: dict[type, tuple[Read, ...]] = {
    Session.CompactionThresholdHit: tuple(
        (name, f"decision.{name}")
        for name in ("trigger", "estimate", "threshold", "retained_from", "turns_kept", "reason")
    ),
    Session.CompactionCompleted: (
        "generation",
        "strategy",
        ("summarized", "messages_summarized"),
        "tokens_before",
        "tokens_after",
        ("summary", "summary.text"),
    ),
    Session.ToolsPruned: (
        "boundary",
        ("outputs", lambda e: len(e.outputs)),
        "tokens_before",
        "tokens_after",
        "reason",
    ),
    Session.ReasoningDowngraded: (("blocks", lambda e: len(e.blocks)), "reason"),
    Session.CompactionSuppressed: ("trigger", "reason"),
    Session.CompactionRequested: ("reason",),
    Session.OverflowReported: ("provider_tokens", "maximum", "estimate"),
    Session.DoubleCompactionConfigured: ("provider", "detail"),
    Session.CompactionFailed: ("summarizer", "error", "fallback"),
    Session.LedgerUpdated: (
        ("entries", "count"),
        "tokens",
        "consolidated",
        ("dropped", lambda e: [f"{d.kind}: {d.text}" for d in e.dropped]),
    ),
    Session.SystemPromptChanged: ("system_tokens",),
    Session.ApiCompacted: ("position", "generation", "tokens_before", "tokens_after"),
    Session.SystemPromptInstructed: (("system_chars", lambda e: len(e.system)), "queued"),
    Session.ToolsInstructed: (("tools", _tool_names), "queued"),
    Session.QueuedSystemMessagesAppended: ("count",),
    Session.ToolsChanged: (("tools", _tool_names), "tools_tokens"),
    Session.ModelChanged: ("model", ("window", "context_window"), "reserved_output"),
    Session.TurnContextShown: ("position", "tokens", ("chars", lambda e: len(e.text))),
    Session.MessagesReshown: (
        "cap",
        ("positions", lambda e: [m.position for m in e.messages]),
        "reason",
    ),
    Session.SettingsChanged: (("settings", "settings_fingerprint"),),
    Session.CompactionDiscarded: ("generation", "retained_from", "reason"),
    Session.TurnWithdrawn: ("position", "count", "reason"),
    Session.Deleted: ("reason",),
}
"""The facts of every event but `Started` and `MessageAppended` (whose facts depend on what
they hold), in the order they are shown."""


def _reader(reads: tuple[Read, ...]) -> Callable[[Any], Facts]:
    getters: list[tuple[str, Callable[[Any], Any]]] = []
    for read in reads:
        name, source = (read, read) if isinstance(read, str) else read
        getters.append((name, attrgetter(source) if isinstance(source, str) else source))
    return lambda event: {name: get(event) for name, get in getters}


for _event_class, _reads in FACT_READS.items():
    facts.register(_event_class, _reader(_reads))
