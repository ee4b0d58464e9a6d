"""OpenAI chat-completions messages, read as Messages API messages.

A JSON list, an object with `messages` (a request body), or one message per line.
`system` / `developer` messages become the system prompt; an assistant's `tool_calls`, and
the legacy `function_call`, become `tool_use` blocks (their JSON `arguments` the input); a
`refusal` is the reply's text; `tool` messages, and legacy `function` messages, become the
`tool_result` blocks of one user message. A part of another type that holds a string
`text` (`tool_output`, `output_text`, `input_text`, as other tools' exports write them) is
read as text. What could not be carried over (arguments that are not JSON, parts of a kind
the Messages API has no block for) is listed in the notes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from abridged.adapters.importers import (
    FormatError,
    Imported,
    normalize,
    tool_id,
    tool_name,
)
from abridged.domain.messages import JSON

_TEXT_PARTS = ("text", "refusal")
_HIDDEN = re.compile(r"reason|think|summary", re.IGNORECASE)
"""Parts holding the model's reasoning (`reasoning`, `thinking`, a reasoning's
`summary_text`): skipped with a note, not read as what the model said."""


def import_openai(records: Iterable[tuple[int, JSON]], notes: Iterable[str] = ()) -> Imported:
    """OpenAI chat-completions messages; raises `FormatError`."""
    flat: list[tuple[int, JSON]] = []
    for number, record in records:
        if isinstance(record, Mapping) and isinstance(record.get("messages"), list):
            flat.extend((number, m) for m in record["messages"])
        else:
            flat.append((number, record))
    reader = _Reader(list(notes))
    for index, (number, message) in enumerate(flat):
        # A line's messages are named by the line; a document's (a JSON list, a request
        # body) by their index in it.
        reader.where = f"line {number}" if number else f"messages[{index}]"
        reader.read(number, message)
    for kind, (count, first) in reader.read_as_text.items():
        reader.notes.append(
            f"{count} content part(s) of type {kind!r} (the first at {first}) were read as text"
        )
    return normalize(
        reader.raw, system="\n\n".join(reader.system), model=reader.model, notes=reader.notes
    )


class _Reader:
    """The messages read so far, and what the next one may answer."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.system: list[str] = []
        self.raw: list[tuple[int, str, list[JSON]]] = []
        self.model: str | None = None
        self.function_call: str | None = None
        """The id given to the last legacy `function_call`, which a `function` message answers."""
        self.ids: dict[str, str] = {}
        """Each recorded tool call id, and the id in the API's pattern it is given."""
        self.taken: set[str] = set()
        self.where = ""
        """Where the message being read is, for notes and errors."""
        self.read_as_text: dict[str, tuple[int, str]] = {}
        """Parts of a type other than `text` read for their `text`: how many, the first where."""

    def read(self, number: int, message: JSON) -> None:
        if not isinstance(message, Mapping):
            raise self._error(number, "an OpenAI message must be a JSON object")
        role = message.get("role")
        if isinstance(message.get("model"), str) and self.model is None:
            self.model = message["model"]
        if role in ("system", "developer"):
            text = self._text(message.get("content"), number)
            if text.strip():
                self.system.append(text)
        elif role == "user":
            self.raw.append((number, "user", self._parts(message.get("content"), number)))
        elif role == "assistant":
            self.raw.append((number, "assistant", self._assistant(message, number)))
        elif role == "tool":
            tool_call_id = message.get("tool_call_id")
            if not isinstance(tool_call_id, str):
                raise self._error(number, "a tool message needs its 'tool_call_id'")
            self._result(number, self._call_id(tool_call_id), message.get("content"))
        elif role == "function":
            if self.function_call is None:
                self.notes.append(
                    f"a legacy 'function' message ({self.where}) answers no "
                    "'function_call' and was skipped"
                )
            else:
                self._result(number, self.function_call, message.get("content"))
                self.function_call = None
        else:
            raise self._error(number, f"unknown role {role!r}")

    def _error(self, number: int, problem: str) -> FormatError:
        """`problem` at the message being read: its line, else its index (`where`)."""
        return (
            FormatError(number, problem)
            if number
            else FormatError(None, f"{self.where}: {problem}")
        )

    def _result(self, number: int, call_id: str, content: JSON) -> None:
        result: dict[str, JSON] = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": self._text(content, number),
        }
        self.raw.append((number, "user", [result]))

    def _text(self, content: JSON, number: int) -> str:
        if content is None:
            return ""
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            raise self._error(number, "message content must be a string or a list of parts")
        texts = []
        for part in content:
            kind = part.get("type") if isinstance(part, Mapping) else None
            key = "refusal" if kind == "refusal" else "text"
            if kind in _TEXT_PARTS and isinstance(part, Mapping):
                if isinstance(part.get(key), str):
                    texts.append(part[key])
            elif (text := self._other_text(part)) is not None:
                texts.append(text)
            else:
                self._skipped(number, kind)
        return "\n".join(texts)

    def _parts(self, content: JSON, number: int) -> list[JSON]:
        if content is None or isinstance(content, str):
            return [{"type": "text", "text": content or ""}]
        if not isinstance(content, list):
            raise self._error(number, "message content must be a string or a list of parts")
        blocks: list[JSON] = []
        for part in content:
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind == "text" and isinstance(part, Mapping) and isinstance(part.get("text"), str):
                blocks.append({"type": "text", "text": part["text"]})
            elif kind == "image_url" and isinstance(part, Mapping):
                image = part.get("image_url")
                url = image.get("url") if isinstance(image, Mapping) else image
                if isinstance(url, str):
                    blocks.append(_image(url))
                else:
                    self._skipped(number, kind)
            elif (text := self._other_text(part)) is not None:
                blocks.append({"type": "text", "text": text})
            else:
                self._skipped(number, kind)
        return blocks

    def _other_text(self, part: JSON) -> str | None:
        """The `text` of a part of another type that holds one as a string (`tool_output`,
        `output_text`), counted for the notes; None for a part that holds none."""
        if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
            return None
        kind = str(part.get("type", "(no type)"))
        if _HIDDEN.search(kind):
            return None  # the model's reasoning, which the API never shows as its reply
        count, first = self.read_as_text.get(kind, (0, self.where))
        self.read_as_text[kind] = (count + 1, first)
        return str(part["text"])

    def _skipped(self, number: int, kind: object) -> None:
        # Never silently: a conversation missing a part is not the one recorded.
        self.notes.append(f"{self.where}: a content part of type {kind!r} was skipped")

    def _assistant(self, message: Mapping[str, Any], number: int) -> list[JSON]:
        blocks: list[JSON] = []
        text = self._text(message.get("content"), number)
        refusal = message.get("refusal")
        if not text.strip() and isinstance(refusal, str):
            text = refusal  # what the model answered, in the field the API gives refusals
        if text.strip():
            blocks.append({"type": "text", "text": text})
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise self._error(number, "'tool_calls' must be a list")
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            custom = call.get("custom") if isinstance(call, Mapping) else None
            if isinstance(custom, Mapping) and isinstance(call.get("id"), str):
                # A custom tool's call (`type: "custom"`): its input is free text, kept whole
                # under `input`.
                function = {"name": custom.get("name"), "arguments": {"input": custom.get("input")}}
            if not isinstance(function, Mapping) or not isinstance(call.get("id"), str):
                raise self._error(
                    number, "a tool call needs an 'id' and a 'function' (or 'custom')"
                )
            blocks.append(self._tool_use(self._call_id(call["id"], number), function, number))
        legacy = message.get("function_call")
        if isinstance(legacy, Mapping):
            self.function_call = f"function_call_{number}_{len(self.raw)}"
            blocks.append(self._tool_use(self.function_call, legacy, number))
        return blocks

    def _call_id(self, recorded: str, number: int | None = None) -> str:
        """`recorded` in the API's id pattern, distinct from every other recorded id's: two
        ids that read the same once their other characters are `_` (`call:1`, `call_1`)
        would give one call both results, and the other none."""
        if recorded in self.ids:
            return self.ids[recorded]
        if number is None:
            # A result answering no call: never one given to another call's id.
            return recorded if tool_id(recorded) in self.taken else tool_id(recorded)
        new = candidate = tool_id(recorded)
        suffix = 2
        while new in self.taken:
            new, suffix = f"{candidate}_{suffix}", suffix + 1
        if new != candidate:
            self.notes.append(
                f"{self.where}: tool call id {recorded!r} is {new} (another id reads "
                f"{candidate} in the API's characters)"
            )
        self.ids[recorded] = new
        self.taken.add(new)
        return new

    def _tool_use(self, call_id: str, function: Mapping[str, Any], number: int) -> JSON:
        arguments = function.get("arguments")
        tool_input: JSON
        try:
            tool_input = (
                json.loads(arguments, parse_constant=_not_json)
                if isinstance(arguments, str)
                else arguments
            )
        except ValueError:  # a JSONDecodeError, or NaN / Infinity, which JSON does not have
            tool_input = {"arguments": arguments}
            self.notes.append(
                f"{self.where}: the arguments of call {call_id} are not JSON; kept as text "
                "under 'arguments'"
            )
        if tool_input is None:
            tool_input = {}
        if not isinstance(tool_input, Mapping):
            tool_input = {"value": tool_input}
        return {
            "type": "tool_use",
            "id": call_id,
            "name": tool_name(function.get("name")),
            "input": dict(tool_input),
        }


def _not_json(constant: str) -> JSON:
    raise ValueError(f"{constant} is not JSON")


def _image(url: str) -> dict[str, JSON]:
    match = re.match(r"^data:(image/[a-z]+);base64,(.*)$", url, re.DOTALL)
    if match:
        source = {"type": "base64", "media_type": match[1], "data": match[2]}
        return {"type": "image", "source": source}
    return {"type": "image", "source": {"type": "url", "url": url}}
