"""Preserved thinking as the API checks it: each thinking block is bound to its prefix.

On today's models (Claude Fable 5.x, Mythos 5.x, Opus/Sonnet/Haiku 5.5) a `thinking` or
`redacted_thinking` block sent back passes only while its prefix — the top-level `system`,
`tools`, every earlier message and the blocks before it in its own message — is what it was
in the request that produced it (platform.claude.com/docs/en/build-with-claude/
preserved-thinking/prefix-checks). A block left out between others, or moved, fails too.

The real signature is opaque. This fake's signature carries the digest of the prefix the
block was produced under (`sign_reply`), so a later request is checked against the request
that produced each block, with no state: `binding_failures` recomputes every block's prefix
digest and compares. Blocks signed otherwise (recorded transcripts, other tests) are not
checked. `cache_control` is left out of the comparison, as it is of the prompt cache's key:
breakpoints move from request to request in every integration.

This module is independent of abridged's own bookkeeping (`prefix_revision`): it is the
separate checker the library is tested against.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

MAPPING: Final = (dict, Mapping)
"""For `isinstance`: a dict, which every body is, is told at once, without the `Mapping`
ABC's slower check (the checks of a run make tens of millions)."""

BOUND_MODELS = (
    "claude-fable-5",
    "claude-mythos-5",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)
"""Model-name prefixes whose requests get the prefix check (the prefix-checks page's list)."""

SIGNATURE_PREFIX = "bound-v1."
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
PREFIX_MISMATCH = (
    "Invalid `signature` in `thinking` block. The block is bound to a different conversation. "
    'Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)
"""The text of the API's 400 for a failed prefix check, after `messages.{i}.content.{j}: `
(build-with-claude/thinking-troubleshooting, "A 400 error says a thinking block signature is
invalid"; the API may add a sentence naming what changed, not to be matched on)."""


def is_bound_model(model: object) -> bool:
    return isinstance(model, str) and model.startswith(BOUND_MODELS)


def _canonical(value: Any) -> Any:
    """The value compared: no `cache_control`, no null fields, a string as a text block."""
    if isinstance(value, MAPPING):
        return {
            key: _canonical(item)
            for key, item in value.items()
            if key != "cache_control" and item is not None
        }
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    return value


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list | tuple) else []


def _piece(value: Any) -> bytes:
    text = _dumped(value)
    if '"cache_control"' in text or "null" in text:
        # Only then can `_canonical` change anything (a mention in a string costs the slow
        # way, not a wrong digest); the walk over every message is most of a replay's time.
        text = _dumped(_canonical(value))
    return text.encode() + b"\n"


def _dumped(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _chained(state: str, piece: bytes) -> str:
    return hashlib.sha256(state.encode() + piece).hexdigest()


CHAIN_PREFIX = "chain-v1."
"""How the fake signs a compaction block written on a model with preserved thinking:
`chain-v1.<prefix digest>.<system and tools digest>.<mac>`, the digests of the exact
prefix it summarized (`api_features.compaction_reply`)."""
_BROKEN = "prefix-changed"


def compaction_chain(block: Any) -> tuple[str, str] | None:
    """The (prefix, system and tools) digests a chained compaction block records; None for
    any other block (its mac is checked by `api_features`)."""
    if not isinstance(block, MAPPING) or block.get("type") != "compaction":
        return None
    signature = block.get("signature")
    if not isinstance(signature, str) or not signature.startswith(CHAIN_PREFIX):
        return None
    parts = signature[len(CHAIN_PREFIX) :].split(".")
    return (parts[0], parts[1]) if len(parts) == 3 else None


class _Prefix:
    """A chain of digests over system, tools and whole messages; `digest` adds the blocks of
    a message in progress without consuming them. A chain can start from the digest a
    compaction block records (`walk`): the block stands for the exact prefix it summarized,
    as the API's check accepts (build-with-claude/compaction-thinking-blocks)."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        system_and_tools = _piece(_blocks(body.get("system") or [])) + _piece(
            body.get("tools") or []
        )
        self.head = hashlib.sha256(system_and_tools).hexdigest()
        self.state = self.head

    def add(self, message: Any) -> None:
        if isinstance(message, MAPPING):
            content = _blocks(message.get("content"))
            self.state = _chained(
                self.state, _piece({"role": message.get("role"), "content": content})
            )

    def digest(self, role: str, blocks: Sequence[Any]) -> str:
        return _chained(self.state, _piece({"role": role, "content": list(blocks)}))

    def walk(self, messages: Any) -> Iterator[tuple[int, Any, list[Any], int]]:
        """Each message with the blocks its thinking is checked among and the index of the
        first of them; the chain moves past each message after it is yielded. A leading
        chained compaction block is not part of the chain: it restarts it from the digest
        it records (when system and tools are those it was written under)."""
        for i, message in enumerate(messages if isinstance(messages, list) else []):
            blocks = _blocks(message.get("content")) if isinstance(message, MAPPING) else []
            chain = compaction_chain(blocks[0]) if i == 0 and blocks else None
            if chain is None:
                yield i, message, blocks, 0
                self.add(message)
                continue
            prefix, system_and_tools = chain
            self.state = prefix if system_and_tools == self.head else _BROKEN
            yield i, message, blocks[1:], 1
            if len(blocks) > 1:
                self.add({**message, "content": blocks[1:]})

    def summarized(self, messages: Any) -> tuple[str, str]:
        """The digests a compaction of `messages` records: the whole prefix's, and the
        system and tools' it was written under."""
        for _ in self.walk(messages):
            pass
        return self.state, self.head


def _signature_field(block: Mapping[str, Any]) -> str:
    return "signature" if block.get("type") == "thinking" else "data"


def sign_reply(body: Mapping[str, Any], content: Sequence[Mapping[str, Any]]) -> list[Any]:
    """`content` of a reply to `body`, with each thinking block signed over its prefix: the
    request's system, tools and messages, and the reply's blocks before it."""
    signed: list[Any] = []
    prefix = _Prefix(body)
    walked = _last_walk
    if walked is not None and all(a is b for a, b in zip(walked[:3], _parts(body), strict=True)):
        # The check of this very request walked the same objects: a long replay signs every
        # reply, and walking its whole prefix again was a third of its time. (Should a caller
        # change a body between the two, the signature names a prefix no request has: a
        # failure the next check reports, never one it misses.)
        prefix.state = walked[3]
    else:
        for _ in prefix.walk(body.get("messages")):
            pass
    for block in content:
        if isinstance(block, MAPPING) and block.get("type") in THINKING_TYPES:
            digest = prefix.digest("assistant", signed)
            signed.append({**block, _signature_field(block): SIGNATURE_PREFIX + digest})
        else:
            signed.append(block)
    return signed


def summarized_prefix(body: Mapping[str, Any]) -> tuple[str, str]:
    """The digests a compaction of `body`'s messages records (`_Prefix.summarized`)."""
    return _Prefix(body).summarized(body.get("messages"))


def binding_failures(body: Mapping[str, Any]) -> list[tuple[int, int]]:
    """(message index, block index) of every thinking block of `body` whose prefix is not
    the one it was produced under, with every bound thinking block after the first failure
    (the API invalidates those too). Empty when every checked block passes."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    failures: list[tuple[int, int]] = []
    prefix = _Prefix(body)
    for i, message, blocks, offset in prefix.walk(messages):
        if not isinstance(message, MAPPING) or message.get("role") != "assistant":
            continue
        for j, block in enumerate(blocks):
            if not isinstance(block, MAPPING) or block.get("type") not in THINKING_TYPES:
                continue
            signature = block.get(_signature_field(block))
            if not isinstance(signature, str) or not signature.startswith(SIGNATURE_PREFIX):
                continue
            expected = SIGNATURE_PREFIX + prefix.digest("assistant", blocks[:j])
            if failures or signature != expected:
                failures.append((i, j + offset))
    global _last_walk  # noqa: PLW0603 - a memo of the last walk, for `sign_reply`
    _last_walk = (*_parts(body), prefix.state)
    return failures


def _parts(body: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return body.get("messages"), body.get("system"), body.get("tools")


_last_walk: tuple[Any, Any, Any, str] | None = None
"""The messages, system and tools objects `binding_failures` last walked, and the chain's
state after them (what `sign_reply` needs of the same request)."""


def without_blocks(body: Mapping[str, Any], blocks: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """`body` with the given thinking blocks removed (what `drop_block` sends on)."""
    dropped = set(blocks)
    messages = []
    for i, message in enumerate(body.get("messages") or []):
        if isinstance(message, MAPPING) and any(m == i for m, _ in dropped):
            blocks = _blocks(message.get("content"))
            kept = [b for j, b in enumerate(blocks) if (i, j) not in dropped]
            messages.append({**message, "content": kept})
        else:
            messages.append(message)
    return {**body, "messages": messages}


def drop_requested(body: Mapping[str, Any]) -> bool:
    """Whether the request asks the API to drop a block that fails the check rather than
    refuse the request (`thinking.block_binding.prefix_mismatch_behavior`)."""
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, MAPPING) else None
    return isinstance(binding, MAPPING) and binding.get("prefix_mismatch_behavior") == "drop_block"
