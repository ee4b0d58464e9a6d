"""Secrets found in text and replaced by a placeholder that names their kind.

Pure pattern matching: the application applies it (through its `Redactor` port) to whatever
it derives from a session's messages before that text leaves the event store: the
summarizer's input, the facts ledger, summaries, reports and printed histories. A redacted
value reads `[redacted <kind>]`, the same placeholder wherever the same kind of secret was, so
a redacted text stays deterministic (the ledger merges facts by their text) and says what was
there without saying what it was.

The default patterns are deliberately narrow (a format a secret has, or a key name that
announces one): a false positive costs a word of a summary, a false negative a secret copied
forward with every later request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import cast

import attrs

from abridged.domain import secret_pattern
from abridged.domain.messages import (
    JSON,
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)
from abridged.domain.secret_formats import SECRET_FORMATS
from abridged.domain.secret_names import SECRET_NAMES
from abridged.domain.secret_pattern import SecretPattern, aligned_lower, placeholder

__all__ = [
    "DEFAULT_PATTERNS",
    "SecretPattern",
    "narrow_patterns",
    "placeholder",
    "redact_message",
    "redact_message_with",
    "redact_text",
]


DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (*SECRET_FORMATS, *SECRET_NAMES)
"""What `DefaultRedactor` finds, in the order it looks: secrets by their own format first
(`abridged.domain.secret_formats`: private key blocks, also cut before their end or base64
encoded; Anthropic, OpenAI, AWS, GitHub, GitLab, Slack, Google and Stripe keys and the
prefixed tokens of package registries, model hubs and other services; JSON web tokens;
bearer, token and basic credentials and any `Authorization` header's; the password of a URL;
a signed URL's signature), then secrets by what names them
(`abridged.domain.secret_names`: the value of a `.env` / config line, a JSON or YAML key, an
environment or header list's name/value pair, a two-item tuple, a shell assignment, a
command-line flag, a command's password option, a sentence, a `.netrc` or `.pgpass` line
naming a password, secret, token or key; cookies)."""


def redact_text(text: str, patterns: Sequence[SecretPattern]) -> str:
    """`text` with every secret the `patterns` find replaced by its kind's placeholder."""
    lowered = text.lower()
    # Patterns share hints (`pass`, `token`, `key`): each is looked for once per text.
    present: dict[str, bool] = {}
    # The text's `aligned_lower`, read again only when a pattern changed the text.
    aligned: tuple[str, str | None] | None = (text, lowered) if text.isascii() else None
    searched_from = secret_pattern.STARTS_FROM
    for pattern in patterns:
        if not pattern.hints or any(
            present[hint] if hint in present else present.setdefault(hint, hint in lowered)
            for hint in pattern.hints
        ):
            if not pattern.starts or len(text) < searched_from:
                text = pattern.by_expression(text)
                continue
            if aligned is None or aligned[0] is not text:
                aligned = (text, aligned_lower(text))
            text = pattern.redact_lowered(text, aligned[1])
    return text


NARROWED_FROM = 4
"""How many strings a message holds (a tool input's value counted twice: with its key and
alone) before its patterns are narrowed. A message of one text gains nothing and pays for
looking for every hint twice (the shared transcripts' redact a fifth slower narrowed); from
two to three it is even, from four on narrowed is faster."""


def narrow_patterns(
    patterns: Sequence[SecretPattern], texts: Iterable[str]
) -> tuple[SecretPattern, ...]:
    """The `patterns` that may find a secret in one of `texts`, in their order: each text
    redacted with these reads as it does redacted with all of them (`redact_text`).

    A pattern is left out when none of the texts holds one of its hints (lowercased, as
    `redact_text` looks) or, when it declares literals, none of the texts nor any of the
    patterns' placeholders holds one of them (a literal may appear only once an earlier
    pattern wrote its placeholder: a host's kind may hold one). Looked for once in all the
    texts joined: a match across two of them only keeps a pattern."""
    texts = tuple(texts)
    lowered = "\n".join(text.lower() for text in texts)
    joined = "\n".join(texts)
    marks: str | None = None
    hinted: dict[str, bool] = {}
    found: dict[str, bool] = {}
    kept = []
    for pattern in patterns:
        if pattern.hints and not any(
            hinted[hint] if hint in hinted else hinted.setdefault(hint, hint in lowered)
            for hint in pattern.hints
        ):
            continue
        if pattern.literals and not any(
            found.setdefault(literal, literal in joined) for literal in pattern.literals
        ):
            if marks is None:
                marks = "\n".join(placeholder(p.kind) for p in patterns)
            if not any(literal in marks for literal in pattern.literals):
                continue
        kept.append(pattern)
    return tuple(kept)


def redact_message_with(message: Message, patterns: Sequence[SecretPattern]) -> Message:
    """`redact_message(message, lambda text: redact_text(text, patterns))`, the same message
    made faster where it holds many strings (a tool's input of thousands of values): the
    patterns are first narrowed to those that may match one of them (`narrow_patterns`)."""
    strings: list[str] = []

    def gather(text: str) -> str:
        strings.append(text)
        return text

    # Nothing redacted, each JSON value is read both with its key and alone: every string
    # the redacting pass below reads, and perhaps more.
    redact_message(message, gather, keys=True)
    if len(strings) < NARROWED_FROM:
        return redact_message(message, lambda text: redact_text(text, patterns), keys=True)
    narrowed = narrow_patterns(patterns, strings)
    if not narrowed:
        return message
    return redact_message(message, lambda text: redact_text(text, narrowed), keys=True)


@attrs.frozen
class _WithKeys:
    """A redaction that reads a JSON object's keys too."""

    redact: Callable[[str], str]

    def __call__(self, text: str) -> str:
        return self.redact(text)


def redact_message(
    message: Message, redact: Callable[[str], str], *, keys: bool = False
) -> Message:
    """`message` with `redact` applied to every text it holds: text, thinking text, tool
    inputs' strings (with `keys`, their keys too: `{"ghp_…": "alice"}`), tool results, an
    image's URL, and the JSON of blocks kept as they arrived. The same object when nothing
    changed. (Only for text derived from the message: a thinking block whose text changed
    no longer matches its signature.)"""
    if keys:
        redact = _WithKeys(redact)
    blocks = tuple(_redact_extra(_redact_block(block, redact), redact) for block in message.content)
    if all(a is b for a, b in zip(blocks, message.content, strict=True)):
        return message
    return attrs.evolve(message, content=blocks)


def _redact_block(block: Block, redact: Callable[[str], str]) -> Block:
    if isinstance(block, TextBlock):
        text = redact(block.text)
        # A citation quotes the document it cites (`cited_text`): text the block holds too.
        cited = block.citations
        if cited is not None:
            cited = tuple(_redact_json(list(cited), redact))
        if text == block.text and cited == block.citations:
            return block
        return attrs.evolve(block, text=text, citations=cited)
    if isinstance(block, ThinkingBlock):
        text = redact(block.thinking)
        return block if text == block.thinking else attrs.evolve(block, thinking=text)
    if isinstance(block, ToolUseBlock):
        value = _redact_json(dict(block.input), redact)
        return block if value == block.input else attrs.evolve(block, input=value)
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str):
            text = redact(block.content)
            return block if text == block.content else attrs.evolve(block, content=text)
        parts = tuple(cast(TextBlock | WireBlock, _redact_block(p, redact)) for p in block.content)
        if all(a is b for a, b in zip(parts, block.content, strict=True)):
            return block
        return attrs.evolve(block, content=parts)
    if isinstance(block, ImageBlock) and block.url:
        # A presigned URL's signature, a URL's password: an image by URL names it.
        url = redact(block.url)
        return block if url == block.url else attrs.evolve(block, url=url)
    if isinstance(block, WireBlock):
        original = json.loads(block.json)
        value = _redact_json(original, redact)
        if value == original:
            return block
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return attrs.evolve(block, json=encoded)
    return block


def _redact_extra(block: Block, redact: Callable[[str], str]) -> Block:
    """The fields a block kept unmodelled are text it holds too."""
    if isinstance(block, WireBlock) or not block.extra:
        return block
    original = json.loads(block.extra)
    value = _redact_json(original, redact)
    if value == original:
        return block
    return attrs.evolve(block, extra=json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _redact_json(value: JSON, redact: Callable[[str], str]) -> JSON:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_json(v, redact) for v in value]
    if isinstance(value, Mapping):
        named = _pair_name(value)
        redacted: dict[str, JSON] = {}
        for k, v in value.items():
            item = _redact_item(named if named is not None and k == "value" else k, v, redact)
            # A key is text too (`{"ghp_…": "alice"}`, a map of tokens to their owners), read
            # by the default patterns (a host's redactor is given values only); two keys that
            # read the same once redacted are both kept.
            key = _unique(redact(k), k, redacted, value) if isinstance(redact, _WithKeys) else k
            redacted[key] = item
        return redacted
    return value


def _unique(key: str, original: str, taken: Mapping[str, JSON], keys: Mapping[str, JSON]) -> str:
    """A redacted `key`, numbered when another key already reads the same: two secrets whose
    placeholders are alike keep a value each."""
    if key == original:
        return key
    n = 1
    unique = key
    while unique in taken or unique in keys:
        n += 1
        unique = f"{key} ({n})"
    return unique


def _pair_name(pair: Mapping[str, JSON]) -> str | None:
    """The name a `{"name": …, "value": …}` object gives its value (an environment or a header
    list in a tool's input: `{"name": "Authorization", "value": "Bearer …"}`)."""
    name = pair.get("name", pair.get("key"))
    if isinstance(name, str) and name.strip() and isinstance(pair.get("value"), str):
        return name
    return None


def _redact_item(key: str, value: JSON, redact: Callable[[str], str]) -> JSON:
    """A value of a JSON object, redacted as `key=value` reads: a tool input's
    `{"password": "hunter2"}` names its secret by its key, as `password=hunter2` does in text;
    so does each item of a list under the key (`{"api_key": ["…"]}`) and a number
    (`{"pin_password": 482913}`, which becomes the placeholder)."""
    if isinstance(value, list):
        return [_redact_item(key, v, redact) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        keyed = redact(f"{key}={value}")
        if keyed.startswith(f"{key}=") and keyed != f"{key}={value}":
            return keyed[len(key) + 1 :]
        return value
    if not isinstance(value, str):
        return _redact_json(value, redact)
    keyed = redact(f"{key}={value}")
    if keyed.startswith(f"{key}=") and keyed != f"{key}={value}":
        return keyed[len(key) + 1 :]
    return redact(value)
