"""Stored text made safe to print on a terminal.

A session's text comes from users, models and tools, and so from whoever wrote a fetched page
or a file. Printed raw, its control characters are instructions to the terminal: escape
sequences that set the clipboard (OSC 52), make links, retitle the window or clear the
screen, and bidirectional overrides that show text in another order than it is. Every command
that prints stored text as text passes it through `printable`; JSON output goes through
`printable_json`, whose escapes a script decodes back to the same text.
"""

from __future__ import annotations

import re

import click

__all__ = ["printable", "printable_json", "safe_echo"]

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional controls.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# What JSON (with ensure_ascii=False) leaves raw: DEL, C1 and the bidirectional controls.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_UNSAFE_IN_LINE = re.compile(f"[\t\n{_UNSAFE.pattern[1:-1]}]")


def printable(text: str, *, one_line: bool = False) -> str:
    """`text` with every control character shown as its escape (`\\x1b`), so none reaches the
    terminal; tabs and line breaks stay, unless it is to print as `one_line`."""
    return (_UNSAFE_IN_LINE if one_line else _UNSAFE).sub(_escaped, text)


def printable_json(text: str) -> str:
    """A JSON document (from `json.dumps(..., ensure_ascii=False)`) with the characters it left
    raw that a terminal acts on written as JSON escapes (`\\u009b`): the same JSON value."""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def safe_echo(
    text: str, *, json_line: bool = False, one_line: bool = False, err: bool = False
) -> None:
    """`click.echo` of stored text, made printable (`printable`, or `printable_json`)."""
    click.echo(printable_json(text) if json_line else printable(text, one_line=one_line), err=err)
