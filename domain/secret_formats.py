"""Secrets recognised by their own shape, whatever surrounds them.

A private key block, a token whose prefix names its issuer (the formats public secret
scanners look for: gitleaks' rules, GitHub's secret scanning partners), a JSON web token,
the credential of an HTTP authorization, the password of a URL, a signed URL's signature.
Each needs no name next to it: `login("hf_…")` and `git push https://ghp_…@github.com/…`
are found as `HF_TOKEN=hf_…` is.
"""

from __future__ import annotations

import re

from abridged.domain.secret_pattern import SecretPattern

__all__ = ["SECRET_FORMATS"]

# Where a token starts: after no letter, digit or underscore, or after the escape of a line
# break or a tab in text holding JSON (`"…\\nghp_…"`), where `\b` sees a letter.
_START = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))"
# The base64 of `-----BEGIN `, then of ` PRIVATE KEY` at each of its three alignments: a key
# block pasted encoded (a kubeconfig's `client-key-data`, a CI variable, `base64 -d`).
_ENCODED_KEY = (
    _START + r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{0,60}?(?:UFJJVkFURSBLRVk|SSVZBVEUgS0VZ|QUklWQVRFIEtFW)"
    r"[A-Za-z0-9+/]*={0,2}"
)

# Tokens whose prefix is their issuer's: package registries, model hubs, mail, SMS, data
# platforms, secret stores. One kind for all: the prefix already says whose it was. A third
# item names the literals every match starts with, where the prefix alone is a common word.
_PREFIXED_TOKENS: tuple[tuple[str, str] | tuple[str, str, tuple[str, ...]], ...] = (
    ("npm_", r"[A-Za-z0-9]{36}"),
    ("pypi-AgE", r"[A-Za-z0-9_\-]{50,}"),
    ("rubygems_", r"[a-f0-9]{48}"),
    ("hf_", r"[A-Za-z]{34,}"),
    ("api_org_", r"[A-Za-z]{34}"),
    ("SG.", r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,50}"),
    ("SK", r"[0-9a-fA-F]{32}"),
    ("dapi", r"[a-f0-9]{32}(?:-\d)?"),
    ("do", r"[opr]_v1_[a-f0-9]{64}", ("dop_v1_", "doo_v1_", "dor_v1_")),
    ("shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shpat_", "shpca_", "shppa_", "shpss_")),
    ("hv", r"[sb]\.[A-Za-z0-9_\-]{90,}", ("hvs.", "hvb.")),
    ("lin_api_", r"[A-Za-z0-9]{40}"),
    ("pplx-", r"[A-Za-z0-9]{48}"),
    ("gsk_", r"[A-Za-z0-9]{48,}"),
    ("r8_", r"[A-Za-z0-9]{37}"),
    ("ntn_", r"[0-9]{11}[A-Za-z0-9]{35}"),
    ("PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    ("glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("AGE-SECRET-KEY-1", r"[0-9A-Z]{58}"),
    ("whsec_", r"[A-Za-z0-9+/]{24,}"),
    ("GOCSPX-", r"[A-Za-z0-9_\-]{24,}"),
    ("ya29.", r"[A-Za-z0-9_\-]{20,}"),
)


_GITLAB = ("pat", "dt", "rt", "ptt", "ft", "imt", "agent", "oas", "soat", "ffct", "cbt")


def _prefixed(prefix: str, rest: str, literals: tuple[str, ...] = ()) -> SecretPattern:
    # The prefix first, its word boundary checked behind it: a pattern that starts with a
    # literal is searched for as a string, thirty times faster than one that starts with `\b`,
    # and as fast as a hint (so none). The prefix is its literal: a message whose strings all
    # lack it is spared the search in each.
    literal = re.escape(prefix)
    return SecretPattern(
        "api-token",
        literal
        + rf"(?:(?<![A-Za-z0-9_]{literal})|(?<=\\[nrt]{literal}))"
        + rest
        + r"(?![A-Za-z0-9])",
        literals=literals or (prefix,),
    )


SECRET_FORMATS: tuple[SecretPattern, ...] = (
    SecretPattern(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        hints=("private key",),
    ),
    SecretPattern("private-key", _ENCODED_KEY, hints=("ls0tls1crudjti",)),
    SecretPattern("anthropic-api-key", _START + r"sk-ant-[A-Za-z0-9_\-]{16,}", hints=("sk-ant-",)),
    SecretPattern(
        "openai-api-key", _START + r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{32,}", hints=("sk-",)
    ),
    SecretPattern(
        "aws-access-key",
        # Searched from its `A` (see `_prefixed`), with no hints: ten of them cost more.
        r"A(?:(?<![A-Za-z0-9_]A)|(?<=\\[nrt]A))(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|ROA|PKA)[A-Z0-9]{16}\b",
        literals=("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "AROA", "APKA"),
    ),
    SecretPattern(
        "aws-secret-key",
        r"(?i)(?=a)\baws_?secret(?:_?access)?_?key\b[\"']?\s*[:=]\s*[\"']?"
        r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        1,
        hints=("aws",),
    ),
    SecretPattern(
        # The start of an STS session token's base64, in either of its generations.
        "aws-session-token",
        _START + r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz)[A-Za-z0-9+/]{40,}={0,2}",
        hints=("iqojb3jpz2lux2vj", "fwogzxivyxdz"),
    ),
    SecretPattern(
        "github-token",
        _START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretPattern(
        "gitlab-token",
        # Personal, deploy, runner, trigger, feed, mail, agent, OAuth, SCIM and CI job tokens;
        # a routable one ends in dotted parts.
        r"gl(?:(?<![A-Za-z0-9_]gl)|(?<=\\[nrt]gl))(?:"
        + "|".join(_GITLAB)
        + r")-[A-Za-z0-9_\-]{20,}"
        r"(?:\.[A-Za-z0-9_\-]+)*",
        literals=tuple(f"gl{kind}-" for kind in _GITLAB),
    ),
    SecretPattern(
        "slack-token", _START + r"(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}", hints=("xox", "xapp-")
    ),
    SecretPattern(
        "webhook-url",
        r"\b(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks)"
        r"/([A-Za-z0-9_\-/]{20,})",
        1,
        hints=("hooks.slack.com", "/api/webhooks/"),
    ),
    SecretPattern("google-api-key", _START + r"AIza[0-9A-Za-z_\-]{35}", hints=("aiza",)),
    SecretPattern(
        "stripe-key",
        r"(?<![A-Za-z0-9_])[sr]k_(?:live|test|prod)_[A-Za-z0-9]{16,}",
        hints=("_live_", "_test_", "_prod_"),
        starts=("sk_", "rk_"),
    ),
    *(_prefixed(*token) for token in _PREFIXED_TOKENS),
    SecretPattern(
        "jwt",
        # The signature may be empty (`alg: none`): the claims are the credential still.
        _START + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
        hints=("eyj",),
    ),
    SecretPattern(
        "bearer-token",
        # A credential has a run of ten letters and digits, and a digit or 24 characters:
        # `Token Program/Token-2022` (a Solana program's name) is words, not a credential.
        r"(?=[BbTt])\b(?i:bearer|token|basic)\s+(?!\[redacted )"
        r"(?=[A-Za-z0-9\-._~+/]*?[A-Za-z0-9]{10})(?=[A-Za-z0-9\-._~+/]*?[0-9]|[A-Za-z0-9\-._~+/]{24})"
        r"([A-Za-z0-9\-._~+/]{16,}=*)",
        1,
        hints=("bearer", "token", "basic"),
        starts=("bearer", "token", "basic"),
    ),
    SecretPattern(
        "bearer-token",
        # An authorization header's credential, however short, with or without its scheme,
        # written as a header, a `key=value`, or a pair in code: `("Authorization", "…")`,
        # its quotes escaped once or more where the text is JSON (inside JSON).
        r"(?i)(?:\b(?:proxy-)?authorization(?:\\*[\"'])?[ \t]*[:=]"
        r"|[(\[] ?\\*[\"']authorization\\*[\"'][ \t]*,[ \t]*(?=\\*[\"']))"
        r"[ \t]*(?:\\*[\"'])?(?:(?:bearer|basic|token|digest|negotiate|apikey|sso-key)[ \t]+)?"
        r"(?!\[redacted |\S+[ \t]+\[redacted )((?:[^\s\"'`,;\\]|\\(?![\"'\\nrt])){6,})",
        1,
        hints=("authorization",),
    ),
    SecretPattern(
        "url-password",
        # To the last `@` before the host: a password written with an unescaped `@` in it.
        # The user may be empty: `redis://:password@cache`.
        # A scheme of at most 32 characters: unbounded, every word start of a long run of
        # `a-a-a-…` would read the rest of the run (quadratic in its length).
        r"\b[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s:/@\"'<>]*:([^\s/\"'<>]+)@",
        1,
        hints=("://",),
    ),
    SecretPattern(
        "url-signature",
        # What makes a signed URL (Azure SAS, S3 and GCS presigned) a credential.
        r"[?&;,][ \t]*(?i:sig|[a-z\-]*signature|[a-z\-]*security-token)="
        r"(?!\[redacted )([^\s&\"'<>#]{8,})",
        1,
        hints=("sig=", "signature=", "security-token="),
    ),
)
"""Private key blocks (also a block cut before its end, or base64-encoded), then tokens by
their prefix, JSON web tokens, authorization credentials, URL passwords and signatures."""
