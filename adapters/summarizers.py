"""Summarizers: the `Summarizer` port.

`ExtractiveSummarizer` writes no prose: it pulls out of the messages what an agent needs later
(the user's requests, errors, files, commands and decisions) and fits them to the budget by
priority. It needs no model and no network, so it always works, and the same messages always
give the same summary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from abridged.application.ports import MIN_SUMMARY_TOKENS, SummarizerError, Summary
from abridged.domain.messages import Message, Role, TextBlock, ToolResultBlock, ToolUseBlock
from abridged.domain.tokens import canonical_json, message_tokens

if TYPE_CHECKING:
    from abridged.application.ports import TokenCounter

"""Below this a summary cannot say anything useful, so `summarize` refuses."""

_REQUESTS, _ERRORS, _FILES, _COMMANDS, _DECISIONS = range(5)
_TITLES = ("User requests", "Errors", "Files", "Commands", "Decisions")

# Caps on what is gathered: selection prefers recent items, so older ones beyond these would
# never make it into a summary anyway, and the caps keep a huge range fast.
_MAX_ERRORS = 200
_MAX_FILES = 300
_MAX_COMMANDS = 300
_MAX_DECISIONS = 300
_ERROR_SNIPPETS_PER_OUTPUT = 5
_LINE_CHARS = 300
_COMMAND_CHARS = 200
_OUTCOME_CHARS = 200
_DECISION_CHARS = 240
_ERROR_HEAD_LINES = 3
_ERROR_TAIL_LINES = 12
_SAMPLE_CHARS = 65_536
_FIT_ATTEMPTS = 6
_REQUEST_SHARE = 0.5
_MIN_CUT_CHARS = 24

# Cheap substring checks first: the regular expressions below only see lines holding one.
_ERROR_HINTS = (
    "error",
    "exception",
    "fail",
    "traceback",
    "fatal",
    "panic",
    "exit",
    "returncode",
    "return code",
    "not found",
    "no such file",
    "denied",
    "segmentation",
)
_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):")
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception)\b|(?i:error|fatal|panic)\b|FAIL(?:ED)?\b)"
    r"|^E\s+.*(?:Error|Exception)\b"
    r"|(?i:\berror(?:\[\w+\])?:)"
    r"|(?i:\bexception\b)"
    r"|\bFAILED\b|\bERROR\b"
    r"|\*\*\*.*\bError \d+"
    r"|(?i:command not found|no such file or directory|permission denied|segmentation fault)"
)
_EXIT_CODE = re.compile(
    r"(?i)\b(?:exit(?:ed)?(?:\s+with)?(?:\s+(?:code|status))?|exit_code|returncode|return code)"
    r"\s*[:=]?\s*(-?\d+)"
)
# Source code that merely mentions errors (file listings, diffs, grep hits) is not an error.
_CODE_LINE = re.compile(
    r"^\s*\d+\t"
    # Optionally behind a listing's line number ("1480:", "12 +"), a line of source code.
    r"|^\s*(?:\d+\s*[:|]?\s*[-+]?\s*)?(?:raise|except|catch|throw|throws|class|def|fn|func|"
    r"import|from|return|if|elif|assert|try|new|let|const|var|pub|#|//|/\*|\*)(?:\b|\s|$)"
    r"|^\s*\d+\s*[-+]\s"
    r"|(?:Error|Exception)\("
)

_PATH = re.compile(
    r"(?<![\w.:/@+~\-])"
    r"(?:(?:~|\.{1,2})?/?[\w@+\-][\w.@+\-]*(?:/[\w.@+\-]+)+"
    # A bare name needs a known extension and at most one other dot, so that dotted module
    # names ("django.core.serializers.json") are not taken for files.
    r"|[\w@+\-]+(?:\.[\w@+\-]+)?\.(?:py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|md|rst|txt|json|"
    r"jsonl|yaml|yml|toml|cfg|ini|lock|rs|go|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|sh|"
    r"bash|zsh|ps1|sql|html|htm|css|scss|vue|svelte|xml|csv|tsv|proto|graphql|tf|gradle|mk|"
    r"cmake|pony|exs|erl|hs|lua|jl|dart|zig|plist|sqlite)(?![\w@+\-]|\.\w))"
)
_EXTENSION = re.compile(r"\.[A-Za-z][\w\-]{0,9}$")
_PATH_KEYS = frozenset(
    {
        "path",
        "paths",
        "file",
        "files",
        "file_path",
        "filepath",
        "filename",
        "file_name",
        "notebook_path",
        "dir",
        "directory",
    }
)
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
_FOCUS_WORD = re.compile(r"[\w./\-]{3,}")
_FOCUS_STOPWORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "about",
        "focus",
        "keep",
        "what",
        "only",
        "please",
        "summary",
        "summarize",
        "into",
        "on",
        "any",
        "all",
        "are",
        "was",
        "were",
    }
)


@attrs.frozen
class _Item:
    """One line (or block) a summary may hold."""

    section: int
    order: int
    text: str
    plain: str
    preferred: bool = True
    truncatable: bool = False

    @property
    def search_text(self) -> str:
        return self.plain.lower()

    @property
    def tier(self) -> int:
        """Selection rank of the item's kind: paths only seen in output come last."""
        return self.section if self.preferred else len(_TITLES)


class ExtractiveSummarizer:
    """Summarizes by extraction, deterministically and offline, within `max_tokens` by `counter`.

    Keeps, in this order when space is short: the user's requests, errors (verbatim), file
    paths, commands with their outcome, and the assistant's decisions."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter

    @property
    def name(self) -> str:
        """Always "extractive"."""
        return "extractive"

    @property
    def model(self) -> str:
        """The `Summary.model` this summarizer reports: "extractive-v1"."""
        return "extractive-v1"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        instructions: str | None = None,
        session_model: str | None = None,
    ) -> Summary:
        """A Markdown summary of at most `max_tokens` tokens by the counter, never blank.

        `instructions` appear first as "Focus: ..." and favour lines that share their words.
        Raises `SummarizerError` for no messages or `max_tokens` below 16."""
        if not messages:
            raise SummarizerError("nothing to summarize: no messages were given")
        if max_tokens < MIN_SUMMARY_TOKENS:
            raise SummarizerError(
                f"max_tokens={max_tokens} is too small for a useful summary; "
                f"allow at least {MIN_SUMMARY_TOKENS} tokens"
            )
        focus = " ".join(instructions.split()) if instructions else ""
        items = _extract(messages)
        text, output_tokens = _Fitter(self._counter, max_tokens, focus, items).fit(len(messages))
        if not text.strip() or output_tokens > max_tokens:
            raise SummarizerError(
                f"could not fit a summary in {max_tokens} tokens with the "
                f"{self._counter.name!r} counter; raise max_tokens"
            )
        count = self._counter.count
        return Summary(
            text=text,
            model=self.model,
            input_tokens=sum(message_tokens(m, count) for m in messages),
            output_tokens=output_tokens,
        )


# --- extraction ---------------------------------------------------------------------------


def _extract(messages: Sequence[Message]) -> list[_Item]:
    """Everything worth keeping, as items tagged with their section and first appearance."""
    extractor = _Extractor()
    for message in messages:
        for block in message.content:
            extractor.order += 1
            if isinstance(block, TextBlock):
                extractor.add_text(message.role, block.text)
            elif isinstance(block, ToolUseBlock):
                extractor.add_tool_use(block)
            elif isinstance(block, ToolResultBlock):
                extractor.add_tool_result(block)
    return extractor.items()


class _Extractor:
    """Gathers candidates block by block, deduplicated, each with where it first appeared."""

    def __init__(self) -> None:
        self.order = 0
        self._requests: dict[str, int] = {}
        self._errors: dict[str, tuple[int, str]] = {}
        self._files: dict[str, tuple[int, bool]] = {}
        self._commands: list[tuple[int, str, str]] = []
        self._decisions: dict[str, tuple[int, str]] = {}
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

    def add_tool_use(self, block: ToolUseBlock) -> None:
        self._tool_names[block.id] = block.name
        self._add_files(_input_paths(block.input), from_input=True)
        command = _command_text(block)
        if command is not None:
            self._commands.append((self.order, block.id, command))

    def add_tool_result(self, block: ToolResultBlock) -> None:
        name = self._tool_names.get(block.tool_use_id, "tool")
        output = block.text
        if len(self._files) < _MAX_FILES:
            self._add_files(self._paths_in(output), from_input=False)
        if block.is_error:
            snippets = [_clip_error(output)] if output.strip() else []
            label = f"{name} (failed)"
        else:
            snippets = _error_snippets(output)
            label = name
        for snippet in snippets:
            self._errors.setdefault(snippet, (self.order, label))
        if block.is_error:
            self._outcomes[block.tool_use_id] = "error: " + _first_error_line(
                output, _error_snippets(output)
            )
        elif snippets:
            self._outcomes[block.tool_use_id] = "error: " + _first_error_line(output, snippets)
        else:
            self._outcomes[block.tool_use_id] = "ok"

    def _paths_in(self, text: str) -> Iterator[str]:
        # Tool outputs repeat the same words (listings, logs), so each word is parsed once.
        for word in text.split():
            if "/" in word or "." in word:
                paths = self._word_paths.get(word)
                if paths is None:
                    paths = self._word_paths[word] = tuple(_paths_in_word(word))
                yield from paths

    def _add_files(self, paths: Iterable[str], *, from_input: bool) -> None:
        for path in paths:
            known = self._files.get(path)
            if known is None:
                if len(self._files) < _MAX_FILES:
                    self._files[path] = (len(self._files), from_input)
            elif from_input and not known[1]:
                self._files[path] = (known[0], True)

    def items(self) -> list[_Item]:
        items = [
            _Item(_REQUESTS, at, _render_request(text), text, truncatable=True)
            for text, at in self._requests.items()
        ]
        errors = sorted((at, label, text) for text, (at, label) in self._errors.items())
        items.extend(
            _Item(_ERRORS, at, _render_error(label, text), f"{label}: {text}")
            for at, label, text in errors[-_MAX_ERRORS:]
        )
        items.extend(
            _Item(_FILES, at, f"- {path}", path, preferred=from_input)
            for path, (at, from_input) in self._files.items()
        )
        for at, tool_use_id, command in self._commands[-_MAX_COMMANDS:]:
            outcome = self._outcomes.get(tool_use_id, "no result recorded")
            rendered = f"- {_code_span(command)} → {outcome}"
            items.append(_Item(_COMMANDS, at, rendered, f"{command} → {outcome}"))
        decisions = sorted(self._decisions.values())
        items.extend(
            _Item(_DECISIONS, at, f"- {sentence}", sentence)
            for at, sentence in decisions[-_MAX_DECISIONS:]
        )
        return items


def _walk_strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside a JSON value, with the key it sits under."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _walk_strings(v, str(k).lower())
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _walk_strings(v, key)


def _input_paths(tool_input: Mapping[str, Any]) -> Iterator[str]:
    for key, value in _walk_strings(tool_input):
        candidate = value.strip()
        if (
            key in _PATH_KEYS
            and candidate
            and "\n" not in candidate
            and len(candidate) <= _LINE_CHARS
            and not any(c in candidate for c in "*?")
        ):
            yield candidate
        else:
            yield from _paths_in(value)


def _paths_in(text: str) -> Iterator[str]:
    # Scanning words that hold a "/" or "." is much faster than running the pattern over
    # every position of a large text, and finds the same paths.
    for word in text.split():
        if "/" in word or "." in word:
            yield from _paths_in_word(word)


def _paths_in_word(word: str) -> Iterator[str]:
    for match in _PATH.finditer(word):
        path = match.group(0).rstrip(".")
        if not any(c.isalpha() for c in path):
            continue
        # One slash alone is too often prose ("and/or") or a MIME type ("application/json").
        if (
            "/" not in path
            or path.startswith(("/", "~/", "./", "../"))
            or _EXTENSION.search(path)
            or path.count("/") >= 2
        ):
            yield path


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
            if shell_named or not (_PATH_KEYS & set(block.input)):
                return _one_line(value, _COMMAND_CHARS)
            return None
    if not shell_named:
        return None
    for value in block.input.values():
        if isinstance(value, str) and value.strip():
            return _one_line(f"{block.name} {value}", _COMMAND_CHARS)
    return _one_line(f"{block.name} {canonical_json(dict(block.input))}", _COMMAND_CHARS)


def _is_error_line(line: str) -> bool:
    if _CODE_LINE.search(line):
        return False
    if _ERROR_LINE.search(line):
        return True
    exit_code = _EXIT_CODE.search(line)
    return exit_code is not None and int(exit_code.group(1)) != 0


def _error_snippets(output: str) -> list[str]:
    """Error lines of a tool's output, verbatim; of a traceback, its last frame and exception."""
    snippets: list[str] = []
    lowered = output.lower()
    if not any(hint in lowered for hint in _ERROR_HINTS):
        return snippets
    lines = output.splitlines()
    lowered_lines = lowered.splitlines()
    if len(lowered_lines) != len(lines):
        lowered_lines = [line.lower() for line in lines]
    i = 0
    while i < len(lines) and len(snippets) < _ERROR_SNIPPETS_PER_OUTPUT:
        line = lines[i]
        if not any(hint in lowered_lines[i] for hint in _ERROR_HINTS):
            i += 1
            continue
        if _TRACEBACK.match(line):
            j = i + 1
            last_frame: int | None = None
            while j < len(lines) and (lines[j][:1] in (" ", "\t") or not lines[j].strip()):
                if lines[j].lstrip().startswith("File "):
                    last_frame = j
                j += 1
            kept = lines[last_frame:j] if last_frame is not None else []
            kept = [_clip_line(k.rstrip()) for k in kept if k.strip()][:3]
            if j < len(lines):
                kept.append(_clip_line(lines[j].strip()))
            if kept:
                snippets.append("\n".join(kept))
            i = j + 1
            continue
        if _is_error_line(line):
            snippet = _clip_line(line.strip())
            # A bare heading ("ERROR:") says nothing without the line that follows it.
            if snippet.endswith(":") and len(snippet) < 40:
                following = next((f for f in lines[i + 1 : i + 4] if f.strip()), None)
                if following is not None:
                    snippet += "\n" + _clip_line(following.strip())
            snippets.append(snippet)
        i += 1
    return snippets


def _first_error_line(output: str, snippets: Sequence[str]) -> str:
    """The line that says what went wrong: a traceback's exception line, else the first."""
    if snippets:
        return _one_line(snippets[0].splitlines()[-1], _OUTCOME_CHARS)
    for line in output.splitlines():
        if line.strip():
            return _one_line(line, _OUTCOME_CHARS)
    return "(no output)"


def _clip_error(output: str) -> str:
    """A failed tool's output: verbatim, or its first and last lines when it is long."""
    lines = [_clip_line(line.rstrip()) for line in output.strip().splitlines()]
    if len(lines) > _ERROR_HEAD_LINES + _ERROR_TAIL_LINES:
        omitted = len(lines) - _ERROR_HEAD_LINES - _ERROR_TAIL_LINES
        lines = [
            *lines[:_ERROR_HEAD_LINES],
            f"[… {omitted} lines omitted …]",
            *lines[-_ERROR_TAIL_LINES:],
        ]
    return "\n".join(lines)


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
                yield _one_line(sentence, _DECISION_CHARS)


# --- rendering ----------------------------------------------------------------------------


def _clip_line(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def _one_line(text: str, limit: int) -> str:
    lines = text.strip().splitlines() or [""]
    first = lines[0].strip()
    if len(lines) > 1:
        first += " …"
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _code_span(text: str) -> str:
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fenced(text: str) -> str:
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`{3,}", text)), default=0) + 1)
    return f"{fence}\n{text}\n{fence}"


def _render_request(text: str) -> str:
    return f"- {text}" if "\n" not in text else _fenced(text)


def _render_error(label: str, text: str) -> str:
    return f"- {label}: {text}" if "\n" not in text else f"- {label}:\n{_fenced(text)}"


def _head(text: str, max_chars: int) -> str:
    """`text` cut to about `max_chars`, its beginning kept, with a marker where it was cut."""
    marker = " … [truncated]"
    if len(text) <= max_chars:
        return text
    return text[: max(1, max_chars - len(marker))].rstrip() + marker


# --- fitting ------------------------------------------------------------------------------


class _Fitter:
    """Chooses and renders items so the text stays within `max_tokens` by the counter.

    Counting every candidate line would be slow on big ranges, so it counts a sample once to
    learn tokens per character, selects by that estimate, then counts the assembled text and
    corrects the estimate a few times."""

    def __init__(
        self, counter: TokenCounter, max_tokens: int, focus: str, items: Sequence[_Item]
    ) -> None:
        self._counter = counter
        self._max_tokens = max_tokens
        self._focus = focus
        self._focus_line = ""
        self._tokens_per_char = 1.0
        words = {w for w in _FOCUS_WORD.findall(focus.lower()) if w not in _FOCUS_STOPWORDS}
        first_request = min(
            (item.order for item in items if item.section == _REQUESTS), default=None
        )
        # The first request (the task) leads, then the other requests, most recent first; then
        # items sharing words with the focus; then by section, paths only seen in tool output
        # last. Within a section recent items win, except files (in order of appearance).
        self._candidates = sorted(
            items,
            key=lambda item: (
                item.section != _REQUESTS,
                item.order != first_request,
                not (words and any(w in item.search_text for w in words)),
                item.tier,
                item.order if item.section == _FILES else -item.order,
            ),
        )

    def fit(self, message_count: int) -> tuple[str, int]:
        """The summary text and its token count."""
        if not self._candidates:
            note = (
                f"Summarized {message_count} messages: no user requests, errors, files, "
                "commands or decisions to keep."
            )
            if self._focus:
                note = f"Focus: {self._focus}\n\n{note}"
            return self._truncate_to_fit(note)
        sample = "\n".join(item.text for item in self._candidates)[:_SAMPLE_CHARS]
        self._tokens_per_char = max(self._counter.count(sample), 1) / max(len(sample), 1)
        if self._focus:
            # The focus must not crowd out what it asks to keep.
            limit = max(24, int(self._max_tokens * 0.25 / self._tokens_per_char))
            self._focus_line = "Focus: " + _head(self._focus, limit)
        target = float(self._max_tokens)
        best: tuple[str, int] | None = None
        for _ in range(_FIT_ATTEMPTS):
            chosen, complete = self._select(target)
            if not chosen:
                break
            text = self._render(chosen)
            tokens = self._counter.count(text)
            if tokens <= self._max_tokens:
                if best is None or tokens > best[1]:
                    best = (text, tokens)
                if complete or tokens >= 0.9 * self._max_tokens:
                    break
                target *= 0.98 * self._max_tokens / max(tokens, 1)
            else:
                target *= 0.95 * self._max_tokens / tokens
        if best is not None:
            return best
        # Not even one section fits: the most important item alone, cut to the limit.
        return self._truncate_to_fit(self._candidates[0].plain)

    def estimate(self, text: str) -> float:
        return len(text) * self._tokens_per_char + 1

    def header_cost(self, section: int) -> float:
        return self.estimate(_TITLES[section]) + 2

    def room_chars(self, tokens: float) -> int:
        return int(tokens / self._tokens_per_char)

    def _select(self, target: float) -> tuple[list[_Item], bool]:
        """Items by priority whose estimated tokens fit `target`; and whether all fitted whole.

        Requests come first but take at most half of the target at first, so that a long
        session's many prompts leave room for its errors; what they leave over goes to the
        requests that did not fit, then to the one cut short."""
        selection = _Selection(self, self.estimate(self._focus_line) if self._focus_line else 0)
        request_limit = selection.used + target * _REQUEST_SHARE
        deferred: list[_Item] = []
        for item in self._candidates:
            if item.section == _REQUESTS:
                first = not selection.chosen
                taken = selection.offer(item, request_limit, cut=first)
                # A budget too small to share still goes to the task before anything else;
                # if not even a piece of the task fits, nothing else may take its place.
                if not taken and first:
                    taken = selection.offer(item, target)
                    if not taken:
                        return [], False
                if not taken:
                    deferred.append(item)
            else:
                selection.offer(item, target)
        for item in deferred:
            selection.offer(item, target)
        selection.regrow_cut(target)
        complete = len(selection.chosen) == len(self._candidates) and not selection.has_cut
        return selection.chosen, complete

    def _render(self, chosen: Sequence[_Item]) -> str:
        parts = [self._focus_line] if self._focus_line else []
        for section, title in enumerate(_TITLES):
            lines = [
                item.text
                for item in sorted(
                    (i for i in chosen if i.section == section), key=lambda i: i.order
                )
            ]
            if lines:
                parts.append(f"## {title}\n" + "\n".join(lines))
        return "\n\n".join(parts)

    def _truncate_to_fit(self, text: str) -> tuple[str, int]:
        """The longest head of `text` (with a marker when cut) within `max_tokens`."""
        tokens = self._counter.count(text)
        if tokens <= self._max_tokens:
            return text, tokens
        low, high = 1, len(text) - 1
        best = ("", 0)
        while low <= high:
            middle = (low + high) // 2
            candidate = _head(text, middle)
            candidate_tokens = self._counter.count(candidate)
            if candidate_tokens <= self._max_tokens and candidate.strip():
                best = (candidate, candidate_tokens)
                low = middle + 1
            else:
                high = middle - 1
        return best


class _Selection:
    """The items chosen so far for one target, and their estimated tokens."""

    def __init__(self, fitter: _Fitter, used: float) -> None:
        self._fitter = fitter
        self.used = used
        self.chosen: list[_Item] = []
        self._sections: set[int] = set()
        self._cut: tuple[_Item, _Item] | None = None

    def offer(self, item: _Item, limit: float, *, cut: bool = True) -> bool:
        """Takes `item` if it fits under `limit`, or (if allowed) its head; says if it did."""
        header = 0.0 if item.section in self._sections else self._fitter.header_cost(item.section)
        cost = self._fitter.estimate(item.text) + header
        if self.used + cost <= limit:
            self._take(item, cost)
            return True
        room = self._fitter.room_chars(limit - self.used - header - 4)
        if not (cut and item.truncatable and room >= _MIN_CUT_CHARS and self._cut is None):
            return False
        shortened = attrs.evolve(item, text=_render_request(_head(item.plain, room)))
        self._take(shortened, self._fitter.estimate(shortened.text) + header)
        self._cut = (item, shortened)
        return True

    @property
    def has_cut(self) -> bool:
        """Whether an item was taken only in part."""
        return self._cut is not None

    def regrow_cut(self, limit: float) -> None:
        """Gives the item that was cut short whatever room is left."""
        if self._cut is None:
            return
        whole, shortened = self._cut
        extra = limit - self.used
        room = self._fitter.room_chars(self._fitter.estimate(shortened.text) + extra - 4)
        if room <= len(shortened.text):
            return
        grown_plain = _head(whole.plain, room)
        grown = (
            whole
            if grown_plain == whole.plain
            else attrs.evolve(whole, text=_render_request(grown_plain))
        )
        self.used += self._fitter.estimate(grown.text) - self._fitter.estimate(shortened.text)
        self.chosen[self.chosen.index(shortened)] = grown
        self._cut = None if grown is whole else (whole, grown)

    def _take(self, item: _Item, cost: float) -> None:
        self.chosen.append(item)
        self._sections.add(item.section)
        self.used += cost
