"""How `abridged serve` is configured: flags, or the environment of each worker process."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from abridged.domain.settings import CompactionSettings, settings_from

DEFAULT_UPSTREAM = "https://api.anthropic.com"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
DEFAULT_UPSTREAM_TIMEOUT = 600.0
"""Seconds the upstream may take to answer, and then to send each part of its answer: a
per-read bound, not a deadline for the whole reply."""
DEFAULT_CLIENT_TIMEOUT = 120.0
"""Seconds a client may take to send a request's body, and to take each part of a stream."""
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""The Messages API's own limit on a request body (32 MB)."""
CONFIG_VARIABLE = "ABRIDGED_SERVE_CONFIG"
"""The environment variable through which the command hands its configuration to workers."""
TOKENS_VARIABLE = "ABRIDGED_SERVE_TOKENS"
"""`tenant=token,tenant=token`: the bearer tokens of the sessions API, and the proxy's."""


@attrs.frozen
class ServeConfig:
    """What a worker needs: the store, the upstream, limits, tenants and compaction settings.

    `tokens` maps a token to its tenant. Without tokens the proxy is open (tenant
    `default`) and the sessions API refuses every request."""

    db: str = "abridged.sqlite3"
    upstream: str = attrs.field(default=DEFAULT_UPSTREAM)
    upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_message_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The largest new message the proxy stores (its JSON, in UTF-8 bytes; the service's
    `max_message_bytes`): by default the API's own request limit, so that the proxy passes
    every message the API takes (its largest image, 6.7 MB as base64; the results of a turn
    that read many screenshots). A larger one is refused with 413."""
    client_timeout: float = DEFAULT_CLIENT_TIMEOUT
    tokens: Mapping[str, str] = attrs.field(factory=dict)
    preset: str = "default"
    overrides: Mapping[str, Any] = attrs.field(factory=dict)
    context_window: int | None = None
    """Every proxied session's window; by default the model's."""
    defer_compaction: bool = False
    """The service's `defer_compaction`: a compaction due while the request still fits is
    run in the background instead of before the request goes upstream."""

    @upstream.validator
    def _check_upstream(self, attribute: attrs.Attribute[str], value: str) -> None:
        # Refused here, not at each request: any other URL would fail every request (502).
        # The URL itself is not repeated: it may carry a gateway's credentials.
        try:
            parts = urlsplit(value)
            host = parts.hostname
        except ValueError:
            host = None
        else:
            if parts.scheme not in ("http", "https"):
                host = None
        if not host:
            raise ValueError("the upstream must be an http:// or https:// URL with a host")

    @property
    def settings(self) -> CompactionSettings:
        return settings_from(self.preset, dict(self.overrides))

    def to_env(self) -> str:
        return json.dumps(attrs.asdict(self))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServeConfig:
        """The configuration the `serve` command put in the environment (and tokens from
        `ABRIDGED_SERVE_TOKENS` when it names none)."""
        environ = os.environ if environ is None else environ
        values = json.loads(environ.get(CONFIG_VARIABLE) or "{}")
        config = cls(**values)
        if not config.tokens and environ.get(TOKENS_VARIABLE):
            config = attrs.evolve(config, tokens=parse_tokens(environ[TOKENS_VARIABLE].split(",")))
        return config


def parse_tokens(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`TENANT=TOKEN` items as a token → tenant map; `ValueError` for a malformed one."""
    tokens: dict[str, str] = {}
    for item in items:
        if not item.strip():
            continue
        tenant, sep, token = item.strip().partition("=")
        if not sep or not tenant or len(token) < 16:
            raise ValueError(
                "a token is TENANT=TOKEN with a token of at least 16 characters, "
                f"got {tenant or item[:8]!r}"
            )
        tokens[token] = tenant
    return tokens


def tenant_of(given: str, tokens: Mapping[str, str]) -> str | None:
    """The tenant whose token `given` is, else `None`. Every token is compared, by its
    SHA-256, in constant time: neither the token's length nor its place in the list shows in
    how long the answer takes."""
    offered = hashlib.sha256(given.encode()).digest()
    found = None
    for token, tenant in tokens.items():
        if hmac.compare_digest(offered, hashlib.sha256(token.encode()).digest()):
            found = tenant
    return found if given else None
