"""The `Summarizer` port through the API's own on-demand compaction (beta `compact-2026-09-04`).

The request carries the messages to summarize and `"compaction": {"type": "summarize"}`; the
reply is one signed `compaction` block (`stop_reason: "compaction"`), billed in
`usage.iterations`. The block is kept as the JSON the API returned it, byte for byte: later
requests send it first in `messages`, with a cache breakpoint on it, and the kept turns after
it verbatim (`abridged.domain.context.build_context`). Pages followed:
platform.claude.com/docs/en/build-with-claude/compaction and …/compaction-on-demand.

The API's compaction is used only where it can be: a model whose capabilities have
`native_compaction`, and a range that does not end in a `tool_use` whose results are kept (the
API refuses it; …/compaction-keep-recent-turns). A range that ends inside a turn, on tool
results or a prompt, is compacted: the kept turns then start with a reply, which the block
leads (`build_context`), unless the session shows thinking (a reply with thinking must
start with it). Anywhere else the `fallback` summarizer (one of abridged's own) writes
the summary.

On a model that binds thinking to its prefix, given the prefix as sent (`SentPrefix`), the
request is instead that prefix itself, byte for byte: the session's `system` and `tools`
and every message before the kept turns as requests sent them, thinking included. The
block then stands for all of it and the kept turns follow it with nothing between, so their
thinking stays valid (…/compaction-thinking-blocks); the facts ledger, which would otherwise
sit between, goes to the API as the compaction's `instructions` (`chain_refusal` says when
this cannot be done).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import anthropic

from abridged.adapters.anthropic.calls import ClientT, translated_errors
from abridged.adapters.anthropic.request import folded_system_messages, render_request
from abridged.application.async_ports import AsyncSummarizer
from abridged.application.ports import (
    MIN_SUMMARY_TOKENS,
    ProviderError,
    SentPrefix,
    Summarizer,
    SummarizerError,
    Summary,
)
from abridged.domain.capabilities import ModelCapabilities, capabilities_for
from abridged.domain.messages import (
    Message,
    RedactedThinkingBlock,
    Role,
    ThinkingBlock,
    WireBlock,
)

__all__ = [
    "COMPACTION_BETA",
    "ApiCompactionSummarizer",
    "AsyncApiCompactionSummarizer",
    "chain_refusal",
    "compaction_messages",
    "range_refusal",
]

COMPACTION_BETA = "compact-2026-09-04"
UNREADABLE = "the Anthropic API's compaction reply could not be read"
LEDGER_NOTE = (
    "Carry these facts into the summary word for word: they are the conversation's facts "
    "ledger, and no other copy of them follows the summary."
)


FallbackT = TypeVar("FallbackT", Summarizer, AsyncSummarizer)


class _CompactionRequests(Generic[ClientT, FallbackT]):
    """What both summarizers share: their client and fallback, when the API's compaction is
    available, the request and how its reply reads; only the sending differs."""

    def __init__(
        self,
        client: ClientT,
        *,
        fallback: FallbackT,
        model: str | None = None,
        capabilities: Mapping[str, ModelCapabilities] | None = None,
    ) -> None:
        self._client: ClientT = client
        self._fallback: FallbackT = fallback
        self._model = model
        self._capabilities = dict(capabilities or {})

    @property
    def name(self) -> str:
        return "anthropic-compaction"

    def available(self, model: str, messages: Sequence[Message]) -> str | None:
        """Why the API's compaction cannot summarize `messages` for `model`; None when it can."""
        if not capabilities_for(model, self._capabilities).native_compaction:
            return f"{model} has no compaction of its own"
        return range_refusal(messages)

    def _planned(
        self, messages: Sequence[Message], max_tokens: int, session_model: str | None
    ) -> str | None:
        """The model the API's compaction runs on; None when the fallback writes the summary."""
        if max_tokens < MIN_SUMMARY_TOKENS:
            raise SummarizerError(f"max_tokens {max_tokens} leaves no room for a summary")
        model = self._model or session_model
        if model is None:
            raise SummarizerError("the API's compaction needs a model")
        return None if self.available(model, messages) is not None else model

    def _planned_request(
        self,
        messages: Sequence[Message],
        max_tokens: int,
        instructions: str | None,
        session_model: str | None,
        sent: SentPrefix | None,
    ) -> tuple[dict[str, Any], str, int | None] | None:
        """The request, its model and the prefix revision it summarizes exactly (None when
        it does not); None when the fallback writes the summary."""
        chained = self._chained(max_tokens, instructions, session_model, sent)
        if chained is not None:
            return chained
        model = self._planned(messages, max_tokens, session_model)
        if model is None:
            return None
        return self._request(model, messages, max_tokens, instructions), model, None

    def _chained(
        self,
        max_tokens: int,
        instructions: str | None,
        session_model: str | None,
        sent: SentPrefix | None,
    ) -> tuple[dict[str, Any], str, int] | None:
        """The request over the exact prefix as sent (see the module), where it can be."""
        model = self._model or session_model
        if sent is None or model is None or max_tokens < MIN_SUMMARY_TOKENS:
            return None
        capabilities = capabilities_for(model, self._capabilities)
        if not capabilities.native_compaction or chain_refusal(sent, capabilities) is not None:
            return None
        body = render_request(
            sent.context, model=model, max_tokens=max_tokens, capabilities=capabilities
        )
        config: dict[str, Any] = {"type": "summarize"}
        ledger: tuple[str, ...] = sent.ledger
        focus = [instructions] if instructions and instructions.strip() else []
        if ledger:
            focus.append("\n\n".join([LEDGER_NOTE, *ledger]))
        if focus:
            config["instructions"] = "\n\n".join(focus)
        top = {key: body[key] for key in ("system", "tools") if key in body}
        request = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": body["messages"][: sent.kept_from],
            "compaction": config,
            "betas": [COMPACTION_BETA],
            "extra_body": top or None,
        }
        return request, model, sent.revision

    def _request(
        self, model: str, messages: Sequence[Message], max_tokens: int, instructions: str | None
    ) -> dict[str, Any]:
        """The keywords of `client.beta.messages.with_raw_response.create`."""
        config: dict[str, Any] = {"type": "summarize"}
        if instructions and instructions.strip():
            config["instructions"] = instructions
        tools = _tools_used(messages)
        return {
            "model": model,
            "max_tokens": max_tokens,
            "messages": compaction_messages(messages, capabilities_for(model, self._capabilities)),
            "compaction": config,
            "betas": [COMPACTION_BETA],
            "extra_body": {"tools": tools} if tools else None,
        }


class ApiCompactionSummarizer(_CompactionRequests[anthropic.Anthropic, Summarizer]):
    """Summaries the API writes itself, as signed `compaction` blocks, through `client`;
    `fallback` writes them where the API's compaction is not available. `model` defaults to
    the session's; `capabilities` are the host's rows (`Sessions.model_capabilities`)."""

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
        sent: SentPrefix | None = None,
    ) -> Summary:
        """The API's signed summary of `messages` (our fallback's where the API cannot write
        it); over the exact prefix `sent` where it can be (see the module); raises
        `SummarizerError`."""
        planned = self._planned_request(messages, max_tokens, instructions, session_model, sent)
        if planned is None:
            return self._fallback.summarize(
                messages,
                max_tokens=max_tokens,
                instructions=instructions,
                session_model=session_model,
            )
        request, model, revision = planned
        with _compaction_errors():
            raw = self._client.beta.messages.with_raw_response.create(**request)
            reply = raw.http_response.json()
        return _summary_of(reply, model, revision)


class AsyncApiCompactionSummarizer(_CompactionRequests[anthropic.AsyncAnthropic, AsyncSummarizer]):
    """`ApiCompactionSummarizer` on `AsyncAnthropic`, for `AsyncSessions`."""

    async def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
        sent: SentPrefix | None = None,
    ) -> Summary:
        """Awaits what `ApiCompactionSummarizer.summarize` asks."""
        planned = self._planned_request(messages, max_tokens, instructions, session_model, sent)
        if planned is None:
            return await self._fallback.summarize(
                messages,
                max_tokens=max_tokens,
                instructions=instructions,
                session_model=session_model,
            )
        request, model, revision = planned
        with _compaction_errors():
            raw = await self._client.beta.messages.with_raw_response.create(**request)
            reply = raw.http_response.json()
        return _summary_of(reply, model, revision)


@contextmanager
def _compaction_errors() -> Iterator[None]:
    """Around a compaction request: its failures (and a reply that cannot be read) become a
    `SummarizerError`."""
    try:
        with translated_errors(UNREADABLE):
            yield
    except ProviderError as error:
        raise SummarizerError(f"the API's compaction failed: {error}") from error


def range_refusal(messages: Sequence[Message]) -> str | None:
    """Why the API's compaction is not asked to summarize `messages` (whatever the model);
    None when it may be."""
    spoken = [m for m in messages if m.role is not Role.SYSTEM]
    if not spoken:
        return "nothing to summarize"
    last = spoken[-1]
    if last.role is Role.ASSISTANT and last.tool_uses:
        # Its results are kept: the API refuses a range that ends in an unanswered call
        # (a cut inside a turn is fine otherwise: each call goes with its results).
        return "the range ends in a tool call whose results are kept"
    thinking = any(
        isinstance(b, ThinkingBlock | RedactedThinkingBlock) for m in spoken for b in m.content
    )
    if last.role is not Role.ASSISTANT and thinking:
        # The kept turns would start with a reply that the block may have to lead, and a
        # reply with thinking must start with it.
        return "the range ends inside a turn of a session with thinking"
    return None


def chain_refusal(sent: SentPrefix, capabilities: ModelCapabilities) -> str | None:
    """Why the API's compaction cannot be asked over the exact prefix `sent` so that the kept
    turns' thinking stays valid (platform.claude.com/docs/en/build-with-claude/
    compaction-thinking-blocks); None when it can."""
    if not capabilities.prefix_bound_thinking:
        return "the model does not bind thinking to its prefix"
    messages = sent.context.messages
    summarized, kept = messages[: sent.kept_from], messages[sent.kept_from :]
    if not summarized or not kept:
        return "nothing to summarize, or nothing kept"
    if any(m.role is Role.SYSTEM for m in summarized):
        # A system message is an instruction: it is carried, never summarized away, and
        # carried it would sit between the block and the kept turns.
        return "a system message would be summarized"
    if kept[0].role is Role.SYSTEM or kept[0].role is summarized[-1].role:
        # The API would join it to the last summarized message.
        return "the first kept message has the role of the last summarized one"
    if summarized[-1].role is Role.ASSISTANT and summarized[-1].tool_uses:
        return "the range ends in a tool call whose results are kept"
    return None


def compaction_messages(
    messages: Sequence[Message], capabilities: ModelCapabilities
) -> list[dict[str, Any]]:
    """The wire messages of a compaction request: thinking left out (it is bound to the
    requests that produced it, not to this one), consecutive messages of one role joined,
    system messages folded for a model without them."""
    joined: list[dict[str, Any]] = []
    for message in messages:
        kept = [
            b.to_wire()
            for b in message.content
            if not isinstance(b, ThinkingBlock | RedactedThinkingBlock)
        ]
        if not kept:
            continue
        role = message.role.value
        if joined and joined[-1]["role"] == role and role != "system":
            joined[-1]["content"].extend(kept)
        else:
            joined.append({"role": role, "content": kept})
    if not capabilities.system_messages:
        joined = folded_system_messages(joined, capabilities.prefix_bound_thinking)
    return joined


def _tools_used(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Definitions for the tools the messages call: the API needs tools defined for
    tool_use and tool_result blocks, and a summary needs only their names."""
    names = sorted({u.name for m in messages for u in m.tool_uses})
    return [{"name": n, "input_schema": {"type": "object"}} for n in names]


def _summary_of(reply: Any, model: str, revision: int | None = None) -> Summary:
    if not isinstance(reply, Mapping) or reply.get("stop_reason") != "compaction":
        stop = reply.get("stop_reason") if isinstance(reply, Mapping) else None
        raise SummarizerError(f"the API's compaction stopped with {stop!r}, not 'compaction'")
    content = reply.get("content")
    if not isinstance(content, list) or len(content) != 1 or content[0].get("type") != "compaction":
        raise SummarizerError("the API's compaction reply is not one compaction block")
    block = content[0]
    text = block.get("content")
    if not isinstance(text, str) or not text.strip():
        raise SummarizerError("the API's compaction produced no summary (null content)")
    usage = reply.get("usage") or {}
    iterations = [i for i in usage.get("iterations") or () if i.get("type") == "compaction"]
    spent = iterations[0] if iterations else usage
    return Summary(
        text=text,
        model=str(reply.get("model") or model),
        input_tokens=int(spent.get("input_tokens") or 0),
        output_tokens=int(spent.get("output_tokens") or 0),
        block=WireBlock.of(block).json,
        iterations=tuple(
            json.dumps(i, separators=(",", ":")) for i in usage.get("iterations") or ()
        ),
        prefix_revision=revision,
    )
