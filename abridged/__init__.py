"""abridged: keep long LLM agent conversations inside the context window.

The public API. Everything a host app needs is importable from here; the layers beneath
(`abridged.domain`, `abridged.application`, `abridged.adapters`) hold the details.
"""

from __future__ import annotations

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap
from abridged.application.auditing import SessionAudit, audit_session
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
    InvalidMessageError,
    InvalidSettingsError,
    NothingToCompactError,
    SessionError,
    UnknownSessionError,
)
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import PRESETS, CompactionSettings, settings_from
from abridged.domain.usage import Usage

__all__ = [
    "PRESETS",
    "ChatModel",
    "CompactionFailedError",
    "CompactionHooks",
    "CompactionReport",
    "CompactionSettings",
    "Context",
    "ContextOverflowError",
    "ContextProvider",
    "HookVerdict",
    "InvalidMessageError",
    "InvalidSettingsError",
    "Message",
    "ModelReply",
    "NothingToCompactError",
    "PreparedRequest",
    "PromptTooLongError",
    "ProviderError",
    "ProviderUnavailableError",
    "Role",
    "Session",
    "SessionAudit",
    "SessionError",
    "Sessions",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "TokenCounter",
    "UnknownSessionError",
    "Usage",
    "audit_session",
    "bootstrap",
    "render_request",
    "settings_from",
]
