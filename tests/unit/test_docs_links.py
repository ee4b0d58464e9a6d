"""Every link between the README and the docs reaches a file that exists and, when it names
a section, a heading of that file (as GitHub makes its anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but `-` and `_` left
    out, spaces as `-`; a repeated one numbered."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not t.startswith(("http://", "https://", "mailto:"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_of_a_page_reaches_its_file_and_section(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no such section")
    assert broken == []


def test_the_check_finds_a_broken_section(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n## Its `first` part (2026)\n\nSee [it](#its-first-part-2026).\n")
    assert anchors(page) == {"a-page", "its-first-part-2026"}
    assert links(page) == ["#its-first-part-2026"]
    assert "its-first-part" not in anchors(page)
