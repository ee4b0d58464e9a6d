"""The imaginary repository the demo agent works on: `quillmark`, a Markdown library."""

from __future__ import annotations

import random
import re

from abridged.adapters.demo.codegen import NOUNS, changelog, pytest_module, python_module
from abridged.adapters.demo.sources import (
    CI_YAML,
    EMPHASIS_ANCHOR,
    JA_DOC,
    OUTPUT_ANCHOR,
    PYPROJECT,
    SLUG_ANCHOR,
    SPEC_TEST,
    TABLE_ANCHOR,
    TOC_ANCHOR,
    VERSION_FILE,
)

REPO_ROOT = "/home/dev/quillmark"
"""Where the repository is checked out; the system prompt spells it out too."""


class Repo:
    """The files of the imaginary repository, generated once, changed by the agent's edits."""

    def __init__(self, rng: random.Random) -> None:
        self.files: dict[str, str] = {}
        self.spec_examples = 652
        modules = {
            "quillmark/__init__.py": "Public API: `render`, `parse` and the plugin hooks.",
            "quillmark/errors.py": "The errors quillmark raises.",
            "quillmark/lexer.py": "Line classification: the first pass of block parsing.",
            "quillmark/blocks.py": "Block structure: containers, leaves and their closing.",
            "quillmark/inline.py": "Inline parsing: emphasis, links, code spans.",
            "quillmark/parser.py": "The two-phase CommonMark parser.",
            "quillmark/render.py": "HTML rendering of a parsed document.",
            "quillmark/slug.py": "Heading anchors.",
            "quillmark/toc.py": "Table of contents for `[[toc]]`.",
            "quillmark/cli.py": "The `quillmark` command line.",
            "quillmark/plugins/__init__.py": "Plugin discovery and registration.",
            "quillmark/plugins/tables.py": "GitHub-style tables.",
            "quillmark/plugins/footnotes.py": "Footnotes: `[^1]` references.",
        }
        anchors = {
            "quillmark/slug.py": (SLUG_ANCHOR,),
            "quillmark/plugins/tables.py": (TABLE_ANCHOR,),
            "quillmark/toc.py": (TOC_ANCHOR,),
            "quillmark/inline.py": (EMPHASIS_ANCHOR,),
            "quillmark/cli.py": (OUTPUT_ANCHOR,),
        }
        self.files["quillmark/_version.py"] = VERSION_FILE
        for path, doc in modules.items():
            size = 4 if path.endswith("__init__.py") else rng.randint(9, 26)
            self.files[path] = python_module(rng, doc, anchors.get(path, ()), size)
        for name in ("parser", "lexer", "inline", "render", "tables", "cli", "toc", "slug"):
            self.files[f"tests/test_{name}.py"] = pytest_module(rng, name)
        self.files["tests/test_spec.py"] = SPEC_TEST
        self.files["docs/ja/index.md"] = JA_DOC
        self.files["CHANGELOG.md"] = changelog(rng)
        self.files["pyproject.toml"] = PYPROJECT
        self.files[".github/workflows/ci.yml"] = CI_YAML
        self.original = dict(self.files)

    def read(self, path: str, offset: int | None = None, limit: int | None = None) -> str | None:
        """`cat -n` of the file (or of lines offset..offset+limit), or None if it is absent."""
        text = self.files.get(path)
        if text is None:
            return None
        lines = text.splitlines()
        start = (offset or 1) - 1
        stop = len(lines) if limit is None else start + limit
        return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1) if start < n <= stop)

    def line_of(self, path: str, needle: str) -> int:
        """The 1-based line where `needle` starts in `path` (1 if it is not there)."""
        position = self.files[path].find(needle)
        return self.files[path].count("\n", 0, position) + 1 if position >= 0 else 1

    def search(self, pattern: str, suffix: str = "") -> list[tuple[str, int, str]]:
        """`(path, line number, line)` of each line matching `pattern`, like ripgrep."""
        compiled = re.compile(pattern, re.MULTILINE)
        # A leading \b defeats the regex engine's literal prefix scan; skipping the files
        # that lack the word keeps a whole session's generation well under a second.
        word = re.fullmatch(r"\\b(\w+)\\b", pattern)
        hits: list[tuple[str, int, str]] = []
        for path, text in self.files.items():
            if not path.endswith(suffix) or (word and word.group(1) not in text):
                continue
            line, position, reported = 1, 0, -1
            for match in compiled.finditer(text):
                start = text.rfind("\n", 0, match.start()) + 1
                if start == reported:
                    continue
                line += text.count("\n", position, start)
                position = reported = start
                end = text.find("\n", match.start())
                hits.append((path, line, text[start : end if end >= 0 else len(text)]))
        return hits

    def test_ids(self) -> list[str]:
        ids = [
            f"{path}::{name}"
            for path, text in self.files.items()
            if path.startswith("tests/test_") and path != "tests/test_spec.py"
            for name in re.findall(r"^def (test_\w+)", text, re.MULTILINE)
        ]
        sections = _SPEC_SECTIONS
        per_section = self.spec_examples // len(sections)
        ids += [
            f"tests/test_spec.py::test_spec[{section}-{i * per_section + k + 1}]"
            for i, section in enumerate(sections)
            for k in range(per_section)
        ]
        return sorted(ids)

    def tracked_files(self) -> list[str]:
        """`git ls-files`: the generated sources plus the spec fixtures and docs."""
        extra = [
            f"tests/fixtures/spec/example_{n:04d}.md" for n in range(1, self.spec_examples + 1)
        ]
        extra += [f"docs/{page}.md" for page in DOC_PAGES]
        extra += [f"docs/ja/{page}.md" for page in DOC_PAGES[:6]]
        extra += [f"tests/fixtures/render/{n}.md" for n in NOUNS]
        extra += ["README.md", "LICENSE", ".gitignore", ".pre-commit-config.yaml", "Makefile"]
        return sorted({*self.files, *extra})


_SPEC_SECTIONS = (
    "tabs", "thematic-breaks", "atx-headings", "setext-headings", "indented-code-blocks",
    "fenced-code-blocks", "html-blocks", "link-reference-definitions", "paragraphs",
    "block-quotes", "list-items", "lists", "backslash-escapes", "entity-references",
    "code-spans", "emphasis", "links", "images", "autolinks", "raw-html", "hard-line-breaks",
)  # fmt: skip
DOC_PAGES = (
    "index", "install", "usage", "cli", "plugins", "tables", "footnotes", "toc", "api",
    "changelog", "contributing", "faq", "migration-2.0", "performance", "security",
)  # fmt: skip
