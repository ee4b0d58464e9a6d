"""The files-read / files-modified footer of a summary, computed from the tool calls."""

from __future__ import annotations

from collections.abc import Sequence

from abridged.domain.framing import LINE_BREAKS
from abridged.domain.messages import Message

PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "target_file")
WRITES = ("edit", "write", "create", "replace", "patch", "insert", "delete", "move", "rename")
READS = ("read", "view", "open", "cat", "show", "get", "find", "search", "grep", "list")
MAX_FILES = 25


def files_footer(messages: Sequence[Message]) -> str:
    """Which files the summarized tool calls read and modified, or "" when none."""
    read: dict[str, None] = {}
    modified: dict[str, None] = {}
    for message in messages:
        for call in message.tool_uses:
            path = next(
                (v for k in PATH_KEYS if isinstance(v := call.input.get(k), str) and v), None
            )
            if path is None or LINE_BREAKS.search(path):
                continue  # a "path" of several lines is not a file's, and could pose as a section
            action = " ".join([call.name.lower(), str(call.input.get("command", "")).lower()])
            if any(w in action for w in WRITES):
                modified[path] = None
            elif any(w in action for w in READS) or path not in modified:
                read[path] = None
    lines = []
    for label, paths in (("Files read", read), ("Files modified", modified)):
        if paths:
            names = list(paths)
            more = f" (and {len(names) - MAX_FILES} more)" if len(names) > MAX_FILES else ""
            lines.append(f"{label}: {', '.join(names[:MAX_FILES])}{more}")
    return "\n".join(lines)
