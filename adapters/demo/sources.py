"""Literal files of the imaginary repository, and the snippets the requests edit.

The snippets sit verbatim in the generated modules, so each edit of a request finds exactly
the text it was written to replace.
"""

from __future__ import annotations

SLUG_ANCHOR = '''\
_WORD = re.compile(r"[a-z0-9]+")


def slugify(text: str, *, taken: set[str] | None = None) -> str:
    """Anchor id for a heading: lowercase words joined by '-', unique within `taken`."""
    ascii_text = text.encode("ascii", "ignore").decode("ascii")
    slug = "-".join(_WORD.findall(ascii_text.lower())) or "section"
    if taken is not None:
        slug = _dedupe(slug, taken)
    return slug'''
SLUG_FIXED = '''\
_WORD = re.compile(r"\\w+")


def slugify(text: str, *, taken: set[str] | None = None) -> str:
    """Anchor id for a heading: lowercase words joined by '-', unique within `taken`."""
    normalized = unicodedata.normalize("NFC", text).casefold()
    slug = "-".join(_WORD.findall(normalized)) or "section"
    if taken is not None:
        slug = _dedupe(slug, taken)
    return slug'''

TABLE_ANCHOR = '''\
def _parse_delimiter_row(line: str) -> list[str] | None:
    """The alignments of a table's delimiter row, or None if `line` is not one."""
    aligns: list[str] = []
    for cell in _split_cells(line):
        cell = cell.strip()
        if not _DELIMITER.fullmatch(cell):
            return None
        # TODO: alignment (":---", "---:", ":---:")
        aligns.append("")
    return aligns


def _split_cells(line: str) -> list[str]:
    return line.strip().strip("|").split("|")


def _render_cell(cell: Cell, tag: str) -> str:
    style = f' style="text-align: {cell.attrs["align"]}"' if cell.attrs["align"] else ""
    return f"<{tag}{style}>{cell.html}</{tag}>"'''

TOC_ANCHOR = '''\
def _anchor(title: str) -> str:
    """The fragment a TOC entry links to."""
    return "#" + title.strip().lower().replace(" ", "-").encode("ascii").decode()'''

EMPHASIS_ANCHOR = """\
# Delimiter runs: `*a*`, `**a**`, with escaped stars allowed inside.
_EMPHASIS = re.compile(r"(\\*+)((?:[^*]|\\\\\\*)+)*\\1")"""

OUTPUT_ANCHOR = """\
def _report(written: Sequence[Path], out_dir: Path) -> None:
    for path in written:
        click.echo(f"wrote {str(out_dir / path.name)}")"""

VERSION_FILE = '__version__ = "2.3.1"\n'

JA_DOC = """\
# quillmark ドキュメント

quillmark は CommonMark に準拠した軽量な Markdown パーサーです。
依存ライブラリはなく、Python 3.9 以降で動作します。

## インストール

```
pip install quillmark
```

## 使い方

コマンドラインから `quillmark build docs/` を実行すると、`build/` に HTML が出力されます。
ライブラリとして使う場合は `quillmark.render()` に文字列を渡してください。

## 見出しと目次

見出しには自動的にアンカーが付きます。全角文字の見出し（例：「設定ファイル」）も
そのまま使えます。目次は `[[toc]]` と書いた位置に挿入されます。

### 設定ファイル

`quillmark.toml` をプロジェクトのルートに置くと、次の項目を設定できます。

| 項目 | 説明 | 既定値 |
|:-----|:-----|-------:|
| `toc_depth` | 目次に含める見出しの深さ | 3 |
| `smart_quotes` | 引用符を「」に変換する | false |
| `tables` | 表の拡張を有効にする | true |

### よくある質問

**Q. 見出しのアンカーが空になります。**
A. 2.3.0 以前では ASCII 以外の文字が取り除かれていました。2.4.0 で修正されています。

**Q. Windows でパスの区切り文字が `\\` になります。**
A. 出力されるパスは常に `/` 区切りです。問題があれば issue を立ててください。
"""

SPEC_TEST = '''\
"""The CommonMark spec examples, one test each (tests/fixtures/spec)."""

from __future__ import annotations

import pytest

from quillmark import render
from tests.spec import load_examples


@pytest.mark.parametrize("example", load_examples(), ids=lambda e: f"{e.section}-{e.number}")
def test_spec(example):
    assert render(example.markdown) == example.html
'''

PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "quillmark"
dynamic = ["version"]
description = "CommonMark-compliant Markdown to HTML, with tables, footnotes and a TOC."
requires-python = ">=3.9"
dependencies = ["click>=8.1"]

[project.scripts]
quillmark = "quillmark.cli:main"

[tool.hatch.version]
path = "quillmark/_version.py"

[tool.pytest.ini_options]
addopts = "-ra"
testpaths = ["tests"]

[tool.ruff]
line-length = 100
target-version = "py39"

[tool.mypy]
strict = true
"""

CI_YAML = """\
name: ci
on: [push, pull_request]
jobs:
  test:
    strategy:
      matrix:
        os: [ubuntu-latest, windows-latest, macos-latest]
        python: ["3.9", "3.12"]
    runs-on: ${{ matrix.os }}
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with: {python-version: "${{ matrix.python }}"}
      - run: pip install -e '.[dev]'
      - run: pytest -ra
"""

ANCHOR_TESTS = {
    "parser": (
        """def test_unicode():
    html = render("## Über uns\\n")
    assert html == '<h2 id="über-uns">Über uns</h2>\\n\'""",
    ),
    "toc": (
        """def test_anchor_links():
    toc = render("[[toc]]\\n\\n## Straße\\n")
    assert 'href="#straße"' in toc""",
    ),
    "tables": (
        """def test_alignment():
    html = render("| a | b | c |\\n|:--|:-:|--:|\\n| 1 | 2 | 3 |\\n")
    assert '<td style="text-align: center">2</td>' in html""",
        """def test_escaped_pipe():
    table = parse("| a \\\\| b | c |\\n|---|---|\\n").children[0]
    assert len(table.header.cells) == 2""",
    ),
    "cli": (
        """def test_watch_rebuilds(tmp_path, run_cli):
    (tmp_path / "a.md").write_text("# A\\n")
    with run_cli("build", str(tmp_path), "--watch", "-o", str(tmp_path / "out")) as proc:
        proc.wait_for_line("wrote", timeout=2.0)
        (tmp_path / "a.md").write_text("# B\\n")
        proc.wait_for_line("rebuilt", timeout=2.0)""",
        """def test_output_path(tmp_path, run_cli):
    result = run_cli("build", "docs", "-o", "build")
    assert "wrote build/index.html" in result.output""",
    ),
}
