"""Secrets recognised by what names them: a key, a variable, a flag, a command, a sentence.

A value has no format of its own here (`hunter2` is a password only after `password=`), so
each pattern says what must come before it, and what a value that is code, not a secret,
looks like: `password: str`, `token = tokens.shift()`, `secret = settings.SECRET_KEY`.
"""

from __future__ import annotations

from abridged.domain.secret_pattern import SecretPattern

__all__ = ["SECRET_NAMES"]

# Code that names a secret without holding one: a call, a subscript or a generic
# (`get_password()`, `os.environ[…]`, `Optional[str]`), an attribute (`self.token`), a type or
# a literal of a programming language (`password: str`, `token = None`).
_NOT_CODE = (
    r"(?![A-Za-z_$][A-Za-z0-9_.$]*[(\[<{])"
    r"(?![A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:[\s\"'`,;\\)\]}]|$))"
    r"(?!(?:str|bytes|int|bool|float|string|String|char|object|Any|any|Optional|None|null|nil"
    r"|true|false|True|False|undefined|try|await|self|this)\b)"
)
# A value: to the next space, quote, comma or semicolon, or a backslash that escapes one of
# them (`\"password\": \"…\"`, text holding JSON), with a letter or a digit in it (`...`
# and `****` hide nothing). A placeholder is never redacted again.
_CHAR = r"(?:[^\s\"'`,;\\]|\\(?![\"'\\nrt]))"
# A shell expansion's reference to another variable or command (`$OTHER`, `${OTHER}`,
# `$(cat key)`) names a secret kept elsewhere, not the secret; and a `}` it ends in closes
# the expansion, so a value given as `${API_KEY:-sk-…}` is redacted without its brace.
_VALUE = (
    r"(?!\[redacted )(?!\$[{(A-Za-z_])"
    + _NOT_CODE
    + "(?="
    + _CHAR
    + "*?[A-Za-z0-9])("
    + _CHAR
    + "{3,}(?<!}))"
)
# A value a sentence gives (`the password hunter2`, `password is Summer2024!`): a word with a
# digit or a symbol in it, since `the password is wrong` gives none.
_PROSE_VALUE = r"(?!\[redacted )(?=[^\s\"'`]*[0-9!@#$%^&*+=?~])" + _NOT_CODE + "(" + _CHAR + "{3,})"
# Words that say what state a password is in, not what it is (`the password is wrong`).
_PASSWORD_STATE = (
    r"wrong|incorrect|correct|invalid|valid|required|optional|missing|empty|blank|expired"
    r"|set|unset|not|too|being|still|now|also|the|a|an|in|on|at|of|for|from|stored|saved"
    r"|hashed|encrypted|changed|reset|rotated|weak|strong|long|short|same|different|case"
    r"|that|this|what|which|known|unknown|secret|hidden|mandatory|needed|used|ok|fine"
)
# A key's end and its separator: `password=`, `"password": "`, `\"password\": \"`, escaped
# once or more (JSON text inside JSON).
_QUOTE = r"(?:\\*[\"'])?"
# A shell expansion's `:+`, `:?` (`${API_KEY:+set}`, `${API_KEY:?missing}`) tests whether the
# name is set and gives no value; its `:-`, `:=` give a default, read after the `-` or `=`.
_IS = _QUOTE + r"\s*(?:=|:(?![+?])[-=]?+)\s*" + _QUOTE

# A name holding one of the words, looked for ahead, then taken whole and never given back:
# `[A-Z0-9_]*WORD[A-Z0-9_]*` would try every split of a long name (quadratic in its length).
_SECRET_NAME = (
    r"(?=[A-Z0-9_]*?(?:SECRET|TOKEN(?!S)|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|CREDENTIALS?))"
    r"[A-Z0-9_]++"
)
# A name (of a variable, a JSON or YAML key, a shell assignment) that ends in a word naming a
# secret, quoted or not: `"refresh_token": "…"`, `cd app && PGPASSWORD=… psql`. Ending in
# the word, not only holding it: `token_count = 1234` names no secret. (Matched from the word
# on, whatever comes before it: a pattern that starts with the name would be tried at every
# position of a long output.) The keys that are secrets by their qualifier: `AccountKey`,
# `SharedAccessKey`, `signing_key`, `client-key-data`, `Ocp-Apim-Subscription-Key`.
# (The leading class of first letters lets the search skip every other position at once: the
# alternation alone, tried at each character of a long output, costs three times as much.)
_SECRET_WORD = (
    r"(?=[SsTtCcAaPpMmEeKk])"
    r"(?i:secret|token|creds|credentials?|api[_-]?key|private[_-]?key|access[_-]?key"
    r"|(?:secret|account|master|signing|encryption|shared|subscription|client|app|auth|session)"
    r"[_-]?key|key[_-]?data)"
)
_SECRET_NAMED = _SECRET_WORD + r"(?![A-Za-z0-9_])"
_SECRET_HINTS = ("secret", "token", "key", "cred")
_SECRET_STARTS = (
    *("secret", "token", "cred", "api", "private", "access", "account", "master", "signing"),
    *("encryption", "shared", "subscription", "client", "app", "auth", "session", "key"),
)
"""What every match of `_SECRET_WORD` starts with (`SecretPattern.starts`)."""
# A bare `pass` is more often a count of passed tests (`PASS: 12`) than a key name.
_ENV_NAME = (
    r"(?=[A-Za-z0-9_.\-]*?(?:(?i:password|passwd|authorization|cookie)|(?!(?i:tokens))"
    + _SECRET_WORD
    + r"))[A-Za-z0-9_.\-]++"
)
"""A variable's or header's name that names a secret (`DB_PASSWORD`, `github_token`,
`Authorization`; not `MAX_TOKENS`)."""
_PASSWORD_NAMED = (
    r"(?=[Pp])(?i:password|passwd|passphrase|pwd|(?<=[A-Za-z0-9][_.\-])pass)(?![A-Za-z0-9_])"
)
_PASSWORD_STARTS = ("pass", "pwd")
"""What every match of `_PASSWORD_NAMED` starts with."""
# The commands whose `-p` (or `-a`, `-w`) is the password itself, not a port or a prompt.
_PASSWORD_FLAG = (
    r"\b(?:sshpass|(?:docker|podman|buildah|skopeo|nerdctl|oras|helm[ \t]+registry)[ \t]+login"
    r"|mongo(?:sh|dump|restore|export|import)?)\b[^\n]*?(?<=\s)-p[ \t]*"
    r"|\bredis-cli\b[^\n]*?(?<=\s)-a[ \t]+|\bldap[a-z]*\b[^\n]*?(?<=\s)-w[ \t]+"
    r"|(?<=\s)-pass(?:in|out)?[ \t]+pass:"
)

# A quoted value of several words (`PGPASSWORD='correct horse battery'`, `"password": "a b"`)
# or holding an escaped quote (`"abc\\"def"`), to its closing quote on the same line: the
# patterns below stop at the first space or quote, and would leave the rest of it. The quote
# may be escaped once (JSON text inside a string). A value of one word is theirs.
_QUOTED_CHAR = r"(?:(?!(?P=q))(?:\\.|[^\\\n]))"
_QUOTED_VALUE = (
    r"(?P<q>\\?[\"'])(?!\[redacted )(?=" + _QUOTED_CHAR + r"*?[A-Za-z0-9])"
    r"(?=" + _QUOTED_CHAR + r"*?[\s\\])(" + _QUOTED_CHAR + r"{3,})(?P=q)"
)

# The same, URL-encoded (a redirect's `next=%2Flogin%3Fpassword%3D…`, a logged form body):
# `=` or `:` as `%3D` / `%3A`, quotes as `%22`; the value ends at `&` or its `%26`, a quote,
# a space or its `%20`.
_URL_IS = r"(?:%22)?(?:%3[Dd]|%3[Aa])(?:%20|\+)*(?:%22)?"
_URL_VALUE = r"(?!%5B|\[redacted )((?:[A-Za-z0-9._~!$'()*,;@+\-]|%(?!2[026])[0-9A-Fa-f]{2}){3,})"
_URL_HINTS = ("%3d", "%3a")

SECRET_NAMES: tuple[SecretPattern, ...] = (
    SecretPattern(
        "password",
        _PASSWORD_NAMED + _URL_IS + _URL_VALUE,
        1,
        hints=_URL_HINTS,
        starts=_PASSWORD_STARTS,
    ),
    SecretPattern(
        "secret", _SECRET_NAMED + _URL_IS + _URL_VALUE, 1, hints=_URL_HINTS, starts=_SECRET_STARTS
    ),
    SecretPattern(
        "bearer-token",
        r"(?=[Aa])(?i:authorization)"
        + _URL_IS
        + r"(?:(?i:bearer|basic|token)(?:%20|\+)+)?"
        + _URL_VALUE,
        1,
        hints=_URL_HINTS,
        starts=("authorization",),
    ),
    SecretPattern(
        "password",
        _PASSWORD_NAMED + r"(?:\\*[\"'])?[ \t]*[:=][ \t]*" + _QUOTED_VALUE,
        2,
        hints=("pass", "pwd"),
        starts=_PASSWORD_STARTS,
    ),
    SecretPattern(
        "secret",
        _SECRET_NAMED + r"(?:\\*[\"'])?[ \t]*[:=][ \t]*" + _QUOTED_VALUE,
        2,
        hints=_SECRET_HINTS,
        starts=_SECRET_STARTS,
    ),
    SecretPattern(
        "password",
        r"(?=-)(?:^|(?<=\s))(?:-u|--user)\s*[\"']?[^\s:\"'@]+:"
        r"(?![0-9]+\b|\[redacted )([^\s\"'@]{3,})",
        1,
        hints=("-u", "--user"),
    ),
    SecretPattern(
        "password",
        r"(?m)^[^\S\n]*+(?:export\s+)?(?:(?=[A-Z0-9_]*?(?:PASSWORD|PASSWD|PWD))[A-Z0-9_]++"
        r"|[A-Z0-9_]+_PASS|(?=[a-z0-9_]*?(?:password|passwd|pwd))[a-z0-9_]++)"
        r"\s*[=:]\s*[\"']?" + _VALUE,
        1,
        hints=("pass", "pwd"),
    ),
    SecretPattern(
        "secret",
        r"(?m)^[^\S\n]*+(?:export\s+)?" + _SECRET_NAME + r"\s*[=:]\s*[\"']?" + _VALUE,
        1,
        hints=_SECRET_HINTS,
    ),
    SecretPattern(
        "password",
        _PASSWORD_NAMED + _IS + _VALUE,
        1,
        hints=("pass", "pwd"),
        starts=_PASSWORD_STARTS,
    ),
    SecretPattern(
        "password",
        # A key named only `pw`, or `pass` as a key is written (quoted, or `pass=`),
        # lowercase: `PASS: 12` is a test count, `see it pass: …` a sentence.
        r"(?<![A-Za-z0-9_.\-])p(?:w|(?<=[\"']p)ass(?=\\*[\"'])|ass(?==))"
        + _IS
        + r"(?![0-9.]+\b)"
        + _VALUE,
        1,
        hints=("pass", "pw"),
        starts=("pw", "pass"),
    ),
    SecretPattern(
        "password",
        # … or first on its line, as YAML writes it.
        r"(?m)^[ \t-]*pass[ \t]*:[ \t]*[\"']?(?![0-9.]+\b)" + _VALUE,
        1,
        hints=("pass",),
    ),
    SecretPattern(
        "secret", _SECRET_NAMED + _IS + _VALUE, 1, hints=_SECRET_HINTS, starts=_SECRET_STARTS
    ),
    SecretPattern(
        "secret",
        # A docker `config.json`'s `"auth"`: the base64 of `user:password`.
        r"(?=[Aa])(?<![A-Za-z0-9_\-])(?i:auth)" + _IS + r"(?!\[redacted )(?=[A-Za-z0-9+/]*[0-9+/=])"
        r"([A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])",
        1,
        hints=("auth",),
        starts=("auth",),
    ),
    SecretPattern(
        "secret",
        # A two-item tuple or list naming a secret then holding it, in code:
        # `("X-Api-Key", "…")`, `['password', '…']`; not a list of field names.
        r"[(\[][ \t]*\\*[\"']" + _ENV_NAME + r"\\*[\"'][ \t]*,[ \t]*\\*[\"'](?!\[redacted )"
        r"(?=[^\"'\s\\]*[0-9!@#$%^&*+=?~])([^\"'\n\\]{6,})\\*[\"'][ \t]*[)\]]",
        1,
        hints=('",', "',"),
    ),
    SecretPattern(
        "password",
        r"(?=-)(?:^|(?<=\s))--?(?!no-)(?i:[a-z]+-)*(?i:password|passwd|passphrase)(?:=|\s+)[\"']?"
        r"(?!-)" + _VALUE,
        1,
        hints=("-pass",),
    ),
    SecretPattern(
        "secret",
        r"(?=-)(?:^|(?<=\s))--?(?!no-)(?i:[a-z]+-)*"
        + _SECRET_WORD
        + r"(?:=|\s+)[\"']?(?!-)"
        + _VALUE,
        1,
        hints=("-secret", "-token", "-cred", "-api", "-private", "-access", "-key"),
    ),
    SecretPattern(
        "password",
        "(?=[sdpbnohmrl-])(?:" + _PASSWORD_FLAG + r")[\"']?(?!-)" + _VALUE,
        1,
        hints=("sshpass", "login", "mongo", "redis-cli", "ldap", "-pass"),
        starts=(
            *("sshpass", "docker", "podman", "buildah", "skopeo", "nerdctl", "oras", "helm"),
            *("mongo", "redis-cli", "ldap", "-pass"),
        ),
    ),
    SecretPattern(
        "password",
        # A sentence that says what the password is: `my password is sunshine`, any word but
        # one that says what state it is in (`the password is wrong`, `… is required`).
        r"(?i)(?=p)\b(?:password|passwd|passphrase|pw)\s+(?:is|was)\s+[\"'`]?"
        r"(?!(?:" + _PASSWORD_STATE + r")\b)" + _VALUE,
        1,
        hints=("passw", "passphrase", "pw"),
        starts=("pass", "pw"),
    ),
    SecretPattern(
        "password",
        # A sentence that names it without `is`: `the password hunter2 …`, `pw Summer24!`: a
        # word with a digit or a symbol, since `the password field …` gives none.
        r"(?i)(?=p)\b(?:password|passwd|passphrase|pw)\b\s+[\"'`]?" + _PROSE_VALUE,
        1,
        hints=("passw", "passphrase", "pw"),
        starts=("pass", "pw"),
    ),
    SecretPattern(
        "password",
        # `.netrc`: `machine host login user password …`, on one line or several.
        r"(?i)(?=l)\blogin\s+\S+\s+password\s+" + _VALUE,
        1,
        hints=("login",),
        starts=("login",),
    ),
    SecretPattern(
        "password",
        # `.pgpass`: `host:port:database:user:password`, in a text that names the file (the
        # shape alone is any colon-separated record's).
        r"(?m)(?:^|(?<=[\s\"'])|(?<=\\n))"
        r"(?:\*|(?=[0-9\-]*[A-Za-z.])[A-Za-z0-9.\-]++|\[[0-9A-Fa-f:]+\])"
        r":(?:[0-9]+|\*):[^\s:]+:(?=[^\s:A-Za-z*_]*[A-Za-z*_])[^\s:]++"
        r":(?!\[redacted )([^\s:\"']{3,})"
        r"(?=$|[\s\"'])",
        1,
        hints=("pgpass",),
    ),
    SecretPattern(
        "secret",
        # An environment list's or a header list's pair, in JSON or YAML:
        # `{"name": "DB_TOKEN", "value": "…"}`, `{"key": "Authorization", "value": "…"}`, its
        # quotes escaped once or more in JSON text.
        # (From the first backslash of a run only: from each, a run would be read once per
        # backslash.)
        r'(?<!\\)\\*+"(?:name|key)\\*+"\s*:\s*\\*+"' + _ENV_NAME + r'\\*+"\s*,\s*\\*+"value\\*+"'
        r'\s*:\s*\\*+"'
        r'(?!\[redacted )([^"\\]{3,})\\*"',
        1,
        hints=("value",),
    ),
    SecretPattern(
        "secret",
        r"(?m)^[ \t]*+(?:-[ \t]*+)?name:[ \t]*[\"']?"
        + _ENV_NAME
        + r"[\"']?[ \t]*\n[ \t]*value:[ \t]*[\"']?"
        + _VALUE,
        1,
        hints=("value:",),
    ),
    SecretPattern(
        "cookie",
        r"(?i)(?=[sc])\b(?:set-)?cookie[ \t]*:[ \t]*(?!\[redacted )([^\s\"'][^\r\n\"']{2,})",
        1,
        hints=("cookie",),
        starts=("set-cookie", "cookie"),
    ),
    SecretPattern(
        "cookie",
        r"(?=-)(?:^|(?<=\s))(?:-b|--cookie)\s+[\"']?(?!\[redacted )([^\s\"']*=[^\s\"']{3,})",
        1,
        # `-b` then white space: a bare "-b" is in every "web-based" and "re-build".
        hints=("-b ", "-b\t", "-b\n", "-b\r", "-b\x0b", "-b\x0c", "--cookie"),
    ),
    SecretPattern(
        "password",
        # `mysql -pSECRET` (`-p` alone, or followed by a space, asks for it instead).
        r"(?=m)\bmysql(?:dump|admin|import|show|check)?\b[^\n]*?(?<=\s)-p"
        r"(?!\[redacted )([^\s\"']{3,})",
        1,
        hints=("mysql",),
        starts=("mysql",),
    ),
)
"""The value of a `.env` / config line, a JSON or YAML key (also JSON escaped in a string), an
environment or header list's name/value pair, a two-item tuple, a shell assignment, a flag,
a command's password option, a sentence, a `.netrc` or `.pgpass` line naming a password,
secret, token or key; cookies."""
