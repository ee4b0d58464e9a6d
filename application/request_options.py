"""The request parameters a host passes through to the provider (`RequestOptions`), checked
as the Messages API would check them, before anything is sent."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

import attrs

from abridged.domain.errors import InvalidRequestOptionsError
from abridged.domain.messages import JSON


def _optional_mapping(value: Mapping[str, JSON] | None) -> Mapping[str, JSON] | None:
    return None if value is None else dict(value)


def _string_tuple(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise InvalidRequestOptionsError("stop_sequences is a list of strings, not one string")
    return tuple(value)


@attrs.frozen
class RequestOptions:
    """Request parameters a host passes through to the provider, as the Messages API spells
    them: `thinking` (`{"type": "enabled", "budget_tokens": N}`), `tool_choice`
    (`{"type": "auto" | "any" | "tool" | "none", ...}`), `temperature` (0 to 1), `metadata`
    (`{"user_id": ...}`) and `stop_sequences`. Raises `InvalidRequestOptionsError` for a
    value the API would refuse; checks that need `max_tokens` run when the request is built.
    """

    thinking: Mapping[str, JSON] | None = attrs.field(default=None, converter=_optional_mapping)
    tool_choice: Mapping[str, JSON] | None = attrs.field(default=None, converter=_optional_mapping)
    temperature: float | None = None
    metadata: Mapping[str, JSON] | None = attrs.field(default=None, converter=_optional_mapping)
    stop_sequences: tuple[str, ...] = attrs.field(default=(), converter=_string_tuple)

    def __attrs_post_init__(self) -> None:
        if self.temperature is not None and not (
            isinstance(self.temperature, int | float)
            and math.isfinite(self.temperature)
            and 0 <= self.temperature <= 1
        ):
            raise InvalidRequestOptionsError(
                f"temperature must be between 0 and 1, got {self.temperature!r}"
            )
        if any(not isinstance(s, str) or not s.strip() for s in self.stop_sequences):
            raise InvalidRequestOptionsError("each stop sequence must be a non-blank string")
        for name, value in (
            ("stop_sequences", list(self.stop_sequences)),
            ("metadata", self.metadata),
            ("tool_choice", self.tool_choice),
            ("thinking", self.thinking),
        ):
            try:
                json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except (UnicodeEncodeError, TypeError, ValueError) as error:
                raise InvalidRequestOptionsError(
                    f"{name} cannot be sent as JSON in UTF-8: {error}"
                ) from None
        if self.thinking is not None:
            kind = self.thinking.get("type")
            if kind not in ("enabled", "disabled", "adaptive"):
                raise InvalidRequestOptionsError(
                    f"thinking type must be enabled, disabled or adaptive, got {kind!r}"
                )
            budget = self.thinking.get("budget_tokens")
            if kind == "enabled" and not (isinstance(budget, int) and budget >= 1_024):
                raise InvalidRequestOptionsError(
                    f"enabled thinking needs budget_tokens of at least 1024, got {budget!r}"
                )
        if self.tool_choice is not None:
            kind = self.tool_choice.get("type")
            if kind not in ("auto", "any", "tool", "none"):
                raise InvalidRequestOptionsError(
                    f"tool_choice type must be auto, any, tool or none, got {kind!r}"
                )
            if kind == "tool" and not isinstance(self.tool_choice.get("name"), str):
                raise InvalidRequestOptionsError('tool_choice {"type": "tool"} needs a "name"')
        if self.thinking is not None and self.thinking.get("type") == "enabled":
            # The API refuses these with extended thinking on.
            if self.temperature is not None:
                raise InvalidRequestOptionsError("temperature cannot be set with thinking")
            if self.tool_choice is not None and self.tool_choice.get("type") in ("any", "tool"):
                raise InvalidRequestOptionsError(
                    "thinking allows tool_choice auto or none only, not any or tool"
                )

    def check_tools(self, tools: Sequence[Mapping[str, JSON]]) -> None:
        """Raises `InvalidRequestOptionsError` when `tool_choice` forces a tool `tools` (the
        request's definitions) does not define: the API refuses it. An MCP toolset's tools
        are named by its server, so a request with one is not checked."""
        if self.tool_choice is None or self.tool_choice.get("type") != "tool":
            return
        if any(tool.get("type") == "mcp_toolset" for tool in tools):
            return
        name = self.tool_choice.get("name")
        if name not in {tool.get("name") for tool in tools}:
            raise InvalidRequestOptionsError(
                f"tool_choice names {name!r:.80}, which is not one of the session's tools"
            )

    def check_for(self, max_tokens: int) -> None:
        """Raises `InvalidRequestOptionsError` when the thinking budget is not below
        `max_tokens` (the output tokens the request reserves)."""
        budget = self.thinking.get("budget_tokens") if self.thinking is not None else None
        if isinstance(budget, int) and budget >= max_tokens:
            raise InvalidRequestOptionsError(
                f"the thinking budget ({budget}) must be below max_tokens ({max_tokens})"
            )
