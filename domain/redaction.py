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
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import cast

import attrs

from abridged.domain.messages import (
    JSON,
    Block,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    WireBlock,
)

__all__ = [
    "DEFAULT_PATTERNS",
    "SecretPattern",
    "placeholder",
    "redact_message",
    "redact_text",
]


def placeholder(kind: str) -> str:
    """What a secret of `kind` is replaced by: `[redacted <kind>]`."""
    return f"[redacted {kind}]"


def _as_tuple(values: Iterable[str]) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(values)


@attrs.frozen
class SecretPattern:
    """A kind of secret and the regular expression that finds it.

    `group` names the part of a match that is the secret (0: all of it), so that a key name
    or a URL's user stays readable: `DB_PASSWORD=[redacted password]`."""

    kind: str
    pattern: str
    group: int = 0
    hints: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple)
    """Lowercase strings one of which every match contains: a text holding none of them is
    not searched (a regular expression tried at every position of a long tool output costs
    more than looking for a word). Empty: always searched."""
    compiled: re.Pattern[str] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.kind.strip() or any(c in self.kind for c in "[]\n"):
            raise ValueError(f"a secret kind is a short name without brackets, got {self.kind!r}")
        compiled = re.compile(self.pattern)
        if not 0 <= self.group <= compiled.groups:
            raise ValueError(f"pattern {self.pattern!r} has no group {self.group}")
        if any(h != h.lower() or not h for h in self.hints):
            raise ValueError(f"hints are non-empty lowercase strings, got {self.hints!r}")
        object.__setattr__(self, "compiled", compiled)

    def may_match(self, lowered: str) -> bool:
        """Whether a text (given lowercased) may hold a match, by the hints."""
        return not self.hints or any(hint in lowered for hint in self.hints)

    def redact(self, text: str) -> str:
        """`text` with every match's secret part replaced by the placeholder."""
        mark = placeholder(self.kind)
        if self.group == 0:
            return self.compiled.sub(mark, text)

        def replace(match: re.Match[str]) -> str:
            start, end = match.span(self.group)
            if start < 0:
                return match.group(0)
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + mark + whole[end - offset :]

        return self.compiled.sub(replace, text)


# A value that is already a placeholder is never redacted again.
_VALUE = r"(?!\[redacted )([^\s\"'`,;]{3,})"
_SECRET_NAME = r"[A-Z0-9_]*(?:SECRET|TOKEN(?!S)|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|CREDENTIALS?)"
# A name (of a variable, a JSON or YAML key, a shell assignment) that ends in a word naming a
# secret, quoted or not: `"refresh_token": "…"`, `cd app && PGPASSWORD=… psql`. Ending in
# the word, not only holding it: `token_count = 1234` names no secret. (Matched from the word
# on, whatever comes before it: a pattern that starts with the name would be tried at every
# position of a long output.)
_SECRET_WORD = r"(?i:secret|token|api[_-]?key|private[_-]?key|access[_-]?key|credentials?)"
_SECRET_NAMED = _SECRET_WORD + r"(?![A-Za-z0-9_])"
# A bare `pass` is more often a count of passed tests (`PASS: 12`) than a key name.
_ENV_NAME = (
    r"[A-Za-z0-9_.\-]*(?:(?i:password|passwd)|(?!(?i:tokens))" + _SECRET_WORD + r")[A-Za-z0-9_.\-]*"
)
"""A variable's name that names a secret (`DB_PASSWORD`, `github_token`; not `MAX_TOKENS`)."""
_PASSWORD_NAMED = r"(?i:password|passwd|passphrase|pwd|(?<=[A-Za-z0-9][_.\-])pass)(?![A-Za-z0-9_])"

DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        hints=("private key",),
    ),
    SecretPattern("anthropic-api-key", r"\bsk-ant-[A-Za-z0-9_\-]{16,}", hints=("sk-ant-",)),
    SecretPattern("openai-api-key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{32,}", hints=("sk-",)),
    SecretPattern(
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|AROA|APKA)[A-Z0-9]{16}\b",
        hints=("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "aroa", "apka"),
    ),
    SecretPattern(
        "aws-secret-key",
        r"(?i)\baws_?secret(?:_?access)?_?key\b[\"']?\s*[:=]\s*[\"']?"
        r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        1,
        hints=("aws",),
    ),
    SecretPattern(
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretPattern("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}", hints=("glpat-",)),
    SecretPattern("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", hints=("xox",)),
    SecretPattern("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", hints=("aiza",)),
    SecretPattern(
        "stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", hints=("_live_", "_test_")
    ),
    SecretPattern(
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        hints=("eyj",),
    ),
    SecretPattern(
        "bearer-token",
        r"(?i)\b(?:bearer|token|basic)\s+(?!\[redacted )([A-Za-z0-9\-._~+/]{16,}=*)",
        1,
        hints=("bearer", "token", "basic"),
    ),
    SecretPattern(
        "url-password",
        # To the last `@` before the host: a password written with an unescaped `@` in it.
        r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@\"'<>]+:([^\s/\"'<>]+)@",
        1,
        hints=("://",),
    ),
    SecretPattern(
        "password",
        r"(?:^|(?<=\s))(?:-u|--user)\s*[\"']?[^\s:\"'@]+:(?![0-9]+\b|\[redacted )([^\s\"'@]{3,})",
        1,
        hints=("-u", "--user"),
    ),
    SecretPattern(
        "password",
        r"(?m)^\s*(?:export\s+)?(?:[A-Z0-9_]*(?:PASSWORD|PASSWD|PASS|PWD)[A-Z0-9_]*"
        r"|[a-z0-9_]*(?:password|passwd|pwd)[a-z0-9_]*)\s*[=:]\s*[\"']?" + _VALUE,
        1,
        hints=("pass", "pwd"),
    ),
    SecretPattern(
        "secret",
        r"(?m)^\s*(?:export\s+)?" + _SECRET_NAME + r"[A-Z0-9_]*\s*[=:]\s*[\"']?" + _VALUE,
        1,
        hints=("secret", "token", "key", "credential"),
    ),
    SecretPattern(
        "password",
        _PASSWORD_NAMED + r"[\"']?\s*[:=]\s*[\"']?" + _VALUE,
        1,
        hints=("pass", "pwd"),
    ),
    SecretPattern(
        "secret",
        _SECRET_NAMED + r"[\"']?\s*[:=]\s*[\"']?" + _VALUE,
        1,
        hints=("secret", "token", "key", "credential"),
    ),
    SecretPattern(
        "password",
        r"(?:^|(?<=\s))--?(?i:password|passwd|passphrase)(?:=|\s+)[\"']?" + _VALUE,
        1,
        hints=("-pass",),
    ),
    SecretPattern(
        "secret",
        r"(?:^|(?<=\s))--?(?i:[a-z]+-)?" + _SECRET_WORD + r"(?:=|\s+)[\"']?" + _VALUE,
        1,
        hints=("-secret", "-token", "-api", "-private", "-access", "-credential"),
    ),
    SecretPattern(
        "password",
        r"(?i)\b(?:password|passwd|passphrase)\b[\"']?\s*(?:[:=]|\bis\b)\s*[\"']?" + _VALUE,
        1,
        hints=("passw", "passphrase"),
    ),
    SecretPattern(
        "secret",
        r"(?i)\b(?:api[_-]?key|secret[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token)"
        r"\b[\"']?\s*[:=]\s*[\"']?" + _VALUE,
        1,
        hints=("key", "secret", "token"),
    ),
    SecretPattern(
        "secret",
        # An environment list's pair, in JSON or YAML: `{"name": "DB_TOKEN", "value": "…"}`.
        r'"name"\s*:\s*"' + _ENV_NAME + r'"\s*,\s*"value"\s*:\s*"(?!\[redacted )([^"]{3,})"',
        1,
        hints=('"value"',),
    ),
    SecretPattern(
        "secret",
        r"(?m)^[ \t]*-?[ \t]*name:[ \t]*[\"']?"
        + _ENV_NAME
        + r"[\"']?[ \t]*\n[ \t]*value:[ \t]*[\"']?"
        + _VALUE,
        1,
        hints=("value:",),
    ),
    SecretPattern(
        "cookie",
        r"(?i)\b(?:set-)?cookie[ \t]*:[ \t]*(?!\[redacted )([^\s\"'][^\r\n\"']{2,})",
        1,
        hints=("cookie",),
    ),
    SecretPattern(
        "cookie",
        r"(?:^|(?<=\s))(?:-b|--cookie)\s+[\"']?(?!\[redacted )([^\s\"']*=[^\s\"']{3,})",
        1,
        # `-b` then white space: a bare "-b" is in every "web-based" and "re-build".
        hints=("-b ", "-b\t", "-b\n", "-b\r", "-b\x0b", "-b\x0c", "--cookie"),
    ),
    SecretPattern(
        "password",
        # `mysql -pSECRET` (`-p` alone, or followed by a space, asks for it instead).
        r"\bmysql(?:dump|admin|import|show|check)?\b[^\n]*?(?<=\s)-p(?!\[redacted )([^\s\"']{3,})",
        1,
        hints=("mysql",),
    ),
)
"""What `DefaultRedactor` finds, in the order it looks: private key blocks (also a block cut
before its end), Anthropic, OpenAI, GitHub, GitLab, Slack, Google and Stripe keys, AWS access
keys and secret keys, JSON web tokens, bearer / token / basic credentials, the password of a
URL or of `curl -u user:password` or `mysql -pPASSWORD`, the value of a `.env` / config line,
a JSON or YAML key, an environment list's name/value pair, a shell assignment, a command-line
flag or a phrase naming a password, secret, token or API key, and cookies (a `Cookie:` or
`Set-Cookie:` header's value, `curl -b name=value`)."""


def redact_text(text: str, patterns: Sequence[SecretPattern]) -> str:
    """`text` with every secret the `patterns` find replaced by its kind's placeholder."""
    lowered = text.lower()
    for pattern in patterns:
        if pattern.may_match(lowered):
            text = pattern.redact(text)
    return text


def redact_message(message: Message, redact: Callable[[str], str]) -> Message:
    """`message` with `redact` applied to every text it holds: text, thinking text, tool
    inputs' strings, tool results, and the JSON of blocks kept as they arrived. The same
    object when nothing changed. (Only for text derived from the message: a thinking block
    whose text changed no longer matches its signature.)"""
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
        return {k: _redact_item(k, v, redact) for k, v in value.items()}
    return value


def _redact_item(key: str, value: JSON, redact: Callable[[str], str]) -> JSON:
    """A value of a JSON object, redacted as `key=value` reads: a tool input's
    `{"password": "hunter2"}` names its secret by its key, as `password=hunter2` does in text."""
    if not isinstance(value, str):
        return _redact_json(value, redact)
    keyed = redact(f"{key}={value}")
    if keyed.startswith(f"{key}=") and keyed != f"{key}={value}":
        return keyed[len(key) + 1 :]
    return redact(value)
