"""The attachments of a Claude Code log whose content Claude Code sends the model, read as
user text (`abridged.adapters.claude_code`).

Claude Code writes what it adds to a turn beside the user's words as `attachment` entries:
a prompt typed while the agent worked (`queued_command`), a file the user named with `@`
(`file`), the lines of a file edited outside the agent (`edited_text_file`), the lines
selected in an IDE, a folder's `CLAUDE.md` (`nested_memory`), the plan file, a folder's
listing, what a hook added. It sends each to the model inside a reminder of its own wording,
which the log does not hold: a queued prompt is read as the user wrote it, the others as
their content after a line that names the kind and the file. Attachments that carry no
content (a reminder to use the todo list, a list of skills, a notice that a file is too
large) are left out."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from abridged.domain.messages import JSON

QUEUED = "queued_command"


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _file(a: Mapping[str, JSON]) -> str | None:
    content = a.get("content")
    inner = content.get("file") if isinstance(content, Mapping) else None
    return _text(inner.get("content")) if isinstance(inner, Mapping) else None


def _lines(a: Mapping[str, JSON]) -> str | None:
    content = a.get("content")
    if isinstance(content, list):
        return _text("\n".join(c for c in content if isinstance(c, str)))
    return _text(content)


CONTENT: Mapping[str, tuple[str, Callable[[Mapping[str, JSON]], str | None]]] = {
    "file": ("filename", _file),
    "edited_text_file": ("filename", lambda a: _text(a.get("snippet"))),
    "selected_lines_in_ide": ("filename", lambda a: _text(a.get("content"))),
    "nested_memory": ("path", lambda a: _text(a.get("content"))),
    "plan_file_reference": ("planFilePath", lambda a: _text(a.get("planContent"))),
    "directory": ("path", lambda a: _text(a.get("content"))),
    "hook_additional_context": ("hookName", _lines),
}
"""Each attachment kind read, with the field that names its file (or hook) and how its
content is found."""


def attachment_blocks(attachment: JSON) -> tuple[str, list[JSON]] | None:
    """The kind of an attachment Claude Code sends the model and the blocks it is read as;
    None for an attachment of another kind, or with nothing to read."""
    if not isinstance(attachment, Mapping):
        return None
    kind = attachment.get("type")
    if kind == QUEUED:
        prompt = attachment.get("prompt")
        if isinstance(prompt, str):
            return (QUEUED, [{"type": "text", "text": prompt}]) if prompt.strip() else None
        if not isinstance(prompt, list):
            return None
        blocks = [
            b for b in prompt if isinstance(b, Mapping) and b.get("type") in ("text", "image")
        ]
        return (QUEUED, list(blocks)) if blocks else None
    if not isinstance(kind, str) or kind not in CONTENT:
        return None
    name_field, content_of = CONTENT[kind]
    text = content_of(attachment)
    if text is None:
        return None
    name = attachment.get(name_field)
    head = f"[{kind}: {name}]" if isinstance(name, str) and name else f"[{kind}]"
    return kind, [{"type": "text", "text": f"{head}\n{text}"}]
