"""Generated source of the imaginary repository: its modules, their tests, a changelog.

Plausible rather than working code: enough for reads, searches, blame and profiles to show
names and lines that look real.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from abridged.adapters.demo.sources import ANCHOR_TESTS

NOUNS = (
    "token", "block", "line", "heading", "node", "span", "anchor", "cell", "row", "marker",
    "fence", "indent", "link", "label", "title", "source", "buffer", "state", "entry", "run",
    "delimiter", "container", "paragraph", "attr", "column", "child", "text", "offset", "item",
)  # fmt: skip
VERBS = (
    "parse", "render", "scan", "match", "split", "normalize", "collect", "resolve", "emit",
    "escape", "strip", "measure", "flush", "consume", "peek", "close", "open", "merge", "walk",
)  # fmt: skip
_TYPES = (
    "str", "int", "Node", "Token", "list[Token]", "Block | None", "Sequence[str]", "bool",
    "State", "Iterator[Node]", "Mapping[str, str]", "Span",
)  # fmt: skip
_ATTRS = ("kind", "level", "start", "end", "text", "children", "indent", "closed", "lineno")
_DEFAULTS = ("None", "[]", '""', "0", "False", "()", "self")
_COMMENTS = (
    "CommonMark 0.31, section 4.5: a fence may be indented up to three spaces",
    "keep this linear: the changelog alone has ~40k lines",
    "tabs count as four spaces here, as the spec says, not as a single column",
    "the lazy continuation rule makes this look ahead one line",
    "a closed container never reopens, so its children are final here",
    "offsets are in code points, not bytes: spans are sliced from `str`",
    "HTML blocks end at the first blank line, whatever their kind (spec 4.6)",
)
_IMPORTS = (
    "from collections.abc import Iterator, Mapping, Sequence",
    "from dataclasses import dataclass, field",
    "from functools import lru_cache",
    "import itertools",
    "import html",
    "from typing import Final",
)


def python_module(rng: random.Random, doc: str, anchors: Sequence[str], functions: int) -> str:
    header = [f'"""{doc}"""', "", "from __future__ import annotations", "", "import re"]
    header += sorted(rng.sample(_IMPORTS, k=rng.randint(1, 3)))
    header += ["", "from quillmark.errors import QuillError"]
    if rng.random() < 0.6:
        header += ["", f"_{rng.choice(NOUNS).upper()}_RE = re.compile(r{_regex(rng)!r})"]
    used: set[str] = set()
    chunks = [
        _dataclass(rng) if rng.random() < 0.15 else _function(rng, used) for _ in range(functions)
    ]
    for anchor in anchors:
        chunks.insert(rng.randint(0, len(chunks)), anchor)
    return "\n".join(header) + "\n\n\n" + "\n\n\n".join(chunks) + "\n"


def _regex(rng: random.Random) -> str:
    return rng.choice(
        (
            r"^ {0,3}(#{1,6})(?:[ \t]+|$)",
            r"^ {0,3}(`{3,}|~{3,})([^`]*)$",
            r"^ {0,3}>[ ]?",
            r"^ {0,3}([-+*]|\d{1,9}[.)])(?:[ \t]+|$)",
            r"\[([^\]]+)\]\(([^)\s]*)(?:\s+\"([^\"]*)\")?\)",
            r"&(?:#[xX][0-9a-fA-F]{1,6}|#\d{1,7}|[A-Za-z][A-Za-z0-9]{1,31});",
        )
    )


def _function(rng: random.Random, used: set[str]) -> str:
    name = f"{'_' if rng.random() < 0.4 else ''}{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
    while name in used:
        name += "s" if not name.endswith("s") else "_all"
    used.add(name)
    params = rng.sample(NOUNS, k=rng.randint(1, 3))
    signature = ", ".join(f"{p}: {rng.choice(_TYPES)}" for p in params)
    verb, noun = name.strip("_").split("_", 1)
    lines = [
        f"def {name}({signature}) -> {rng.choice(_TYPES)}:",
        f'    """{verb.capitalize()} the {noun} of `{params[0]}`; {rng.choice(_DOC_TAILS)}."""',
    ]
    return "\n".join(lines + _body(rng, params, 1))


_DOC_TAILS = (
    "None when there is nothing to do",
    "the result keeps source offsets",
    "raises QuillError on malformed input",
    "pure, safe to cache",
    "the input is not modified",
    "tabs are expanded first",
)


def _body(rng: random.Random, params: list[str], depth: int) -> list[str]:
    pad = "    " * depth
    known = list(params)
    out: list[str] = []
    for _ in range(rng.randint(3, 10)):
        source = rng.choice(known)
        new = rng.choice(NOUNS) + rng.choice(("", "s", "_end", "_text", "_count"))
        attr, verb, noun = rng.choice(_ATTRS), rng.choice(VERBS), rng.choice(NOUNS)
        kind = rng.randrange(9)
        if kind == 0:
            out.append(f"{pad}{new} = {source}.{verb}_{noun}()")
        elif kind == 1:
            out += [f"{pad}if {source} is None:", f"{pad}    return {rng.choice(_DEFAULTS)}"]
        elif kind == 2:
            out += [
                f"{pad}{new} = []",
                f"{pad}for {noun} in {source}:",
                f"{pad}    if {noun}.{attr} > {rng.randint(0, 4)}:",
                f"{pad}        {new}.append({noun})",
            ]
        elif kind == 3:
            out.append(f"{pad}{new} = [c.{attr} for c in {source}.children if not c.closed]")
        elif kind == 4:
            out += [
                f"{pad}if not {source}:",
                f'{pad}    raise QuillError(f"unexpected {noun} {{{source}!r}}")',
            ]
        elif kind == 5:
            out.append(f"{pad}{new} = {source}.{attr} + len({rng.choice(known)})")
        elif kind == 6:
            out += [f"{pad}with {source}.{verb}() as {noun}:", f"{pad}    {new} = {noun}.{attr}"]
        elif kind == 7:
            out.append(f"{pad}# {rng.choice(_COMMENTS)}")
            continue
        else:
            out.append(f"{pad}{new} = {verb}_{noun}({source}, {rng.choice(_DEFAULTS)})")
        known.append(new)
    out.append(f"{pad}return {known[-1]}")
    return out


def _dataclass(rng: random.Random) -> str:
    name = rng.choice(NOUNS).capitalize() + rng.choice(("State", "Info", "Spec", "Run", ""))
    fields = rng.sample(_ATTRS, k=rng.randint(2, 5))
    lines = ["@dataclass(frozen=True)", f"class {name}:", f'    """One {name.lower()}."""', ""]
    lines += [f"    {f}: {rng.choice(_TYPES)}" for f in fields]
    lines += ["", f"    def {rng.choice(VERBS)}(self) -> {name}:"]
    return "\n".join(lines + _body(rng, ["self"], 2))


MARKDOWN_SAMPLES = (
    "# Title\\n",
    "*a* **b**\\n",
    "> quote\\n> more\\n",
    "- one\\n- two\\n",
    "```py\\nx = 1\\n```\\n",
    "[link](/url 'title')\\n",
    "Über uns\\n========\\n",
    "| a | b |\\n|---|---|\\n| 1 | 2 |\\n",
    "text[^1]\\n\\n[^1]: note\\n",
    "&copy; &#169;\\n",
)


def pytest_module(rng: random.Random, name: str) -> str:
    lines = [
        f'"""Tests of quillmark.{name}."""',
        "",
        "from __future__ import annotations",
        "",
        "import pytest",
        "",
        "from quillmark import parse, render",
    ]
    extra = ANCHOR_TESTS.get(name, ())
    names = {rng.choice(VERBS) + "_" + rng.choice(NOUNS) for _ in range(rng.randint(8, 20))}
    for test in sorted(names):
        sample = rng.choice(MARKDOWN_SAMPLES)
        lines += [
            "",
            "",
            f"def test_{test}():",
            f'    doc = parse("{sample}")',
            f"    assert doc.children[0].{rng.choice(_ATTRS)} == {rng.choice(_DEFAULTS)}",
            f'    assert render("{sample}").startswith("<")',
        ]
    for test in extra:
        lines += ["", "", test]
    return "\n".join(lines) + "\n"


def changelog(rng: random.Random) -> str:
    lines = ["# Changelog", "", "## Unreleased", ""]
    for minor in range(3, -1, -1):
        for patch in range(rng.randint(1, 4), -1, -1):
            lines += [f"## 2.{minor}.{patch}", ""]
            for _ in range(rng.randint(2, 6)):
                verb = rng.choice(("Fix", "Add", "Speed up", "Document", "Deprecate"))
                subject = f"{rng.choice(NOUNS)} {rng.choice(VERBS)}ing"
                lines.append(f"- {verb} {subject} (#{rng.randint(40, 420)})")
            lines.append("")
    return "\n".join(lines)
