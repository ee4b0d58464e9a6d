"""The agent's own plan, as a planning tool's call writes it down (Claude Code's `TodoWrite`,
a `update_plan` of `{step, status}` items): the ledger's `plan-todo`, `plan-doing` and
`plan-done` entries, an item each. An agent that loses its list after a compaction loses its
place: which steps are done, which one it was on, what is left.

Each call restates the whole list, so an item is one fact whatever call named it: the same
text with a later status is the same entry, moved on (`ledger_entry.merge` keeps the status
furthest along). An item a later list no longer names stays until the ledger is short of
room, like any fact."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from abridged.domain.ledger_entry import LedgerEntry
from abridged.domain.messages import JSON

PLAN_TOOL = re.compile(r"todo|plan", re.IGNORECASE)
"""A tool that writes down the agent's own plan (`TodoWrite`, `update_plan`, `ExitPlanMode`):
its items are entries of their own, not a call's arguments."""
ITEM_KEYS = ("content", "step", "task", "title", "description", "text", "name")
"""Where an item of a plan holds its text, the first found."""
DONE = frozenset({"completed", "complete", "done", "finished"})
DOING = frozenset({"in_progress", "in-progress", "inprogress", "active", "doing", "started"})
PLAN_ITEM_CHARS = 300
"""An item longer than this is kept up to it."""


def plan_entries(inputs: Mapping[str, JSON], position: int) -> Iterable[LedgerEntry]:
    """The items of the lists of `{text, status}` objects a planning tool's input holds
    (`todos`, `plan`, ...), each with its status; nothing for a plan written as prose."""
    for value in inputs.values():
        if not isinstance(value, list):
            continue
        for item in value:
            if not isinstance(item, dict) or not isinstance(item.get("status"), str):
                continue
            text = next(
                (t.strip() for k in ITEM_KEYS if isinstance(t := item.get(k), str) and t.strip()),
                None,
            )
            if text is None or "\n" in text:
                continue
            yield LedgerEntry(
                _kind(str(item["status"])), text[:PLAN_ITEM_CHARS], position, position
            )


def _kind(status: str) -> str:
    status = status.strip().lower()
    if status in DONE:
        return "plan-done"
    if status in DOING:
        return "plan-doing"
    return "plan-todo"
