"""Compaction settings: every knob, its default, and the checks that keep them consistent.

Why this module is long: each setting is documented where it is declared, next to its
default and its validator; the presets come with them. The limits the settings give one
window (`abridged.domain.limits`) and the model windows table (`abridged.domain.windows`)
have modules of their own; their names stay importable from here (`__all__`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import attrs

from abridged.domain.errors import InvalidSettingsError
from abridged.domain.limits import MAX_WINDOW, Limits
from abridged.domain.vocabulary import (
    PruneStrategy,
    ReasoningPolicy,
    SummaryStrategy,
    ToolOutputMode,
    ToolPolicy,
    choices,
)
from abridged.domain.windows import (
    DEFAULT_WINDOW,
    MODEL_WINDOWS,
    check_model_windows,
    context_window_for,
    parse_model_windows,
)


def _share(name: str, value: float, *, low: float = 0.0, high: float = 1.0) -> None:
    if not (low < value <= high):
        raise InvalidSettingsError(f"{name} must be in ({low}, {high}], got {value!r}")


# JSON and the CLI give ints, floats and strings freely: a wrong type must fail when the
# settings are made, not in the middle of a compaction.


def _int(_: object, field: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSettingsError(f"{field.name} must be int, got {value!r}")


def _optional(
    check: Callable[[object, attrs.Attribute[Any], object], None], kind: str
) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """`check`, or `None`."""

    def optional(instance: object, field: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            try:
                check(instance, field, value)
            except InvalidSettingsError:
                raise InvalidSettingsError(
                    f"{field.name} must be {kind} or null, got {value!r}"
                ) from None

    return optional


def _float(_: object, field: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidSettingsError(f"{field.name} must be float, got {value!r}")


def _float_at_least_zero(instance: object, field: attrs.Attribute[Any], value: object) -> None:
    _float(instance, field, value)
    if not (0.0 <= float(value) <= 1.0):  # type: ignore[arg-type]
        raise InvalidSettingsError(f"{field.name} must be in [0, 1], got {value!r}")


_optional_int = _optional(_int, "int")
_optional_float = _optional(_float, "float")


def _bool(_: object, field: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidSettingsError(f"{field.name} must be bool, got {value!r}")


def _one_of(alias: object) -> Callable[[object, attrs.Attribute[Any], object], None]:
    allowed = choices(alias)

    def check(_: object, field: attrs.Attribute[Any], value: object) -> None:
        _choice(field.name, value, allowed)

    return check


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise InvalidSettingsError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def _tool_policies(_: object, field: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise InvalidSettingsError(f"{field.name} must be dict[str, str], got {value!r}")
    for tool, policy in value.items():
        _choice(f"{field.name}[{tool!r}]", policy, choices(ToolPolicy))


def _at_least(name: str, value: int | None, low: int) -> None:
    if value is not None and value < low:
        raise InvalidSettingsError(f"{name} must be at least {low}, got {value!r}")


MAX_TURNS = 1_000_000
"""The largest count of turns or messages a setting may name."""


def _at_most(name: str, value: int | None, high: int) -> None:
    if value is not None and value > high:
        raise InvalidSettingsError(f"{name} must be at most {high}, got {value}")


@attrs.frozen
class CompactionSettings:
    """How a session decides to compact, what it keeps, and how large things may grow.

    Shares are fractions of the budget (window minus reserved output tokens) unless said.
    """

    # Triggers.
    threshold_ratio: float = attrs.field(default=0.4, validator=_float)
    """Compact when the next request's estimate reaches this fraction of the window."""
    threshold_floor_tokens: int = attrs.field(default=2_000, validator=_int)
    """Never compact a context smaller than this, whatever the ratio says."""
    threshold_reserve_tokens: int | None = attrs.field(default=None, validator=_optional_int)
    """When set, compact at `window - threshold_reserve_tokens` instead of by ratio."""
    cooldown_messages: int = attrs.field(default=4, validator=_int)
    """A threshold compaction fewer than this many messages after the last one is suppressed
    (a request follows at least two new messages, so 4 holds off one exchange)."""
    target_ratio: float = attrs.field(default=0.12, validator=_float)
    """Only with `keep_recent_share=None` (the earlier rule): a compaction brings the next
    request to at most this fraction of the window (the retained tail shrinks to fit), so
    that the next one is far off. The default rule keeps the recent tail instead."""
    min_growth_share: float = attrs.field(default=0.2, validator=_float_at_least_zero)
    """A threshold compaction waits until the context has grown by this share of the budget
    since the last compaction left it: a compaction rewrites the cached context, so one that
    frees little costs more than it saves. 0 turns the guard off."""
    min_reduction_share: float = attrs.field(default=0.05, validator=_float)
    """A compaction saving less than this share of the budget made no progress."""
    background_threshold_ratio: float | None = attrs.field(default=None, validator=_optional_float)
    """When set, a reply that takes the estimate past this fraction of the window starts the
    compaction in the background, so the request that would reach the threshold finds it done."""

    # What stays verbatim.
    keep_recent_turns: int = attrs.field(default=2, validator=_int)
    """Turns kept verbatim after a compaction; fewer when they alone do not fit."""
    keep_recent_tokens: int | None = attrs.field(default=None, validator=_optional_int)
    """When set, keep the most recent exchanges up to this many tokens instead of by turns."""
    retained_share: float = attrs.field(default=0.15, validator=_float)
    """At most this share of the window is kept verbatim after a compaction."""
    keep_recent_share: float | None = attrs.field(default=0.08, validator=_optional_float)
    """The recent tail a compaction keeps verbatim: the most recent messages up to this
    share of the window (or `keep_recent_tokens` when set), and the last `keep_recent_turns`
    turns whole when they fit in `retained_share`. The tail is chosen first; the facts ledger
    and the summaries share what is left (docs/settings.md#sharing-the-budget). `None`: the
    earlier rule, where the ledger's whole share is counted first and the tail shrinks to
    the target."""

    tail_reaches_back: bool = attrs.field(default=True, validator=_bool)
    """Where a tail may start only at some messages (inside a tool loop led by thinking, only
    before a reply that starts with thinking), the recent tail reaches back to the start
    before the one `keep_recent_share` allows when the messages between fit it and the longer
    tail fits `retained_share`: a tail of the last call alone leaves the loop's steps that fit
    the rule summarized. False: the tail stops at the last start within the share, the rule
    sessions stored before keep."""
    spare_recent_tail: bool = attrs.field(default=True, validator=_bool)
    """A threshold (or background) compaction does not run while the request fits the budget
    and the recent tail would hold every retained message: it could only summarize what the
    rule keeps verbatim (a system prompt past the threshold on its own, say). False: such a
    compaction summarizes the oldest messages of the tail, the rule sessions stored before
    keep (docs/triggers.md)."""

    # Summaries.
    summary_share: float = attrs.field(default=0.02, validator=_float)
    """A new summary chunk may take at most this share of the budget."""
    summaries_share: float = attrs.field(default=0.04, validator=_float)
    """All summary chunks together may take this share; past it they are re-summarized."""
    summary_strategy: SummaryStrategy = attrs.field(
        default="additive", validator=_one_of(SummaryStrategy)
    )
    """`additive`: one chunk per compaction; `update`: the summary so far and the new
    messages are summarized into one chunk every time."""

    ledger_share: float = attrs.field(default=0.3, validator=_float)
    """The facts ledger (paths, commands, errors, requests kept verbatim through every
    compaction) may take at most this share of the budget; past it, entries are dropped by
    priority (`abridged.domain.ledger`). A compaction appends to the ledger rather than
    rewriting it, so a larger ledger costs mostly cache reads (docs/evaluation.md)."""

    # Prompts.
    whole_prompts: bool = attrs.field(default=True, validator=_bool)
    """A user prompt (a pasted log, a document) is shown whole when a request can hold it
    beside the system prompt, the tools and the summaries' room, and reduced to at most half
    of that room only when the context must shrink (past the threshold, or a request that
    does not fit). False: at most half of it from its first request, the rule sessions stored
    before keep (docs/content.md#never-stuck)."""

    # Tool outputs.
    tool_output_share: float = attrs.field(default=0.25, validator=_float)
    """One message's tool outputs are shown head-and-tail above this share of the budget."""
    tool_output_mode: ToolOutputMode = attrs.field(
        default="auto", validator=_one_of(ToolOutputMode)
    )
    """`auto` prunes by the rules below; `keep_all` prunes only with a compaction (or past the
    threshold when none can run);
    `keep_none` prunes every output outside the protected window at once."""
    whole_until_threshold: bool = attrs.field(default=True, validator=_bool)
    """True (the default): `auto` does not prune a session that has never been compacted
    while its requests stay below the threshold, so one that never reaches it is sent whole.
    False (the rule of sessions stored before it existed): `auto` prunes whenever
    `prune_min_share` of the budget would be saved (docs/evaluation.md, "A tenth outside
    check")."""
    spare_small_outputs: bool = attrs.field(default=True, validator=_bool)
    """When no request fits and the last resort shows every output before the last exchange
    by its tool's name (`abridged.domain.pruning.plan_fit`), outputs under twice a name's
    tokens (80) stay as they are: a name saves them next to nothing, and costs a long tool
    loop its recent steps shown whole. False: only those under a name's tokens stay, the rule
    sessions stored before keep."""
    prune_strategy: PruneStrategy = attrs.field(
        default="head-tail", validator=_one_of(PruneStrategy)
    )
    """How a pruned output is shown: `head-tail` (first and last bytes) or `name-only`."""
    prune_protect_share: float = attrs.field(default=0.15, validator=_float)
    """The most recent tool outputs, up to this share of the budget, are never pruned."""
    prune_min_share: float = attrs.field(default=0.1, validator=_float)
    """The prune boundary moves only to save at least this share of the budget at once."""
    prune_head_bytes: int = attrs.field(default=400, validator=_int)
    prune_tail_bytes: int = attrs.field(default=400, validator=_int)
    prune_salient_chars: int = attrs.field(default=600, validator=_int)
    """A pruned output keeps up to this many characters of salient lines (errors, failing
    tests, traceback frames, paths) from its cut middle; 0 keeps none."""
    salient_chars: int = attrs.field(default=2_000, validator=_int)
    """An output truncated at append (over `tool_output_share`) keeps up to this many
    characters of salient lines from its cut middle (at most a third of what it shows)."""
    salient_rules: int = attrs.field(default=3, validator=_int)
    """Which rules choose salient lines (`abridged.domain.salience`): 2 also takes log lines
    at ERROR, FATAL or CRITICAL level, the exception that ends a traceback whatever its name,
    and pytest's `E` lines; 3 also cuts a head and a tail at line ends; 1, the first rules,
    is what sessions stored earlier keep, so that what they showed is shown the same."""
    tool_policies: dict[str, ToolPolicy] = attrs.field(
        factory=dict, hash=False, validator=_tool_policies
    )
    """Per tool name: `prune` (the default), `keep` (never pruned) or `summarize` (pruned to
    a summary of the whole output)."""

    # Reasoning.
    reasoning_policy: ReasoningPolicy = attrs.field(
        default="drop", validator=_one_of(ReasoningPolicy)
    )
    """What older thinking blocks become: `drop` them, or `summarize` them as plain text."""
    reasoning_keep_turns: int = attrs.field(default=1, validator=_int)
    """Thinking blocks of this many recent turns are sent byte for byte."""
    summarize_thinking: bool = attrs.field(default=False, validator=_bool)
    """Whether the summarizer is given raw thinking text."""

    def __attrs_post_init__(self) -> None:
        _share("threshold_ratio", self.threshold_ratio)
        _share("retained_share", self.retained_share)
        _share("target_ratio", self.target_ratio)
        _share("summary_share", self.summary_share, high=0.5)
        _share("summaries_share", self.summaries_share, high=0.5)
        if not (0.0 <= self.ledger_share <= 0.5):
            raise InvalidSettingsError(
                f"ledger_share must be in [0, 0.5], got {self.ledger_share!r} (0 turns it off)"
            )
        _share("tool_output_share", self.tool_output_share)
        _share("prune_protect_share", self.prune_protect_share)
        _share("min_reduction_share", self.min_reduction_share, high=0.5)
        if self.background_threshold_ratio is not None:
            _share("background_threshold_ratio", self.background_threshold_ratio)
        if not (0.0 <= self.prune_min_share <= 1.0):
            raise InvalidSettingsError(
                f"prune_min_share must be in [0, 1], got {self.prune_min_share!r}"
            )
        if self.summary_share > self.summaries_share:
            raise InvalidSettingsError(
                f"summary_share ({self.summary_share}) cannot exceed "
                f"summaries_share ({self.summaries_share})"
            )
        for name in (
            "threshold_floor_tokens",
            "keep_recent_turns",
            "cooldown_messages",
            "prune_head_bytes",
            "prune_tail_bytes",
            "prune_salient_chars",
            "salient_chars",
            "reasoning_keep_turns",
        ):
            _at_least(name, getattr(self, name), 0)
        _at_least("threshold_reserve_tokens", self.threshold_reserve_tokens, 1)
        _at_least("keep_recent_tokens", self.keep_recent_tokens, 1)
        for name in ("keep_recent_turns", "cooldown_messages", "reasoning_keep_turns"):
            _at_most(name, getattr(self, name), MAX_TURNS)
        for name in (
            "threshold_floor_tokens",
            "threshold_reserve_tokens",
            "keep_recent_tokens",
            "prune_head_bytes",
            "prune_tail_bytes",
            "prune_salient_chars",
            "salient_chars",
        ):
            _at_most(name, getattr(self, name), MAX_WINDOW)
        if self.keep_recent_share is not None:
            _share("keep_recent_share", self.keep_recent_share)
        _at_least("salient_rules", self.salient_rules, 1)
        _at_most("salient_rules", self.salient_rules, 3)

    def tool_policy(self, tool_name: str) -> ToolPolicy:
        return self.tool_policies.get(tool_name, "prune")

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompactionSettings:
        unknown = set(data) - {f.name for f in attrs.fields(cls)}
        if unknown:
            raise InvalidSettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
        return cls(**data)

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> CompactionSettings:
        """Settings as a session recorded them. A setting added since takes the value that
        behaves as before it existed (`ADDED_SETTINGS`), not today's default: a stored
        session goes on deciding as it did, and keeps its fingerprint."""
        return cls.from_dict({**{k: v for k, v in ADDED_SETTINGS.items() if k not in data}, **data})

    @property
    def fingerprint(self) -> str:
        """A short stable hash of every setting, recorded with each decision."""
        data = self.to_dict()
        for name, before in ADDED_SETTINGS.items():
            # Added later: settings that behave as before keep the fingerprint they had.
            if data[name] == before:
                del data[name]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


ADDED_SETTINGS: dict[str, Any] = {
    "background_threshold_ratio": None,
    "target_ratio": 1.0,
    "min_growth_share": 0.0,
    "ledger_share": 0.0,
    "prune_salient_chars": 0,
    "salient_chars": 0,
    "keep_recent_share": None,
    "salient_rules": 1,
    "whole_prompts": False,
    "spare_recent_tail": False,
    "whole_until_threshold": False,
    "tail_reaches_back": False,
    "spare_small_outputs": False,
}
"""Settings added after sessions were first stored, each with the value that behaves as if
it did not exist (no earlier mark, no target below the threshold, no growth guard, no
ledger, no salient lines, the ledger's share counted before the recent tail, the first
rules of salient lines, a prompt shown at most half of a request's room, a compaction that
summarizes the recent tail when nothing else is left, old outputs pruned below the threshold,
a tail that stops at the last start within its share, every output over a name's tokens
shown by name in the last resort)."""


PRESETS: dict[str, CompactionSettings] = {
    # Nothing is pruned or summarized until the next request would not fit the budget.
    "off": CompactionSettings(
        threshold_ratio=1.0,
        target_ratio=1.0,
        tool_output_mode="keep_all",
        reasoning_keep_turns=1_000_000,
    ),
    # Later and gentler compactions, more verbatim: costs more per request (docs/evaluation.md).
    "conservative": CompactionSettings(
        threshold_ratio=0.85,
        target_ratio=0.5,
        keep_recent_turns=6,
        retained_share=0.5,
        summary_share=0.1,
        summaries_share=0.2,
        prune_protect_share=0.5,
        prune_min_share=0.1,
        reasoning_keep_turns=3,
    ),
    "default": CompactionSettings(),
    "aggressive": CompactionSettings(
        threshold_ratio=0.25,
        target_ratio=0.1,
        retained_share=0.1,
        prune_strategy="name-only",
        prune_protect_share=0.1,
        prune_min_share=0.1,
    ),
}
"""Named starting points; `settings_from(preset, overrides)` adjusts any field."""


def settings_from(
    preset: str = "default", overrides: dict[str, Any] | None = None
) -> CompactionSettings:
    """A preset with some fields replaced; raises `InvalidSettingsError` naming what is wrong."""
    try:
        base = PRESETS[preset]
    except KeyError:
        raise InvalidSettingsError(
            f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}"
        ) from None
    if not overrides:
        return base
    return CompactionSettings.from_dict({**base.to_dict(), **overrides})


__all__ = [
    "ADDED_SETTINGS",
    "DEFAULT_WINDOW",
    "MAX_TURNS",
    "MAX_WINDOW",
    "MODEL_WINDOWS",
    "PRESETS",
    "CompactionSettings",
    "Limits",
    "check_model_windows",
    "context_window_for",
    "parse_model_windows",
    "settings_from",
]
