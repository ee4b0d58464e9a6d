"""abridged: keep long LLM agent conversations inside the context window.

The public API. Everything a host app needs is importable from here; the layers beneath
(`abridged.domain`, `abridged.application`, `abridged.adapters`) hold the details.
"""

from __future__ import annotations

import logging

from abridged.adapters.anthropic.request import render_request
from abridged.adapters.bootstrap import bootstrap, bootstrap_async
from abridged.application.async_ports import AsyncChatModel, AsyncSummarizer
from abridged.application.async_service import AsyncSessions
from abridged.application.auditing import SessionAudit, audit_session
from abridged.application.compactions import CompactionRecord
from abridged.application.guard import BreakerSettings
from abridged.application.management import SessionInfo, SessionPage, SessionStats
from abridged.application.notices import Notice, TokenBreakdown
from abridged.application.options import SessionsOptions
from abridged.application.ports import (
    ChatModel,
    CompactionHooks,
    CompactionReport,
    ContextProvider,
    HookVerdict,
    MetricNames,
    Metrics,
    ModelReply,
    NoMetrics,
    PromptTooLongError,
    ProviderError,
    ProviderUnavailableError,
    Redactor,
    RequestOptions,
    Summarizer,
    SummarizerError,
    Summary,
    TokenCounter,
    TokenCounterError,
)
from abridged.application.redaction import DefaultRedactor, NoRedaction, SecretPattern
from abridged.application.service import PreparedRequest, Sessions
from abridged.domain.capabilities import ModelCapabilities, capabilities_for
from abridged.domain.context import Context
from abridged.domain.errors import (
    CompactionFailedError,
    ContextOverflowError,
    InvalidArgumentError,
    InvalidMessageError,
    InvalidMetadataError,
    InvalidRequestOptionsError,
    InvalidSettingsError,
    InvalidToolDefinitionError,
    MessageAlreadyAppendedError,
    MessageTooLargeError,
    MisplacedSystemMessageError,
    NotAnOverflowError,
    NothingToCompactError,
    ServiceClosedError,
    SessionDeletedError,
    SessionError,
    SessionExistsError,
    StoreError,
    TurnNotWithdrawableError,
    UnencodableContentError,
    UnknownSessionError,
)
from abridged.domain.messages import Message, Role
from abridged.domain.session import Session
from abridged.domain.settings import PRESETS, CompactionSettings, settings_from
from abridged.domain.usage import Usage

# A library logs and the application decides where logs go: without the host's own logging
# configuration, nothing under `abridged.*` is printed (not even warnings).
logging.getLogger("abridged").addHandler(logging.NullHandler())

__all__ = [
    "PRESETS",
    "AsyncChatModel",
    "AsyncSessions",
    "AsyncSummarizer",
    "BreakerSettings",
    "ChatModel",
    "CompactionFailedError",
    "CompactionHooks",
    "CompactionRecord",
    "CompactionReport",
    "CompactionSettings",
    "Context",
    "ContextOverflowError",
    "ContextProvider",
    "DefaultRedactor",
    "HookVerdict",
    "InvalidArgumentError",
    "InvalidMessageError",
    "InvalidMetadataError",
    "InvalidRequestOptionsError",
    "InvalidSettingsError",
    "InvalidToolDefinitionError",
    "Message",
    "MessageAlreadyAppendedError",
    "MessageTooLargeError",
    "MetricNames",
    "Metrics",
    "MisplacedSystemMessageError",
    "ModelCapabilities",
    "ModelReply",
    "NoMetrics",
    "NoRedaction",
    "NotAnOverflowError",
    "NothingToCompactError",
    "Notice",
    "PreparedRequest",
    "PromptTooLongError",
    "ProviderError",
    "ProviderUnavailableError",
    "Redactor",
    "RequestOptions",
    "Role",
    "SecretPattern",
    "ServiceClosedError",
    "Session",
    "SessionAudit",
    "SessionDeletedError",
    "SessionError",
    "SessionExistsError",
    "SessionInfo",
    "SessionPage",
    "SessionStats",
    "Sessions",
    "SessionsOptions",
    "StoreError",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "TokenBreakdown",
    "TokenCounter",
    "TokenCounterError",
    "TurnNotWithdrawableError",
    "UnencodableContentError",
    "UnknownSessionError",
    "Usage",
    "audit_session",
    "bootstrap",
    "bootstrap_async",
    "capabilities_for",
    "render_request",
    "settings_from",
]
