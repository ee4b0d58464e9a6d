"""Walking the messages into items: requests, errors, files, commands and decisions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from abridged.adapters.summarizers.earlier import Entry, read_summary
from abridged.adapters.summarizers.errors import clip_error, error_snippets, first_error_line
from abridged.adapters.summarizers.items import (
    COMMANDS,
    DECISIONS,
    EARLIER,
    ERRORS,
    FILES,
    REQUESTS,
    Item,
)
from abridged.adapters.summarizers.paths import PATH_KEYS, input_paths, paths_in_word
from abridged.adapters.summarizers.rendering import (
    code_span,
    one_line,
    render_error,
    render_request,
)
from abridged.domain.framing import fenced
from abridged.domain.messages import (
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from abridged.domain.reply_shapes import compaction_summary
from abridged.domain.tokens import canonical_json

# Caps on what is gathered: selection prefers recent items, so older ones beyond these would
# never make it into a summary anyway, and the caps keep a huge range fast.
_MAX_ERRORS = 200
_MAX_FILES = 300
_MAX_COMMANDS = 300
_MAX_DECISIONS = 300
_COMMAND_CHARS = 200
_DECISION_CHARS = 240

_COMMAND_KEYS = ("command", "cmd", "cmdline", "script")
_SHELL_WORDS = frozenset(
    {"bash", "sh", "zsh", "shell", "run", "exec", "execute", "terminal", "cmd", "powershell"}
)
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

_DECISION = re.compile(
    r"(?i)\b(?:decid\w*|decision|will|I'll|we'll|going to|need to|instead|because|plan\w*|fix\w*|"
    r"root cause|conclu\w*|approach|solution)\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_BULLET = re.compile(r"^(?:[-*+>#]+|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")


def extract(messages: Sequence[Message], earlier: Sequence[str] = ()) -> list[Item]:
    """Everything worth keeping, as items tagged with their section and first appearance.

    `earlier` are the texts of earlier summary chunks being folded, first: read back when
    this summarizer wrote them, else kept whole under `Earlier summaries`. Only a user
    prompt's text (a user message answering no tool call) is a request; text a host attaches
    next to tool results is tool output, and no message text is ever read as a summary."""
    extractor = _Extractor()
    for text in earlier:
        extractor.order += 1
        extractor.add_earlier(text)
    for message in messages:
        prompt = message.is_user_prompt
        for block in message.content:
            extractor.order += 1
            if isinstance(block, TextBlock):
                if message.role is Role.USER and not prompt:
                    extractor.add_attached(block.text)
                else:
                    extractor.add_text(message.role, block.text)
            elif isinstance(block, ToolUseBlock):
                extractor.add_tool_use(block)
            elif isinstance(block, ToolResultBlock):
                extractor.add_tool_result(block)
            elif (summary := compaction_summary(block)) is not None:
                # The API's summary of what came before (a history the client compacted
                # with the API): its facts are the conversation's, read as the model's text.
                extractor.add_text(Role.ASSISTANT, summary)
    return extractor.items()


class _Extractor:
    """Gathers candidates block by block, deduplicated, each with where it first appeared."""

    def __init__(self) -> None:
        self.order = 0
        self._requests: dict[str, int] = {}
        self._errors: dict[str, tuple[int, str]] = {}
        self._files: dict[str, tuple[int, bool]] = {}
        self._commands: list[tuple[int, str, str]] = []
        self._carried_commands: list[tuple[int, str, str]] = []
        self._decisions: dict[str, tuple[int, str]] = {}
        self._earlier: dict[str, int] = {}
        self._tool_names: dict[str, str] = {}
        self._outcomes: dict[str, str] = {}
        self._word_paths: dict[str, tuple[str, ...]] = {}

    def add_text(self, role: Role, raw: str) -> None:
        text = raw.strip()
        if not text:
            return
        if role is Role.USER:
            self._requests.setdefault(text, self.order)
            return
        for sentence in _decision_sentences(text):
            self._decisions.setdefault(sentence.lower(), (self.order, sentence))

    def add_earlier(self, raw: str) -> None:
        """An earlier chunk's text, given out of band by the service."""
        text = raw.strip()
        if not text:
            return
        carried = read_summary(text)
        if carried is None:
            self._earlier.setdefault(text, self.order)
        else:
            self._carry(carried)

    def add_attached(self, raw: str) -> None:
        """Text a host put next to tool results (a fetched page, a file): its error lines
        and paths are kept as a tool output's are; it is never a request."""
        if raw.strip():
            self.add_tool_result(ToolResultBlock("attached", raw))

    def add_tool_use(self, block: ToolUseBlock) -> None:
        self._tool_names[block.id] = block.name
        self._add_files(input_paths(block.input), from_input=True)
        command = _command_text(block)
        if command is not None:
            self._commands.append((self.order, block.id, command))

    def add_tool_result(self, block: ToolResultBlock) -> None:
        name = self._tool_names.get(
            block.tool_use_id, "attached text" if block.tool_use_id == "attached" else "tool"
        )
        output = block.text
        if len(self._files) < _MAX_FILES:
            self._add_files(self._paths_in(output), from_input=False)
        if block.is_error:
            snippets = [clip_error(output)] if output.strip() else []
            label = f"{name} (failed)"
        else:
            snippets = error_snippets(output)
            label = name
        for snippet in snippets:
            self._errors.setdefault(snippet, (self.order, label))
        if block.is_error:
            self._outcomes[block.tool_use_id] = "error: " + first_error_line(
                output, error_snippets(output)
            )
        elif snippets:
            self._outcomes[block.tool_use_id] = "error: " + first_error_line(output, snippets)
        else:
            self._outcomes[block.tool_use_id] = "ok"

    def _carry(self, entries: Iterable[Entry]) -> None:
        """Takes the items of an earlier summary as if they had been seen in its place."""
        for entry in entries:
            self.order += 1
            if entry.section == REQUESTS:
                self._requests.setdefault(entry.text, self.order)
            elif entry.section == ERRORS:
                self._errors.setdefault(entry.text, (self.order, entry.detail))
            elif entry.section == FILES:
                # It was listed, so it is kept like a path a tool call named.
                self._add_files([entry.text], from_input=True)
            elif entry.section == COMMANDS:
                self._carried_commands.append((self.order, entry.text, entry.detail))
            elif entry.section == EARLIER:
                self._earlier.setdefault(entry.text, self.order)
            else:
                self._decisions.setdefault(entry.text.lower(), (self.order, entry.text))

    def _paths_in(self, text: str) -> Iterator[str]:
        # Tool outputs repeat the same words (listings, logs), so each word is parsed once.
        for word in text.split():
            if "/" in word or "." in word:
                paths = self._word_paths.get(word)
                if paths is None:
                    paths = self._word_paths[word] = tuple(paths_in_word(word))
                yield from paths

    def _add_files(self, paths: Iterable[str], *, from_input: bool) -> None:
        for path in paths:
            known = self._files.get(path)
            if known is None:
                if len(self._files) < _MAX_FILES:
                    self._files[path] = (len(self._files), from_input)
            elif from_input and not known[1]:
                self._files[path] = (known[0], True)

    def items(self) -> list[Item]:
        items = [
            Item(REQUESTS, at, render_request(text), text, truncatable=True)
            for text, at in self._requests.items()
        ]
        errors = sorted((at, label, text) for text, (at, label) in self._errors.items())
        items.extend(
            Item(ERRORS, at, render_error(label, text), f"{label}: {text}")
            for at, label, text in errors[-_MAX_ERRORS:]
        )
        items.extend(
            Item(FILES, at, f"- {path}", path, preferred=from_input)
            for path, (at, from_input) in self._files.items()
        )
        commands = [
            (at, command, self._outcomes.get(tool_use_id, "no result recorded"))
            for at, tool_use_id, command in self._commands
        ]
        if self._carried_commands:
            commands = sorted([*self._carried_commands, *commands])
        for at, command, outcome in commands[-_MAX_COMMANDS:]:
            rendered = f"- {code_span(command)} → {outcome}"
            items.append(Item(COMMANDS, at, rendered, f"{command} → {outcome}"))
        items.extend(
            Item(EARLIER, at, fenced(text), text, truncatable=True)
            for text, at in self._earlier.items()
        )
        decisions = sorted(self._decisions.values())
        items.extend(
            Item(DECISIONS, at, f"- {sentence}", sentence)
            for at, sentence in decisions[-_MAX_DECISIONS:]
        )
        return items


def _command_text(block: ToolUseBlock) -> str | None:
    """The command a tool call runs, or None when the call is not a command."""
    words = {w.lower() for w in _NAME_WORDS.findall(block.name)}
    shell_named = bool(words & _SHELL_WORDS)
    for key in _COMMAND_KEYS:
        value = block.input.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = " ".join(value)
        if isinstance(value, str) and value.strip():
            # Editor tools use "command" for an action ("view") next to a path: not a command.
            if shell_named or not (PATH_KEYS & set(block.input)):
                return one_line(value, _COMMAND_CHARS)
            return None
    if not shell_named:
        return None
    for value in block.input.values():
        if isinstance(value, str) and value.strip():
            return one_line(f"{block.name} {value}", _COMMAND_CHARS)
    return one_line(f"{block.name} {canonical_json(dict(block.input))}", _COMMAND_CHARS)


def _decision_sentences(text: str) -> Iterator[str]:
    prose: list[str] = []
    in_code = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
        elif not in_code:
            prose.append(line)
    for paragraph in prose:
        for raw in _SENTENCE_END.split(paragraph):
            sentence = _BULLET.sub("", raw.strip()).strip()
            if len(sentence) >= 15 and _DECISION.search(sentence):
                yield one_line(sentence, _DECISION_CHARS)
