"""What each model family does that changes how a request may be built.

The window table (`abridged.domain.settings.MODEL_WINDOWS`) says how large a request may be;
this table says what a request may contain and what the API checks in it: whether a thinking
block is bound to the prefix it was produced under (*preserved thinking*), which models read
which models' thinking, whether `role: "system"` messages and tool changes may appear inside
`messages`, whether the API compacts on its own, the shortest prefix worth a cache
breakpoint, and how many more tokens than an approximate counter its tokenizer may take (the
calibration a session starts at). A model missing from the table gets the strictest row
(`STRICTEST`): a future model is assumed to check every thinking block's prefix and to accept
nothing it has not been shown to accept; a Claude model missing from it, to count as the
newest tokenizer does (`NEWEST_CLAUDE`).

Sources (re-read them when a row matters; they change): build-with-claude/preserved-thinking
and its prefix-checks page, build-with-claude/mid-conversation-system-messages,
build-with-claude/compaction and build-with-claude/prompt-caching on platform.claude.com, and
the Opus 4.7 release notes (its tokenizer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from abridged.domain.errors import InvalidSettingsError

NEW_TOKENIZER_RATIO = 1.35
"""The tokenizer of Claude Opus 4.7 and later "may use roughly 1x to 1.35x as many tokens"
for the same text as earlier models' (the Opus 4.7 release notes); a request's `SAFETY`
margin of 10% covers what some content measures beyond that (about 1.45x, English prose)."""


@attrs.frozen
class ModelCapabilities:
    """One model family's row: what requests to it may hold and what the API checks."""

    prefix_bound_thinking: bool
    """A thinking block sent back passes only while everything before it (system, tools,
    earlier messages and blocks) is exactly what it was when the block was produced."""
    reads_thinking_of: tuple[str, ...] = ()
    """Model-name prefixes, besides its own family, whose thinking blocks this model reads;
    the API drops an unreadable block without an error."""
    portable_thinking: bool = False
    """Its thinking blocks are read by every model (not bound to the producing model)."""
    system_messages: bool = False
    """`{"role": "system"}` messages may appear inside `messages` (after a user turn)."""
    tool_changes: bool = False
    """Tools may be added or removed mid-conversation without editing the top-level `tools`."""
    native_compaction: bool = False
    """The API compacts on its own (`compact_20260112`, on-demand `compaction` blocks)."""
    min_cacheable_tokens: int = 4_096
    """The shortest prefix the API caches; a breakpoint on a shorter one is wasted."""
    tokenizer_ratio: float = 1.0
    """Where a session's calibration starts, before any reply reports the model's own count,
    when its counter approximates (`TokenCounter.approximate`): how many tokens the model's
    tokenizer may take for one such a counter counts. 1.0 for the models before Opus 4.7."""

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelCapabilities:
        """A row from JSON-like data (a host's table, a stored event); a wrong field or type
        raises `InvalidSettingsError` naming it."""
        fields = {f.name: f for f in attrs.fields(cls)}
        unknown = set(data) - set(fields)
        if unknown:
            raise InvalidSettingsError(
                f"unknown model capabilities: {', '.join(sorted(unknown))}; "
                f"known: {', '.join(fields)}"
            )
        values = dict(data)
        for name, value in values.items():
            if name == "reads_thinking_of":
                if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                    raise InvalidSettingsError(
                        f"reads_thinking_of must be a list of model-name prefixes, got {value!r}"
                    )
                values[name] = tuple(value)
            elif name == "tokenizer_ratio":
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise InvalidSettingsError(f"tokenizer_ratio must be a number, got {value!r}")
                if not 0.5 <= value <= 4.0:
                    raise InvalidSettingsError(
                        f"tokenizer_ratio must be between 0.5 and 4, got {value!r}"
                    )
                values[name] = float(value)
            elif name == "min_cacheable_tokens":
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise InvalidSettingsError(
                        f"min_cacheable_tokens must be a whole number >= 0, got {value!r}"
                    )
            elif not isinstance(value, bool):
                raise InvalidSettingsError(f"{name} must be true or false, got {value!r}")
        return cls(**values)

    def reads(
        self,
        model: str,
        producer: str | None,
        table: Mapping[str, ModelCapabilities] | None = None,
    ) -> bool:
        """Whether `model` (this row's) reads a thinking block that `producer` wrote; a block
        of unknown origin is taken as the session's own model's. `table` holds the host's
        rows (families and portability are looked up there first)."""
        if producer is None or _family(producer, table) == _family(model, table):
            return True
        if capabilities_for(producer, table).portable_thinking:
            return True
        return any(producer.startswith(prefix) for prefix in self.reads_thinking_of)


STRICTEST = ModelCapabilities(prefix_bound_thinking=True, tokenizer_ratio=1.0)
"""The row of a model the table does not know. Its tokenizer is not known either: the
counter's count is taken as it is until replies say (a Claude model gets `NEWEST_CLAUDE`)."""

NEWEST_CLAUDE = attrs.evolve(STRICTEST, tokenizer_ratio=NEW_TOKENIZER_RATIO)
"""The row of a Claude model the table does not know ("claude" in its name: a newer family,
or a provider's name for one, such as `anthropic.claude-...` on Bedrock): the strictest, and
counting as the newest tokenizer does."""

_LEGACY = ModelCapabilities(
    prefix_bound_thinking=False, min_cacheable_tokens=1_024, tokenizer_ratio=1.0
)
_LEGACY_HAIKU = ModelCapabilities(
    prefix_bound_thinking=False, min_cacheable_tokens=2_048, tokenizer_ratio=1.0
)


def _current(
    *,
    bound: bool,
    min_cacheable: int,
    reads: tuple[str, ...] = (),
    portable: bool = False,
    system_messages: bool = True,
) -> ModelCapabilities:
    """A model of today: the API's compaction, and system messages and tool changes unless
    `system_messages` is false."""
    return ModelCapabilities(
        prefix_bound_thinking=bound,
        reads_thinking_of=reads,
        portable_thinking=portable,
        system_messages=system_messages,
        tool_changes=system_messages,
        native_compaction=True,
        min_cacheable_tokens=min_cacheable,
        tokenizer_ratio=NEW_TOKENIZER_RATIO,
    )


# System messages and tool changes inside `messages`: only the models the page
# build-with-claude/mid-conversation-system-messages names (Fable 5.1, Mythos 5.1, Fable 5,
# Mythos 5, Opus 5.5, Opus 4.8, Opus 5, Sonnet 5.5 and Haiku 5.5; the page as of 2026-11,
# which added the last two). It says "This feature is not available on Claude Sonnet 5", where
# a `role: "system"` message is a 400; Sonnet 5 and Haiku 5, which it does not name, get the
# top-level system prompt only.
MODEL_CAPABILITIES: tuple[tuple[str, ModelCapabilities], ...] = (
    # Preserved thinking: every thinking block is bound to its prefix.
    ("claude-fable-5", _current(bound=True, min_cacheable=512, reads=("claude-opus-5",))),
    ("claude-mythos-5", _current(bound=True, min_cacheable=512)),
    ("claude-opus-5-5", _current(bound=True, min_cacheable=1_024)),
    ("claude-sonnet-5-5", _current(bound=True, min_cacheable=1_024)),
    ("claude-haiku-5-5", _current(bound=True, min_cacheable=4_096, portable=True)),
    # Thinking not bound to its prefix.
    ("claude-opus-5", _current(bound=False, min_cacheable=1_024)),
    ("claude-sonnet-5", _current(bound=False, min_cacheable=1_024, system_messages=False)),
    ("claude-haiku-5", _current(bound=False, min_cacheable=4_096, system_messages=False)),
    ("claude-opus-4-8", _current(bound=False, min_cacheable=1_024)),
    # Earlier models: the top-level system prompt only.
    (
        "claude-opus-4-7",
        ModelCapabilities(
            prefix_bound_thinking=False,
            native_compaction=True,
            min_cacheable_tokens=2_048,
            tokenizer_ratio=NEW_TOKENIZER_RATIO,
        ),
    ),
    (
        "claude-opus-4-6",
        ModelCapabilities(
            prefix_bound_thinking=False,
            native_compaction=True,
            min_cacheable_tokens=4_096,
            tokenizer_ratio=1.0,
        ),
    ),
    (
        "claude-sonnet-4-6",
        ModelCapabilities(
            prefix_bound_thinking=False,
            native_compaction=True,
            min_cacheable_tokens=1_024,
            tokenizer_ratio=1.0,
        ),
    ),
    ("claude-opus-4-5", ModelCapabilities(prefix_bound_thinking=False, tokenizer_ratio=1.0)),
    ("claude-haiku-4-5", ModelCapabilities(prefix_bound_thinking=False, tokenizer_ratio=1.0)),
    ("claude-sonnet-4-5", _LEGACY),
    ("claude-opus-4", _LEGACY),
    ("claude-sonnet-4", _LEGACY),
    ("claude-3-7-sonnet", _LEGACY),
    ("claude-3-5-sonnet", _LEGACY),
    ("claude-3-opus", _LEGACY),
    ("claude-3-5-haiku", _LEGACY_HAIKU),
    ("claude-3-haiku", _LEGACY_HAIKU),
)
"""Capabilities by model-name prefix; the longest matching prefix wins, and an unknown model
gets `STRICTEST`. A host adds or overrides rows with `Sessions(model_capabilities=...)`."""


def _family(model: str, table: Mapping[str, ModelCapabilities] | None = None) -> str:
    prefixes = [prefix for prefix, _ in MODEL_CAPABILITIES] + list(table or {})
    matches = [prefix for prefix in prefixes if model.startswith(prefix)]
    return max(matches, key=len) if matches else model


def check_model_capabilities(
    table: Mapping[str, ModelCapabilities | Mapping[str, Any]],
) -> dict[str, ModelCapabilities]:
    """A host's rows, checked: a row is a `ModelCapabilities` or a mapping of its fields
    (fields left out take the strictest value)."""
    rows: dict[str, ModelCapabilities] = {}
    for name, row in table.items():
        if not isinstance(name, str) or not name.strip():
            raise InvalidSettingsError(f"a model capabilities row needs a model name, got {name!r}")
        if isinstance(row, ModelCapabilities):
            rows[name] = row
        elif isinstance(row, Mapping):
            rows[name] = ModelCapabilities.from_dict({**STRICTEST.to_dict(), **row})
        else:
            raise InvalidSettingsError(
                f"the capabilities of {name!r} must be ModelCapabilities or a mapping, got {row!r}"
            )
    return rows


def capabilities_for(
    model: str, table: Mapping[str, ModelCapabilities] | None = None
) -> ModelCapabilities:
    """The row of `model`: the longest prefix of it among the host's `table` and the built-in
    one (the host's row wins a tie), else `NEWEST_CLAUDE` for a Claude model and `STRICTEST`
    for any other."""
    rows = {**dict(MODEL_CAPABILITIES), **(table or {})}
    matches = [prefix for prefix in rows if model.startswith(prefix)]
    if matches:
        return rows[max(matches, key=len)]
    return NEWEST_CLAUDE if "claude" in model.lower() else STRICTEST
