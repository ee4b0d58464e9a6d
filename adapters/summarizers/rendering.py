"""How items read in a summary: clipped lines, code spans, fences (`fenced`, shared with the
ledger) and Markdown sections."""

from __future__ import annotations

import re
from collections.abc import Sequence

from abridged.adapters.summarizers.items import TITLES, Item
from abridged.domain.framing import LINE_BREAKS, fenced

LINE_CHARS = 300


def clip_line(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def one_line(text: str, limit: int) -> str:
    lines = text.strip().splitlines() or [""]
    first = lines[0].strip()
    if len(lines) > 1:
        first += " …"
    return first if len(first) <= limit else first[: limit - 1] + "…"


def code_span(text: str) -> str:
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def render_request(text: str) -> str:
    """A request as a bullet, or fenced when it has several lines for any reader (a `\r`,
    a form feed or U+2028 ends a line too: none may start a heading of its own)."""
    return f"- {text}" if not LINE_BREAKS.search(text) else fenced(text)


def render_error(label: str, text: str) -> str:
    """An error line after the tool's label, or the error fenced below it (`render_request`)."""
    return f"- {label}: {text}" if not LINE_BREAKS.search(text) else f"- {label}:\n{fenced(text)}"


def head(text: str, max_chars: int) -> str:
    """`text` cut to about `max_chars`, its beginning kept, with a marker where it was cut."""
    marker = " … [truncated]"
    if len(text) <= max_chars:
        return text
    return text[: max(1, max_chars - len(marker))].rstrip() + marker


def render_sections(focus_line: str, chosen: Sequence[Item]) -> str:
    """The summary text: the focus line, then one `## title` section per non-empty section,
    its items in order of first appearance."""
    parts = [focus_line] if focus_line else []
    for section, title in enumerate(TITLES):
        lines = [
            item.text
            for item in sorted((i for i in chosen if i.section == section), key=lambda i: i.order)
        ]
        if lines:
            parts.append(f"## {title}\n" + "\n".join(lines))
    return "\n\n".join(parts)
