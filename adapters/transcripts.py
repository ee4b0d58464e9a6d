"""Recorded transcripts: one Messages API message per line, with an optional sidecar meta file.

Claude Code session logs and OpenAI chat-completions messages are read too
(`abridged.adapters.importers`), chosen by `format` or detected from the content.

A transcript `X.jsonl` holds one JSON message per line (`{"role": ..., "content": ...}`);
beside it, `X.meta.json` may give the `system` prompt, the `model` and the `tools` the agent
had (Anthropic shape, or OpenAI function shape, which is converted). Only the syntax of each
line is checked here: whether the conversation is a valid request is the session's to say.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import attrs

from abridged.adapters.claude_code import import_claude_code
from abridged.adapters.compressed import base_name, open_binary
from abridged.adapters.foreign_formats import READ, foreign_format
from abridged.adapters.importers import (
    FORMATS,
    FormatError,
    Imported,
    cut_short_note,
    detect_format,
    import_anthropic,
    normalize,
    read_records,
)
from abridged.adapters.openai_chat import import_openai
from abridged.adapters.recorded import refused_as_recorded
from abridged.domain.errors import InvalidMessageError
from abridged.domain.inputs import DEFAULT_MAX_MESSAGE_BYTES, first_invalid
from abridged.domain.messages import JSON, Message

PERMISSIVE_SCHEMA: Mapping[str, JSON] = {"type": "object", "additionalProperties": True}
"""The input schema given to a tool the transcript used but never defined."""


class TranscriptError(ValueError):
    """A transcript or its meta file cannot be read; the message names the file and line."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = path if line is None else f"{path} line {line}"
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


def _no_blank(text: str) -> str:
    return text if text.strip() else ""  # white space alone is no prompt: the API refuses it


@attrs.frozen
class Transcript:
    """A recorded conversation, ready to replay: its tools cover every tool it calls."""

    messages: tuple[Message, ...]
    system: str = attrs.field(converter=_no_blank)
    tools: tuple[Mapping[str, JSON], ...] = attrs.field(hash=False)
    model: str | None
    source: str
    line_numbers: tuple[int, ...] = ()
    """The 1-based line of each message in `source`; empty when the transcript was generated."""
    notes: tuple[str, ...] = ()
    """What importing from another format changed to make a valid conversation."""


def check_conversation(transcript: Transcript, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
    """Raises `TranscriptError` naming the first message a session taking messages of up to
    `max_bytes` would refuse (by its line, or its number in a generated transcript)."""
    found = first_invalid(transcript.messages, max_bytes)
    if found is None:
        return
    index, error = found
    if transcript.line_numbers:
        raise TranscriptError(transcript.source, transcript.line_numbers[index], str(error))
    raise TranscriptError(transcript.source, None, f"message {index + 1}: {error}")


def load_transcript(
    path: Path | str,
    format: str = "auto",
    progress: Callable[[int], None] | None = None,
    *,
    source: str | None = None,
) -> Transcript:
    """Read a transcript file and the `.meta.json` beside it, if any; raises `TranscriptError`.

    `format` is `abridged` (one Messages API message per line), `claude-code` (a Claude Code
    session log), `openai` (chat-completions messages) or `auto`: detected from the content.
    `progress`, when given, is called with the bytes of each line as the file is read.
    `source` names the transcript in errors and reports (by default, its path).
    """
    path = Path(path)
    source = source or str(path)
    if format not in ("auto", *FORMATS):
        raise TranscriptError(
            source, None, f"unknown format {format!r}; choose auto, {', '.join(FORMATS)}"
        )
    meta_path = path.with_name(f"{Path(base_name(path)).stem}.meta.json") if path.name else None
    meta = _read_meta(meta_path) if meta_path and meta_path.is_file() else None
    if format != "abridged":
        imported = _import(path, source, format, progress)
        if imported is not None:
            return _from_imported(imported, source, meta, str(meta_path))
        progress = None  # read once already: the second reading is the shorter
    with _file_errors(source), open_binary(path) as stream:
        return _parse(
            _decoded_lines(stream, source, progress),
            source,
            meta,
            meta_source=str(meta_path),
            notes=[],
        )


def _import(
    path: Path, source: str, format: str, advance: Callable[[int], None] | None = None
) -> Imported | None:
    """The conversation in another tool's format, or `None` when it is abridged's own."""
    notes: list[str] = []
    try:
        with _file_errors(source):
            records = _streamed_records(path, source, notes, advance)
            if records is None:
                records = read_records(_whole_text(path, source), notes)
        chosen = detect_format(records) if format == "auto" else format
        foreign = foreign_format(records, chosen) if format == "auto" else None
        if foreign is not None:
            line, name = foreign
            raise FormatError(line or None, f"this is {name}, not read here: {READ}")
        if chosen == "claude-code":
            return import_claude_code(records, notes)
        if chosen == "openai":
            return import_openai(records, notes)
        if chosen == "anthropic":
            return import_anthropic(records, notes)
    except FormatError as error:
        raise TranscriptError(source, error.line, error.problem) from None
    except RecursionError:
        raise TranscriptError(source, None, "JSON nested too deeply to read") from None
    return None


def _streamed_records(
    path: Path, source: str, notes: list[str], advance: Callable[[int], None] | None
) -> list[tuple[int, JSON]] | None:
    """The file's records read line by line, as `read_records` reads them from the whole
    text; `None` for a file that is one JSON document (it starts with `[`, or its first line
    is an unfinished `{`) or has a line too long to read as one, which is read whole.

    A 50 MB log read whole was held three or four times over at once (its bytes, its text,
    four bytes a character when one character needs it, a stripped copy and its lines)
    beside the records parsed from it; line by line, only the records stay."""
    records: list[tuple[int, JSON]] = []
    read = 0
    started = False
    with open_binary(path) as stream:
        for number, raw in enumerate(_bounded_lines(stream), start=1):
            if len(raw) > MAX_LINE_BYTES:
                if number == 1:
                    raise TranscriptError(
                        source, 1, f"longer than {MAX_LINE_BYTES:,} bytes; not a transcript line"
                    )
                return None
            if read + len(raw) > MAX_TRANSCRIPT_BYTES:
                raise TranscriptError(source, None, f"larger than {MAX_TRANSCRIPT_BYTES:,} bytes")
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise TranscriptError(
                    source, number, f"not UTF-8 (byte {read + error.start + 1}: {error.reason})"
                ) from None
            read += len(raw)
            if advance is not None:
                advance(len(raw))
            if not line.strip():
                continue
            if not started and line.lstrip().startswith("["):
                return None
            started = True
            try:
                records.append((number, json.loads(line)))
            except json.JSONDecodeError as error:
                if number == 1 and line.lstrip().startswith("{"):
                    return None
                if not raw.endswith(b"\n") and records:
                    notes.append(cut_short_note(number))
                    break
                raise FormatError(number, f"not valid JSON ({error.msg})") from None
    return records


def _whole_text(path: Path, source: str) -> str:
    raw = _bounded_read(path, source)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise TranscriptError(
            source, line, f"not UTF-8 (byte {error.start + 1}: {error.reason})"
        ) from None


def _from_imported(
    imported: Imported, source: str, meta: Mapping[str, JSON] | None, meta_source: str
) -> Transcript:
    meta = meta or {}
    defined = meta.get("tools") or imported.tools
    if not meta.get("tools"):
        meta_source = source  # the tools are the record's own (a request body's)
    if not isinstance(defined, Sequence) or isinstance(defined, str | bytes):
        raise TranscriptError(meta_source, None, "'tools' must be a list of tool definitions")
    system = meta.get("system")
    model = meta.get("model")
    return Transcript(
        messages=imported.messages,
        system=system if isinstance(system, str) else imported.system,
        tools=_complete_tools(imported.messages, _convert_tools(defined, meta_source)),
        model=model if isinstance(model, str) else imported.model,
        source=source,
        line_numbers=imported.line_numbers if all(imported.line_numbers) else (),
        notes=imported.notes,
    )


def parse_transcript(
    lines: Iterable[str], *, source: str = "<input>", meta: Mapping[str, JSON] | None = None
) -> Transcript:
    """Parse transcript lines (blank ones skipped) and optional meta; raises `TranscriptError`."""
    return _parse(enumerate(lines, start=1), source, meta, meta_source=f"{source} (meta)")


def tools_for(
    messages: Sequence[Message], defined: Sequence[Mapping[str, JSON]] = ()
) -> tuple[dict[str, JSON], ...]:
    """Tool definitions for `messages`: `defined` first, in Anthropic shape, then one
    permissive definition per tool the messages call but `defined` lacks."""
    return _complete_tools(messages, _convert_tools(defined, "<tools>"))


def _parse(
    numbered_lines: Iterable[tuple[int, str]],
    source: str,
    meta: Mapping[str, JSON] | None,
    *,
    meta_source: str,
    notes: list[str] | None = None,
) -> Transcript:
    """`notes`, when given, is where a last line cut short is noted (and the line skipped):
    lines read from a file end with their line break, but for the last one."""
    numbered = tuple(_messages(numbered_lines, source, notes))
    if not numbered:
        raise TranscriptError(source, None, "holds no messages (every line is blank)")
    numbered, notes = _made_valid(numbered, source, list(notes or ()))
    messages = tuple(message for _, message in numbered)
    meta = meta or {}
    if not isinstance(meta, Mapping):
        raise TranscriptError(meta_source, None, "must be a JSON object")
    system = meta.get("system")
    model = meta.get("model")
    defined = meta.get("tools") or ()
    if not isinstance(defined, Sequence) or isinstance(defined, str | bytes):
        raise TranscriptError(meta_source, None, "'tools' must be a list of tool definitions")
    return Transcript(
        messages=messages,
        # Some sources store the system prompt as a structure; only a plain string is a prompt.
        system=system if isinstance(system, str) else "",
        tools=_complete_tools(messages, _convert_tools(defined, meta_source)),
        model=model if isinstance(model, str) else None,
        source=source,
        line_numbers=tuple(number for number, _ in numbered),
        notes=tuple(notes or ()),
    )


def _made_valid(
    numbered: tuple[tuple[int, Message], ...], source: str, notes: list[str]
) -> tuple[tuple[tuple[int, Message], ...], list[str]]:
    """`numbered` as it is, or, where the API takes it and a session would not (two user
    messages in a row, a first message that is a reply, a tool call id used again: recorded
    traffic has all three), made valid as an import is (`normalize`), with notes."""
    if not refused_as_recorded([m for _, m in numbered]):
        return numbered, notes
    raw = [(n, m.role.value, list(m.to_wire()["content"])) for n, m in numbered]
    try:
        imported = normalize(raw, notes=notes)
    except FormatError as error:
        raise TranscriptError(source, error.line, error.problem) from None
    return tuple(zip(imported.line_numbers, imported.messages, strict=True)), list(imported.notes)


def _messages(
    numbered_lines: Iterable[tuple[int, str]], source: str, notes: list[str] | None
) -> Iterable[tuple[int, Message]]:
    for number, line in numbered_lines:
        if not line.strip():
            continue
        try:
            wire = json.loads(line)
        except json.JSONDecodeError as error:
            if notes is not None and not line.endswith("\n") and number > 1:
                notes.append(cut_short_note(number))
                return
            raise TranscriptError(
                source, number, f"not valid JSON ({error.msg} at column {error.colno})"
            ) from None
        except RecursionError:
            raise TranscriptError(source, number, "JSON nested too deeply to read") from None
        try:
            yield number, Message.from_wire(wire)
        except InvalidMessageError as error:
            raise TranscriptError(source, number, str(error)) from None


MAX_LINE_BYTES = 32_000_000
"""The longest transcript line read (the API's request limit): a longer one, or a file with no
line breaks such as /dev/zero, is an error rather than a read without end."""


MAX_TRANSCRIPT_BYTES = 2_000_000_000
"""The largest transcript file read whole (to detect and import another tool's format)."""


@contextmanager
def _file_errors(source: str) -> Iterator[None]:
    """Around opening or reading the transcript file: what the system says, as a
    `TranscriptError`."""
    try:
        yield
    except FileNotFoundError:
        raise TranscriptError(source, None, "no such file") from None
    except IsADirectoryError:
        raise TranscriptError(source, None, "is a directory, not a transcript file") from None
    except OSError as error:
        raise TranscriptError(source, None, f"cannot be read ({error.strerror})") from None


def _bounded_read(path: Path, source: str) -> bytes:
    """The file's bytes, refusing a first line longer than `MAX_LINE_BYTES` or a file larger
    than `MAX_TRANSCRIPT_BYTES` before reading on (a device such as /dev/zero never ends)."""
    with open_binary(path) as stream:
        first = stream.readline(MAX_LINE_BYTES + 1)
        if len(first) > MAX_LINE_BYTES:
            raise TranscriptError(
                source, 1, f"longer than {MAX_LINE_BYTES:,} bytes; not a transcript line"
            )
        rest = stream.read(MAX_TRANSCRIPT_BYTES + 1 - len(first))
    raw = first + rest
    if len(raw) > MAX_TRANSCRIPT_BYTES:
        raise TranscriptError(source, None, f"larger than {MAX_TRANSCRIPT_BYTES:,} bytes")
    return raw


def _bounded_lines(stream: BinaryIO) -> Iterable[bytes]:
    while raw := stream.readline(MAX_LINE_BYTES + 1):
        yield raw


def _decoded_lines(
    stream: BinaryIO, source: str, advance: Callable[[int], None] | None = None
) -> Iterable[tuple[int, str]]:
    # Split on b"\n" only: a JSON string may hold U+2028 and similar, which str.splitlines
    # would take for line breaks.
    for number, raw in enumerate(_bounded_lines(stream), start=1):
        if advance is not None:
            advance(len(raw))
        if len(raw) > MAX_LINE_BYTES:
            raise TranscriptError(
                source, number, f"longer than {MAX_LINE_BYTES:,} bytes; not a transcript line"
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TranscriptError(
                source, number, f"not UTF-8 (byte {error.start + 1}: {error.reason})"
            ) from None
        yield number, text.removeprefix("\ufeff") if number == 1 else text


def _read_meta(meta_path: Path) -> Mapping[str, JSON]:
    source = str(meta_path)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as error:
        raise TranscriptError(
            source, error.lineno, f"not valid JSON ({error.msg} at column {error.colno})"
        ) from None
    except UnicodeDecodeError as error:
        raise TranscriptError(source, None, f"not UTF-8 ({error.reason})") from None
    except OSError as error:
        raise TranscriptError(source, None, f"cannot be read ({error.strerror})") from None
    if not isinstance(meta, Mapping):
        raise TranscriptError(source, None, "must be a JSON object")
    return meta


def _convert_tools(defined: Sequence[JSON], source: str) -> tuple[dict[str, JSON], ...]:
    return tuple(_anthropic_tool(tool, index, source) for index, tool in enumerate(defined))


def _anthropic_tool(tool: JSON, index: int, source: str) -> dict[str, JSON]:
    """One definition in Anthropic's shape, from Anthropic's or OpenAI's function shape."""
    if isinstance(tool, Mapping) and isinstance(tool.get("function"), Mapping):
        tool = tool["function"]
    name = tool.get("name") if isinstance(tool, Mapping) else None
    if not isinstance(tool, Mapping) or not isinstance(name, str) or not name:
        raise TranscriptError(
            source, None, f"tools[{index}] is not a tool definition (it needs a string 'name')"
        )
    schema = tool.get("input_schema", tool.get("parameters"))
    if schema is None:
        schema = dict(PERMISSIVE_SCHEMA)
    if not isinstance(schema, Mapping):
        raise TranscriptError(
            source, None, f"tools[{index}] ({name!r}) has an input schema that is not an object"
        )
    converted: dict[str, JSON] = {"name": name}
    description = tool.get("description")
    if isinstance(description, str) and description:
        converted["description"] = description
    converted["input_schema"] = dict(schema)
    return converted


def _complete_tools(
    messages: Sequence[Message], defined: Sequence[dict[str, JSON]]
) -> tuple[dict[str, JSON], ...]:
    tools: dict[str, dict[str, JSON]] = {}
    for tool in defined:
        tools.setdefault(tool["name"], tool)
    for message in messages:
        for use in message.tool_uses:
            if use.name not in tools:
                tools[use.name] = {
                    "name": use.name,
                    "description": (
                        f"The {use.name!r} tool the recorded agent called; "
                        "its definition was not recorded."
                    ),
                    "input_schema": dict(PERMISSIVE_SCHEMA),
                }
    return tuple(tools.values())
