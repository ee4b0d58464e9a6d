"""The facts an agent needs to carry on, extracted from a transcript, and how many a request keeps.

A fact is an exact string that appears in the transcript and that an agent working on the
task would need again, verbatim:

- **paths**: file or folder paths given to a tool: a `path`, `file_path`, … input, or a
  path-like word (one with a `/`, not a URL) in another string input that is not file content
  (`content`, `old_string`, `new_string`, `old_str`, `new_str`, `file_text`, `text`);
- **commands**: shell commands run (the first line of a `command`/`cmd` input of a tool whose
  name says it runs commands: bash, shell, terminal, exec, run), at most 200 characters;
- **errors**: distinct error lines of tool outputs (a line reporting an `…Error:`/`…Exception:`,
  `error:`/`error[E…]:`, `FAILED`, `fatal:`, `panic:`, `Traceback`, or the first line of an
  output the tool marked as an error), stripped, at most 160 characters;
- **tests**: the counts of a test run a tool output reports, without its duration (`117
  passed, 2 failed`, `Ran 42 tests`, `Tests run: 42, Failures: 1`, `test result: ok. 42
  passed; 0 failed`, `42 passing`, `43 tests, 0 failures`);
- **requests**: each user prompt, whole (stripped; its first 1,000 characters when longer).
  Only a real prompt counts: a user message that answers tool calls is not one, even with a
  text block beside its results (a page or a note a host attached);
- **constraints**: each sentence of a user prompt that states a rule or a decision (never,
  always, don't, must, only, avoid, make sure, instead of, ..., and their like in German,
  French, Spanish, Portuguese, Italian, Dutch, Russian, Japanese, Chinese and Korean; a
  sentence ends at `.!?` and a space, at `。！？`, or at a line end), at most 300 characters;
- **identifiers**: names and values the agent wrote in backticks in its text or thinking
  (3 to 80 characters), and command-line flags (`--name`) in its text or the user's prompts;
- **mentions**: names the agent wrote in its text or thinking outside backticks, of a shape
  that says they are code (4 to 80 characters): `snake_case` words holding a lowercase
  letter, `camelCase` and `PascalCase` words (`useEffect`, `ConfigParser`), and the dotted name
  of a call (`session.commit` in `session.commit()`); not a word that is part of a path, a
  file name or a URL;
- **urls**: `http(s)://` addresses in user prompts, the agent's text and tool inputs;
- **numbers**: a number of two or more digits with the word before it (`port 8080`,
  `timeout: 30`, and after a word of another script: `списали 2469`, `金額3480`), in user
  prompts and the agent's text;
- **values**: exact values of a shape that says what they are, in user prompts and the
  agent's text: email addresses, ISO dates and date-times, `21/05/2024`, clock times,
  versions (`v1.2`, `3.11.4`), UUIDs, hex hashes of 7 to 64 digits with a letter and a digit,
  ticket and order ids (`ORD-12345`, `INV-2026-0042`; not `#1234`), codes of 5 to 12 capitals
  and digits holding both (`JG7FMM`), environment variables and constants (`FOO_BAR=1`,
  `$HOME`), IPv4 addresses and `host:port`, money with its sign or ISO code before or after
  it (`$1,299.00`, `12,50 €`, `21 907,44 €`, `120 USD`, `CHF 1'250.00`), dates written with
  their month's name (`April 19, 2026`, `19 avril 2026`, `March 2026`, since 2026-11-29); not
  the date or time that starts a line (a pasted log's timestamps); and, since 2026-11-30,
  an endpoint with its method (`POST /v2/refunds`), a phone number (`+33 6 12 34 56 78`),
  a key combination (`Ctrl+Alt+T`), a version constraint (`elasticsearch-py>=8.12,<9`), a
  pull or merge request (`PR 4821`);
- **arguments**: the values the agent passed to tools other than shells: each string of a
  tool call's input (nested ones too), stripped, on one line, 4 to 80 characters, that is not
  file content, a path input, a `command`/`cmd`, a path-like word or a URL (ids, queries,
  dates, names to find: `JG7FMM`, `2024-05-21`, `RenameIndex operation implementation`).

A fact counts as kept by a request when its exact string occurs in the text of the request's
messages (not the system prompt or tool definitions). This is deliberately strict: a
paraphrase does not count.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from abridged.adapters.simulation.cache import block_text
from abridged.domain.messages import Message, Role, TextBlock, ThinkingBlock, ToolResultBlock

PATH_INPUTS = ("path", "file_path", "filepath", "filename", "file", "target_file", "notebook_path")
SHELL_TOOL = re.compile(r"bash|shell|terminal|exec|run|cmd|command", re.IGNORECASE)
ERROR_LINE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b:|(?:^|\s)(?:error|Error|ERROR)(?:\[\w+\])?:"
    r"|\bFAILED\b|\bfatal:|\bpanic:|^Traceback \(most recent call last\)"
)
COMMAND_CHARS = 200
ERROR_CHARS = 160
REQUEST_CHARS = 1_000
CONSTRAINT_CHARS = 300
CONSTRAINT = re.compile(
    r"\b(?:never|always|don'?t|do not|must|mustn'?t|only|avoid|make sure|should ?n[o']t"
    r"|instead of|prefer|no longer|keep using|stick to"
    r"|nie|niemals|immer|nur|muss|müssen|d(?:arf|ürfen) (?:nicht|kein\w*)|keinesfalls"
    r"|auf keinen fall|vermeide\w*|statt|stattdessen|nicht mehr|bitte (?:nicht|kein\w*)"
    r"|jamais|toujours|il faut|doit|doivent|devez|uniquement|seulement|évite[rz]?"
    r"|au lieu de|plutôt que|interdite?s?|ne plus|surtout pas"
    r"|nunca|siempre|debes?|deben|hay que|s[oó]lo|únicamente|evita[r]?|en (?:lugar|vez) de"
    r"|ya no|prohibid[oa]s?|sempre|devem?|apenas|somente|só|evite|em vez de|não mais"
    r"|proibid[oa]s?|mai più|devi|soltanto|evitare|invece di|non più|vietat[oi]"
    r"|nooit|altijd|moet(?:en)?|alleen|vermijd\w*|in plaats van|niet meer"
    r"|никогда|всегда|нельзя|должн[аоы]?|только|избегай|вместо|обязательно|запрещено"
    r"|больше не)\b"
    r"|必ず|絶対|常に|のみ|ないで|禁止|避けて|代わりに|てはいけない"
    r"|不要|不再|必须|一定要|务必|只能|仅|总是|永远|始终|避免|而不是|不得"
    r"|절대|항상|반드시|하지 ?마|금지|대신",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"(?<=[.!?؟।])\s+|(?<=[。！？])|\n+")
BACKTICKED = re.compile(r"`([^`\n]{3,80})`")
FLAG = re.compile(r"(?<![\w-])--[a-zA-Z][\w-]+")
URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`]+")
MENTIONED = re.compile(
    r"(?<![A-Za-z0-9_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f./\\@$:#-])"
    r"(?:[A-Za-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_]{0,63}){1,4}(?=\()"
    r"|(?=[A-Za-z0-9_]*[a-z])[A-Za-z][A-Za-z0-9]{0,63}(?:_[A-Za-z0-9]{1,64}){1,8}"
    r"|[a-z]{1,32}[A-Z][A-Za-z0-9]{0,63}|[A-Z][a-z0-9]{1,32}[A-Z][A-Za-z0-9]{0,63})"
    r"(?![A-Za-z0-9_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f/\\@-]|\.[A-Za-z0-9_])"
)
"""A name written in prose that reads as code: a dotted call's name, `snake_case`,
`camelCase`, `PascalCase`; not inside a path, a file name or a URL. The same shapes as the
ledger's `abridged.domain.ledger_mentions.MENTIONED`, written out here as every pattern of
this module is: the measure does not change when the ledger's reading does."""
MAGNITUDE = r"(?:(?:[kKMBm]|bn|mn|Mio|Mrd|x)(?![A-Za-z]))?"
"""A magnitude or factor glued to a number (`€412k`, `$1.2M`, `1.5x`): part of the fact, so
that `€412` of `€412k` is not counted as kept."""
NUMBER = re.compile(r"\b[A-Za-z_][\w-]{2,64}[ \t]?[:=]?[ \t]\d[\d.,]*\d%?" + MAGNITUDE)
OTHER_SCRIPT_NUMBER = re.compile(r"[^\W\d_A-Za-z]{2,64}[ \t]?[:=]?[ \t]?[0-9][0-9.,]*[0-9]%?")
LOG_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}.*|[0-9]{1,2}[/.][0-9]{1,2}[/.][0-9]{2,4}|[0-9]{1,2}:[0-9]{2}.*"
)
ISO = "USD|EUR|GBP|JPY|INR|KRW|RUB|AED|SAR|CNY|CHF"
VALUE = re.compile(
    r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}(?![\w-])"  # email
    r"|(?<![0-9.:/-])(?:[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?)?"
    r"|[0-9]{1,2}[/.][0-9]{1,2}[/.][0-9]{2,4}|[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?)"
    r"(?![.:/-]?[0-9])"  # dates and times
    r"|(?<![A-Za-z0-9_.])(?:v[0-9]+(?:\.[0-9]+)+|[0-9]+\.[0-9]+\.[0-9]+)(?:-[A-Za-z0-9.]+)?"
    r"(?![.]?[A-Za-z0-9_])"  # versions
    r"|(?<![A-Za-z0-9_-])(?:[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"  # UUIDs
    r"|(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,64})(?![A-Za-z0-9_-])"
    r"|(?<![A-Za-z0-9_-])(?!\d+[KMGT]?B\b)(?:[A-Z][A-Z0-9]{1,9}(?:-[0-9]{2,}){1,4}"
    r"|[A-Z](?:-[0-9]{2,}){2,4}"
    r"|(?=[A-Z0-9]*[0-9])(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,12})(?![A-Za-z0-9_-])"  # ids, codes
    r"|[$€£¥₹₩₽]\s?[0-9][0-9,.]*[0-9]" + MAGNITUDE + r"|(?<![\w.,'])(?:[0-9]{1,3}"
    r"(?:[ \u00a0\u202f][0-9]{3}){1,6}(?:[.,][0-9]{1,2})?|[0-9][0-9,.']{0,40})"
    + MAGNITUDE
    + r"(?:\s?(?:"
    + ISO
    + r")\b|[ \u00a0\u202f]?[$€£¥₹₩₽])"
    + r"|\b(?:"
    + ISO
    + r")[ \u00a0]?[0-9][0-9,.']{0,40}[0-9]"
    + MAGNITUDE  # money, either side
    + r"|\$\{?[A-Za-z_][A-Za-z0-9_]{2,}\}?"
    r"|(?<![A-Za-z0-9_$])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:=[^\s`'\",;]*[^\s`'\",;.:!?)])?"  # env
    r"|(?<![A-Za-z0-9_.])(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?::[0-9]{2,5})?"
    r"|[A-Za-z][A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9-]+)*:[0-9]{2,5})(?![A-Za-z0-9_.])"  # hosts
)
MODIFIER = r"(?:Ctrl|Control|Cmd|Command|Alt|Option|Opt|Shift|Meta|Super|Win|Fn)"
SHAPED = re.compile(
    r"(?<![\w/])(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /[^\s`'\"<>()\[\]{},;]*"
    r"|(?<![\w+])\+[0-9]{1,3}(?:[ .-]?\(?[0-9]{1,5}\)?){2,6}(?![0-9])"
    r"|(?<![\w)])\([0-9]{3}\) ?[0-9]{3}-[0-9]{4}(?![0-9])"
    r"|(?<![\w+])" + MODIFIER + r"(?:\+" + MODIFIER + r")*\+(?:F[0-9]{1,2}|[A-Z][a-z]+|[A-Z0-9]"
    r"|[`\[\]/\\,.;=-])(?![A-Za-z0-9])"
    r"|(?<![\w.-])[A-Za-z][\w.-]*(?:>=|<=|~=|==|!=|~>) ?[0-9][\w.*]*"
    r"(?:, ?(?:<|>|<=|>=|!=|==) ?[0-9][\w.*]*)*"
    r"|\b(?:PR|MR) ?[#!]?[0-9]+\b"
)
"""Values of shapes written without backticks: an endpoint with its method, a phone number
(of `PHONE_DIGITS` digits or more), a key combination, a package's version constraint, a
pull or merge request."""
PHONE_DIGITS = 8
TEST_COUNTS = re.compile(
    r"(?<![\w.-])\d+ (?:passed|failed|passing|failing|errors?|skipped|xfailed|xpassed"
    r"|deselected|warnings?)(?:(?:[,;]| \|) \d+ (?:passed|failed|passing|failing|errors?|skipped"
    r"|xfailed|xpassed|deselected|warnings?|total))*"
    r"|\bRan \d+ tests?"
    r"|\bTests run: \d+, Failures: \d+(?:, Errors: \d+)?(?:, Skipped: \d+)?"
    r"|\btest result: (?:ok|FAILED)\. \d+ passed; \d+ failed"
    r"|\b(?:OK|FAILED) \((?:failures|errors|skipped)=\d+(?:, \w+=\d+)*\)"
    r"|\b\d+ (?:tests?|examples?), \d+ failures?"
)
"""A test run's counts, as the runners print them, without the run's duration; a count of
errors, warnings or skipped tests alone is not one (`TEST_OUTCOME`)."""
TEST_OUTCOME = re.compile(r"passed|failed|passing|failing|Ran |Tests run|failure|OK \(")
MONTHS_BEFORE_DAY = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Januar|Februar|März|Juni|Juli|Oktober|Dezember|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep"
    "|Oct|Nov|Dec"
)
MONTHS_AFTER_DAY = (
    MONTHS_BEFORE_DAY + "|janvier|février|mars|avril|mai|juin|juillet|août|septembre"
    "|octobre|novembre|décembre|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre"
    "|setiembre|octubre|noviembre|diciembre|janeiro|fevereiro|março|maio|junho|julho|setembro"
    "|outubro|dezembro|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|ottobre"
    "|dicembre|januari|februari|maart|mei|augustus"
)
WRITTEN_DATE = re.compile(
    r"(?=[0-9JFMASOND])(?:(?<![\w.])[0-3]?[0-9](?:st|nd|rd|th|er|º|\.)? (?:de )?(?i:"
    + MONTHS_AFTER_DAY
    + r")\.?"
    r"(?:,? (?:de )?[12][0-9]{3})?(?!\w)"
    r"|(?<![\w.])(?:" + MONTHS_BEFORE_DAY + r")\.? (?:[0-3]?[0-9](?:st|nd|rd|th)?"
    r"(?:,? [12][0-9]{3})?|[12][0-9]{3})(?![\w.,]?[0-9]))"
)
"""A date written with its month's name (`April 19, 2026`, `19 avril 2026`, `March 2026`):
a value, but one that starts a line and is followed by a time (a syslog line's)."""
SYSLOG_CLOCK = re.compile(r" [0-9]{1,2}:[0-9]{2}")
MIN_FACT_CHARS = 4
ARGUMENT_CHARS = 80
MENTION_CHARS = 80
CONTENT_INPUTS = frozenset(
    {"content", "old_string", "new_string", "file_text", "text", "old_str", "new_str"}
)
PATH_WORD = re.compile(r"(?<![\w:/.@+-])(?:~|\.{1,2})?/?(?:[\w.@+-]{1,255}/)+[\w.@+-]*[\w]")


@attrs.frozen
class Fact:
    """One exact string worth keeping, of a kind, first seen at a message position."""

    kind: str
    text: str
    position: int


def extract_facts(messages: Sequence[Message]) -> tuple[Fact, ...]:
    """The distinct facts of `messages`, in order of first appearance."""
    seen: dict[tuple[str, str], Fact] = {}

    def add(kind: str, text: str, position: int) -> None:
        text = text.strip()
        if len(text) >= MIN_FACT_CHARS and (kind, text) not in seen:
            seen[(kind, text)] = Fact(kind, text, position)

    for position, message in enumerate(messages):
        for call in message.tool_uses:
            for key in PATH_INPUTS:
                value = call.input.get(key)
                if isinstance(value, str) and "\n" not in value and len(value) <= 300:
                    add("paths", value, position)
            for key, value in call.input.items():
                if isinstance(value, str) and key not in CONTENT_INPUTS and key not in PATH_INPUTS:
                    for word in PATH_WORD.findall(value):
                        add("paths", word, position)
            if SHELL_TOOL.search(call.name):
                for key in ("command", "cmd"):
                    value = call.input.get(key)
                    if isinstance(value, str):
                        first = next((ln for ln in value.splitlines() if ln.strip()), "")
                        add("commands", first.strip()[:COMMAND_CHARS], position)
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                for line in _error_lines(block.text, block.is_error):
                    add("errors", line, position)
                for counts in TEST_COUNTS.findall(block.text):
                    if TEST_OUTCOME.search(counts):
                        add("tests", counts, position)
        for call in message.tool_uses:
            for value in _strings(call.input):
                for url in URL.findall(value):
                    add("urls", url.rstrip(".,;:!?"), position)
            if not SHELL_TOOL.search(call.name):
                for value in _argument_values(call.input):
                    add("arguments", value, position)
        if message.is_user_prompt:
            text = "\n".join(b.text for b in message.content if isinstance(b, TextBlock))
            add("requests", text.strip()[:REQUEST_CHARS], position)
            for sentence in SENTENCE_END.split(text):
                if CONSTRAINT.search(sentence):
                    add("constraints", sentence.strip()[:CONSTRAINT_CHARS], position)
            _named(text, position, add, backticks=False)
        elif message.role is Role.ASSISTANT:
            for block in message.content:
                if isinstance(block, TextBlock):
                    _named(block.text, position, add, backticks=True)
                    _mentioned(block.text, position, add)
                elif isinstance(block, ThinkingBlock):
                    for name in BACKTICKED.findall(block.thinking):
                        add("identifiers", name, position)
                    _mentioned(block.thinking, position, add)
    return tuple(seen.values())


def _mentioned(text: str, position: int, add: Callable[[str, str, int], None]) -> None:
    """The names `MENTIONED` finds in prose outside backticks and links."""
    for name in MENTIONED.findall(URL.sub(" ", BACKTICKED.sub(" ", text))):
        if len(name) <= MENTION_CHARS:
            add("mentions", name, position)


def _named(
    text: str, position: int, add: Callable[[str, str, int], None], *, backticks: bool
) -> None:
    """The identifiers, flags, URLs, numbers and values a piece of prose names."""
    if backticks:
        for name in BACKTICKED.findall(text):
            add("identifiers", name, position)
    for flag in FLAG.findall(text):
        add("identifiers", flag, position)
    for url in URL.findall(text):
        add("urls", url.rstrip(".,;:!?"), position)
    for number in NUMBER.findall(text) + OTHER_SCRIPT_NUMBER.findall(text):
        add("numbers", number, position)
    for match in VALUE.finditer(text):
        # A date or time that starts a line is a log's timestamp, not a value anyone stated.
        head = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
        if not (LOG_TIME.fullmatch(match.group(0)) and not head.strip(" \t[(")):
            add("values", match.group(0), position)
    for match in WRITTEN_DATE.finditer(text):
        head = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
        if not (SYSLOG_CLOCK.match(text, match.end()) and not head.strip(" \t[(")):
            add("values", match.group(0), position)
    for match in SHAPED.finditer(text):
        value = match.group(0).rstrip(".,;:!?")
        if value[0] not in "+(" or sum(c.isdigit() for c in value) >= PHONE_DIGITS:
            add("values", value, position)


def _argument_values(inputs: Mapping[str, Any]) -> Iterable[str]:
    for key, value in inputs.items():
        if key in CONTENT_INPUTS or key in PATH_INPUTS or key in ("command", "cmd"):
            continue
        for raw in _strings(value):
            text = raw.strip()
            if (
                "\n" not in text
                and len(text) <= ARGUMENT_CHARS
                and not PATH_WORD.fullmatch(text)
                and not URL.fullmatch(text)
            ):
                yield text


def _error_lines(text: str, is_error: bool) -> Iterable[str]:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if is_error and lines:
        yield lines[0][:ERROR_CHARS]
    for line in lines:
        if ERROR_LINE.search(line):
            yield line[:ERROR_CHARS]


def request_text(body: Mapping[str, Any]) -> str:
    """The text of a request body's messages, where facts are looked up."""
    parts: list[str] = []
    for message in body.get("messages", ()):
        content = message.get("content") or []
        if isinstance(content, str):
            parts.append(content)
            continue
        parts.extend(block_text(b) for b in content)
        # A tool_use input is JSON-escaped in `block_text`; its raw strings count too.
        for block in content:
            if block.get("type") == "tool_use":
                parts.extend(_strings(block.get("input", {})))
    return "\n".join(parts)


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def kept_share(facts: Sequence[Fact], text: str) -> float:
    """The share of `facts` whose exact string occurs in `text` (1.0 when there are none)."""
    if not facts:
        return 1.0
    return sum(1 for f in facts if f.text in text) / len(facts)
