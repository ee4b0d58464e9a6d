"""What the local fake Messages server does for today's API features, like the real API:
`role: "system"` messages (placement, and refused by models before Opus 4.8), on-demand
compaction (beta `compact-2026-09-04`) and the rules a `compaction` block must follow.

Error texts: "role 'system' is not supported on this model" is the API's; for compaction
the error codes (`error.details.error_code`) and their descriptions are those of the SDK's
`Compaction*Error` classes (anthropic 2.13). Like `anthropic_rules`, this module imports
nothing from the library it judges.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from typing import Any

from tests.support.anthropic_rules import takes_system_messages
from tests.support.thinking_binding import (
    CHAIN_PREFIX,
    compaction_chain,
    is_bound_model,
    summarized_prefix,
)

COMPACTION_BETA = "compact-2026-09-04"
_KEY = b"fake-compaction-signing-key"
NATIVE_COMPACTION_MODELS = (
    "claude-opus-4-6",
    "claude-opus-4-7",
    "claude-sonnet-4-6",
    "claude-opus-4-8",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-haiku-5",
    "claude-fable-5",
    "claude-mythos-5",
)


def sign(content: str) -> str:
    """The signature the fake API puts on a compaction block's content."""
    return hmac.new(_KEY, content.encode(), hashlib.sha256).hexdigest()


def chain_sign(content: str, prefix: str, system_and_tools: str) -> str:
    """The signature of a compaction block written on a model with preserved thinking: it
    records the digests of the exact prefix summarized, so that the thinking of the kept
    turns after it can be checked against that prefix (`thinking_binding`)."""
    mac = hmac.new(_KEY, f"{content}\n{prefix}\n{system_and_tools}".encode(), hashlib.sha256)
    return f"{CHAIN_PREFIX}{prefix}.{system_and_tools}.{mac.hexdigest()}"


def _verified(block: Mapping[str, Any]) -> str | None:
    """The error code for a compaction block whose signature does not verify; None when it
    does."""
    content, signature = str(block.get("content")), block.get("signature")
    chain = compaction_chain(block)
    if chain is not None:
        expected = chain_sign(content, *chain)
        return (
            None if hmac.compare_digest(str(signature), expected) else "compaction_content_mismatch"
        )
    if not isinstance(signature, str) or len(signature) != 64:
        return "compaction_signature_invalid"
    if not hmac.compare_digest(signature, sign(content)):
        return "compaction_content_mismatch"
    return None


def failure(status: int, kind: str, text: str, code: str | None = None) -> dict[str, Any]:
    """An error body; `code` goes in `error.details.error_code`, where the SDK reads it."""
    detail: dict[str, Any] = {"type": kind, "message": text}
    if code is not None:
        detail["details"] = {"error_code": code}
    return {"status": status, "body": {"type": "error", "error": detail}}


def refusal(body: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any] | None:
    """The 400 the real API answers `body` with for a misplaced system message or a
    compaction block that breaks its rules; None when it passes."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    problem = _system_message_problem(body.get("model"), messages)
    if problem is not None:
        return failure(400, "invalid_request_error", problem)
    return _compaction_block_problem(messages)


def _system_message_problem(model: object, messages: Sequence[Any]) -> str | None:
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") != "system":
            continue
        if not takes_system_messages(model):
            return "role 'system' is not supported on this model"
        before = messages[i - 1].get("role") if i > 0 else None
        after = messages[i + 1].get("role") if i + 1 < len(messages) else None
        if i == 0:
            return f"messages.{i}: a system message cannot be the first message"
        if before not in ("user", "system"):
            return f"messages.{i}: a system message must follow a user turn"
        if after not in (None, "assistant", "system"):
            return f"messages.{i}: a system message must be followed by an assistant turn"
    return None


def _compaction_blocks(messages: Sequence[Any]) -> list[tuple[int, int, Mapping[str, Any]]]:
    found = []
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if isinstance(block, Mapping) and block.get("type") == "compaction":
                found.append((i, j, block))
    return found


def _compaction_block_problem(messages: Sequence[Any]) -> dict[str, Any] | None:
    blocks = _compaction_blocks(messages)
    with_content = [b for b in blocks if b[2].get("content") is not None]
    if len(with_content) > 1:
        return failure(
            400,
            "invalid_request_error",
            "`messages` holds more than one `compaction` block with content. "
            "Send only the block the conversation returned last.",
            "compaction_block_ambiguous",
        )
    for i, j, block in blocks:
        if (i, j) != (0, 0) or messages[i].get("role") == "system":
            return failure(
                400,
                "invalid_request_error",
                "The `compaction` block is not the first block of the conversation, or is "
                "in a `system` message.",
                "compaction_block_misplaced",
            )
        if block.get("content") is None:
            continue
        code = _verified(block)
        if code == "compaction_signature_invalid":
            return failure(
                400,
                "invalid_request_error",
                "The `compaction` block's `signature` does not verify.",
                code,
            )
        if code is not None:
            return failure(
                400,
                "invalid_request_error",
                "The `compaction` block's `content` differs from the text its `signature` "
                "recorded.",
                code,
            )
    return None


def compaction_reply(
    body: Mapping[str, Any], headers: Mapping[str, str], summary: str
) -> dict[str, Any]:
    """The answer to an on-demand compaction request (`"compaction": {"type":
    "summarize"}`): one signed `compaction` block, `stop_reason: "compaction"`, billed in
    `usage.iterations`; or the error the real API gives."""
    betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",")}
    if COMPACTION_BETA not in betas:
        return failure(
            400, "invalid_request_error", f"compaction: requires the beta {COMPACTION_BETA}"
        )
    if "context_management" in body:
        return failure(
            400, "invalid_request_error", "compaction: cannot be combined with context_management"
        )
    model = body.get("model")
    if not (isinstance(model, str) and model.startswith(NATIVE_COMPACTION_MODELS)):
        return failure(400, "invalid_request_error", f"compaction is not supported on {model}")
    messages = [m for m in body["messages"] if isinstance(m, Mapping)]
    spoken = [m for m in messages if m.get("role") in ("user", "assistant")]
    if not spoken:
        return failure(
            400,
            "invalid_request_error",
            "`messages` holds no `user` or `assistant` content to summarize or adopt.",
            "compaction_nothing_to_summarize",
        )
    last = spoken[-1]
    content = last.get("content")
    blocks = content if isinstance(content, list) else []
    if last.get("role") == "assistant" and any(
        isinstance(b, Mapping) and b.get("type") == "tool_use" for b in blocks
    ):
        return failure(
            400,
            "invalid_request_error",
            "The compaction request ends on an `assistant` turn that is not finished.",
            "compaction_incomplete_turn",
        )
    config = body.get("compaction")
    focus = config.get("instructions") if isinstance(config, Mapping) else None
    text = summary if not focus else f"{summary} (Focus: {focus})"
    signature = sign(text)
    if is_bound_model(model):
        # Written on a model with preserved thinking: the block records the exact prefix it
        # summarized, which the thinking of the kept turns was produced under.
        signature = chain_sign(text, *summarized_prefix(body))
    words = sum(len(str(m.get("content")).split()) for m in messages)
    iteration = {
        "type": "compaction",
        "input_tokens": words,
        "output_tokens": len(text.split()),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    return {
        "status": 200,
        "body": {
            "type": "message",
            "role": "assistant",
            "content": [
                {
                    "type": "compaction",
                    "content": text,
                    "signature": signature,
                    "encrypted_content": None,
                }
            ],
            "stop_reason": "compaction",
            "stop_sequence": None,
            "usage": {
                "input_tokens": words,
                "output_tokens": len(text.split()),
                "iterations": [iteration],
            },
        },
    }
