"""Which words of a tool call or its output name files."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from abridged.adapters.summarizers.rendering import LINE_CHARS
from abridged.domain.framing import LINE_BREAKS

_PATH = re.compile(
    r"(?<![\w.:/@+~\-])"
    r"(?:(?:~|\.{1,2})?/?[\w@+\-][\w.@+\-]*(?:/[\w.@+\-]+)+"
    # A bare name needs a known extension and at most one other dot, so that dotted module
    # names ("django.core.serializers.json") are not taken for files.
    r"|[\w@+\-]+(?:\.[\w@+\-]+)?\.(?:py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|md|rst|txt|json|"
    r"jsonl|yaml|yml|toml|cfg|ini|lock|rs|go|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|sh|"
    r"bash|zsh|ps1|sql|html|htm|css|scss|vue|svelte|xml|csv|tsv|proto|graphql|tf|gradle|mk|"
    r"cmake|pony|exs|erl|hs|lua|jl|dart|zig|plist|sqlite)(?![\w@+\-]|\.\w))"
)
_EXTENSION = re.compile(r"\.[A-Za-z][\w\-]{0,9}$")
PATH_KEYS = frozenset(
    {
        "path",
        "paths",
        "file",
        "files",
        "file_path",
        "filepath",
        "filename",
        "file_name",
        "notebook_path",
        "dir",
        "directory",
    }
)


def _walk_strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside a JSON value, with the key it sits under."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _walk_strings(v, str(k).lower())
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _walk_strings(v, key)


def input_paths(tool_input: Mapping[str, Any]) -> Iterator[str]:
    for key, value in _walk_strings(tool_input):
        candidate = value.strip()
        if (
            key in PATH_KEYS
            and candidate
            and not LINE_BREAKS.search(candidate)
            and len(candidate) <= LINE_CHARS
            and not any(c in candidate for c in "*?")
        ):
            yield candidate
        else:
            yield from paths_in(value)


def paths_in(text: str) -> Iterator[str]:
    # Scanning words that hold a "/" or "." is much faster than running the pattern over
    # every position of a large text, and finds the same paths.
    for word in text.split():
        if "/" in word or "." in word:
            yield from paths_in_word(word)


def paths_in_word(word: str) -> Iterator[str]:
    for match in _PATH.finditer(word):
        path = match.group(0).rstrip(".")
        if not any(c.isalpha() for c in path):
            continue
        # One slash alone is too often prose ("and/or") or a MIME type ("application/json").
        if (
            "/" not in path
            or path.startswith(("/", "~/", "./", "../"))
            or _EXTENSION.search(path)
            or path.count("/") >= 2
        ):
            yield path
