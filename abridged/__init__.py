"""abridged: keep long LLM agent conversations inside the context window.

The public API. Everything a host app needs is importable from here; the layers beneath
(`abridged.domain`, `abridged.application`, `abridged.adapters`) hold the details.
"""

from __future__ import annotations

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.application.guard import BreakerSettings
from abridged.application.ports import (
    ChatModel,
    CompactionHooks,
    CompactionReport,
    ContextProvider,
    HookVerdict,
    ModelReply,
    PromptTooLongError,
    ProviderError,
    ProviderUnavailableError,
    Summarizer,
    SummarizerError,
    Summary,
    TokenCounter,
)
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.context import Context
from abridged.domain.errors import (
    CompactionFailedError,
    ContextOverflowError,
    InvalidArgumentError,
    InvalidMessageError,
    InvalidSettingsError,
    InvalidToolDefinitionError,
    MessageTooLargeError,
    NothingToCompactError,
    SessionError,
    SessionExistsError,
    StoreError,
    UnencodableContentError,
    UnknownSessionError,
)
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import PRESETS, CompactionSettings, settings_from
from abridged.domain.usage import Usage

__all__ = [
    "PRESETS",
    "BreakerSettings",
    "ChatModel",
    "CompactionFailedError",
    "CompactionHooks",
    "CompactionReport",
    "CompactionSettings",
    "Context",
    "ContextOverflowError",
    "ContextProvider",
    "HookVerdict",
    "InvalidArgumentError",
    "InvalidMessageError",
    "InvalidSettingsError",
    "InvalidToolDefinitionError",
    "Message",
    "MessageTooLargeError",
    "ModelReply",
    "NothingToCompactError",
    "PreparedRequest",
    "PromptTooLongError",
    "ProviderError",
    "ProviderUnavailableError",
    "Role",
    "Session",
    "SessionError",
    "SessionExistsError",
    "Sessions",
    "StoreError",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "TokenCounter",
    "UnencodableContentError",
    "UnknownSessionError",
    "Usage",
    "bootstrap",
    "render_request",
    "settings_from",
]
