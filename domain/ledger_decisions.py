"""The agent's decisions: the sentences of its replies that say which way it went and what it
set aside ("Use pathlib.Path instead of os.path", "switch the hooks to ruff rather than black
and flake8"), the ledger's `decision` entries. A later turn that no longer sees the reply
undoes the choice, or makes it again another way; the user's own rules are `constraint`
entries (`abridged.domain.rule_words`).

Only the agent's text is read, not its thinking (which weighs options it does not take), and
not what a code block or an inline code span holds."""

from __future__ import annotations

import re

from abridged.domain.messages import Message, TextBlock
from abridged.domain.rule_words import sentences

_WORDS = (
    r"instead of|rather than|decided|decide to|chose|chosen|opted|opt for|going with"
    r"|(?:we|I)(?:'ll| will) use|let's use|settled on|now uses?|replaced(?: \S+){1,4} with"
    # German, French, Spanish, Portuguese, Italian, Russian.
    r"|statt|stattdessen|entschieden|au lieu de|plutôt que|décidé|en lugar de|en vez de"
    r"|decidí|decidimos|em vez de|decidi|invece di|вместо|решил\w*|выбрал\w*"
)
_UNSPACED = r"ではなく|に切り替え|代わりに|而不是|改用|대신"
"""The same words in the languages written without spaces (Japanese, Chinese, Korean)."""
_SWITCHED = (
    r"(?:(?:^[\s>*_#-]*|(?<=\bi )|(?<=\bwe )|(?<='ll )|(?<='ve )|(?<=\blet's )|(?<=\band )"
    r"|(?<=\bthen )|(?<=\bwill )|(?<=\bshould ))switch(?:ed|ing)?"
    r"|(?:(?<='m )|(?<='re )|(?<=\bam )|(?<=\bare ))switching) (?:\w+ )?to\b"
)
"""The agent switching, as its sentence's verb (`Switching CI to GitHub Actions`, `I switched
Jest to Vitest`, `we'll switch auth to JWT`, `I'm switching to uv`), not the noun (`the
switch to Flash`, `our switch to pnpm`), what was done to something (`was switched to
Opus`) nor what someone can do (`users can switch to dark mode`)."""
DECISION = re.compile(r"\b(?:" + _WORDS + r")\b|" + _SWITCHED + "|" + _UNSPACED, re.IGNORECASE)
"""Words that say a choice was made between ways: `instead of`, `rather than`, `decided`,
`chose`, `opted`, `going with`, `switched to`, `we'll use`, `settled on`, what it now uses
or replaced with what (`the limiter now uses a sliding-window log`), and the same words in
German, French, Spanish, Portuguese, Italian, Russian, Japanese, Chinese and Korean; read
in one sentence (`_SWITCHED` reads the sentence's start)."""
_MAYBE = re.compile(r"\b(?:" + _WORDS + r"|switch(?:ed|ing)?\b)|" + _UNSPACED, re.IGNORECASE)
"""Whether a text may hold a decision at all: read before it is cut into sentences."""
UNDECIDED = re.compile(
    r"(?:\bnot|n't|\bnever|\byet to|\bun)\s*(?:\w+\s+)?(?:decided|decide|chosen|chose|opted"
    r"|settled)\b",
    re.IGNORECASE,
)
"""A sentence that says no choice was made yet (`I have not decided`, `we haven't chosen`)."""
ASKING = re.compile(
    r"(?:should|shall|would|could|can|do|did|will) (?:i|we|you)\b|let me know|which |whether ",
    re.IGNORECASE,
)
"""How a question starts when it does not end with `?` (`Let me know whether ...`)."""
DECISION_CHARS = 240
"""A longer sentence is not kept: it is an explanation, not the decision."""
LEAD_IN_CHARS = 40
"""A sentence this short ending with `:` leads in to what follows it, and says nothing alone."""
_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`", re.DOTALL)
_BULLET = re.compile(r"\A(?:[-*+•][ \t]+)+")
"""A list item's marker (`- `, `* `), not the sentence; a bold `**Decision:**` is kept whole."""
_NOT_THE_AGENTS = re.compile(r"[ \t]*>|(?: {4}|\t)(?![ \t]*(?:[-*+•]|[0-9]+[.)])\s)")
"""A line the agent quotes (`> ...`: a page, an email, a tool's output) or a line of code
indented as markdown writes it (four spaces or a tab, not a nested list's item)."""


def decisions(text: str) -> list[str]:
    """The sentences of the agent's `text` that state a decision, each once, in order, each
    at least 12 and at most `DECISION_CHARS` characters; not a question, a choice not made
    yet, nor a short lead-in (`Rather than:`); not in a line it quotes (`>`) or indents as
    code, nor in fenced code; and a sentence whose decision words are only inside
    backticks is not one."""
    found: dict[str, None] = {}
    if _MAYBE.search(text) is None:
        return []
    prose = _CODE.sub(_blank, text)
    cursor = 0
    for part in sentences(prose):
        start = prose.find(part, cursor)
        cursor = start + len(part)
        if not DECISION.search(part) or UNDECIDED.search(part):
            continue
        if _NOT_THE_AGENTS.match(prose, prose.rfind("\n", 0, start) + 1):
            continue
        sentence = _BULLET.sub("", text[start : start + len(part)].strip())
        if not 12 <= len(sentence) <= DECISION_CHARS:
            continue  # an explanation rather than the decision
        if sentence.rstrip("*_ ").endswith("?") or ASKING.match(sentence):
            continue  # a question the user has yet to answer
        if sentence.endswith(":") and len(sentence) <= LEAD_IN_CHARS:
            continue  # "Rather than:", the lead-in of a list or code that follows
        found[sentence] = None
    return list(found)


def _blank(match: re.Match[str]) -> str:
    """A code span or block as as many characters that hold no word, a fence's lines kept."""
    return "".join("\n" if c == "\n" else "\x00" for c in match.group(0))


ANSWER_CHARS = 40
"""A prompt up to this long, after a reply that ends with a question, is an answer to it."""
QUESTION_CHARS = 160
"""The most of the question kept with its answer (a longer one keeps its end)."""


def question_asked(message: Message) -> str | None:
    """The question the agent's reply ends with (its last text's last sentence, ending with
    `?`), at most `QUESTION_CHARS` (its end); else `None`."""
    texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text.strip()]
    if not texts or message.tool_uses:
        return None
    # Only the text's end is read: the question is its last sentence, kept to its end.
    end = texts[-1].strip()[-4 * QUESTION_CHARS :]
    last = next((p.strip() for p in reversed(sentences(end)) if p.strip()), "")
    if not last.rstrip("*_ ").endswith(("?", "？", "؟")):
        return None
    return last if len(last) <= QUESTION_CHARS else "…" + last[-QUESTION_CHARS:]
