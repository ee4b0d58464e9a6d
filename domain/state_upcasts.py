"""How a snapshot of a session stored by an earlier version is brought to the current state's
shape (`SessionState.class_version`): one function a version, named from the version it
reads to the one it writes, as eventsourcing calls them (`upcast_vN_vM`)."""

from __future__ import annotations

from typing import Any

from abridged.domain.capabilities import capabilities_for
from abridged.domain.indexes import recompute


def v1_v2(state: dict[str, Any]) -> None:
    """A snapshot from before the indexes: derive them from its retained tail."""
    state.update(recompute(state["entries"], state["settings"]).index_state())
    # Which events hold these messages is not known (0): snapshots keep their bodies.
    state["entry_versions"] = [0] * len(state["entries"])


def v2_v3(state: dict[str, Any]) -> None:
    """Snapshots taken before sessions had metadata, tags or a deletion mark."""
    state["metadata"] = {}
    state["tags"] = []
    state["deleted"] = None


def v3_v4(state: dict[str, Any]) -> None:
    """A snapshot taken before the ledger existed holds an empty one, and no record of
    what its last compaction left (the growth guard starts at its next compaction)."""
    state["ledger"] = []
    state["ledger_text"] = ""
    state["ledger_tokens"] = 0
    state["compacted_to"] = None


def v4_v5(state: dict[str, Any]) -> None:
    """A snapshot whose ledger was one text shows it as one segment."""
    text = state.pop("ledger_text", "")
    state["ledger_segments"] = [text] if text else []


def v5_v6(state: dict[str, Any]) -> None:
    """A snapshot taken before thinking could be bound to its prefix: the model's row of
    the built-in table says whether it is; the revision counts from here."""
    state["thinking_bound"] = capabilities_for(state["model"]).prefix_bound_thinking
    state["prefix_revision"] = 0


def v6_v7(state: dict[str, Any]) -> None:
    """A snapshot taken before the calibration started at the model's tokenizer ratio: it
    started at 1.0."""
    state["tokenizer_ratio"] = 1.0


def v7_v8(state: dict[str, Any]) -> None:
    """A snapshot taken before the count of blocks shown otherwise was kept: it is counted
    from the retained tail when first needed (`SessionState.shown_otherwise`), once its
    messages are read."""
    state["replaced_blocks"] = None
