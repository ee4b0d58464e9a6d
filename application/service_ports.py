"""The ports and settings a service's collaborators work with, bundled.

A `Compactor`, the lifecycle commands, background compactions and the request preparation
each receive a `ServicePorts` (and a `UnitOfWork`), never the service itself: what they may
use is what this bundle names.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from abridged.application.guard import GuardedSummarizer
from abridged.application.ports import (
    ChatModel,
    CompactionHooks,
    ContextProvider,
    Metrics,
    Redactor,
    TokenCounter,
    approximates,
)
from abridged.application.summaries import SummaryWriter
from abridged.domain.capabilities import ModelCapabilities, capabilities_for
from abridged.domain.session import Session
from abridged.domain.tokens import text_block_tokens

__all__ = ["ServicePorts"]


@attrs.frozen
class ServicePorts:
    """What a service was given: its ports, and the tables and bounds it applies."""

    counter: TokenCounter
    summarizer: GuardedSummarizer
    writer: SummaryWriter
    redactor: Redactor
    metrics: Metrics
    hooks: CompactionHooks | None = None
    context_provider: ContextProvider | None = None
    chat_model: ChatModel | None = None
    model_windows: dict[str, int] = attrs.field(factory=dict)
    model_capabilities: Mapping[str, ModelCapabilities] = attrs.field(factory=dict)
    max_message_bytes: int = 0

    def capabilities(self, model: str) -> ModelCapabilities:
        """What `model` checks and accepts: the host's rows, then the built-in table."""
        return capabilities_for(model, self.model_capabilities)

    def tokenizer_ratio(self, model: str) -> float:
        """Where a session on `model` starts its calibration: the model's `tokenizer_ratio`
        when the counter approximates (`ports.approximates`), else 1.0."""
        return self.capabilities(model).tokenizer_ratio if approximates(self.counter) else 1.0

    def extra(self, session: Session) -> tuple[str | None, int]:
        """The per-turn content of the session's next request, and its tokens. On a model
        that binds thinking it is counted even when it equals the content shown last (then
        not recorded again): a compaction may take that out of view first."""
        if self.context_provider is None:
            return None, 0
        text = self.context_provider.content(session.id)
        if not text or not text.strip():
            return None, 0
        return text, text_block_tokens(text, self.counter.count)
