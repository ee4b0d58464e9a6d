"""The words a user states a rule or a decision in, in the languages agents are asked in.

A sentence of a prompt that holds one of these is a rule ("never touch the migrations",
"Ändere niemals die Migrationen", "マイグレーションは絶対に変更しないで"): when its prompt
leaves the facts ledger, the sentence stays (`abridged.domain.ledger.rules_of_dropped`).

The words are the imperative and modal ones (never, always, must, only, avoid, instead of,
no longer, forbidden) of English, German, French, Spanish, Portuguese, Italian, Dutch,
Russian, Arabic, Japanese, Chinese and Korean, and the English words that take a rule back
(`stop …ing`, `no need to`, `anymore`, `from now on`): a rule's reversal is kept with it, or
the ledger would show the rule as still standing. A bare negation (`not`, `nicht`, `не`,
`não`) is left out: most sentences that hold one report something ("it does not build"),
and a ledger that kept them all would have no room for the rules. So are words that mean something
else in a neighbouring language (Italian `mai` is German for May, Portuguese `dois` is
two); German `nie` stays, though Polish writes its `not` so. Japanese, Chinese and Korean
write no spaces: their words are matched anywhere, and their sentences end at `。！？` as
well as at a line end.
"""

from __future__ import annotations

import re

_WORDS = (
    # English.
    r"never|always|don'?t|do not|must|mustn'?t|only|avoid|make sure|should ?n[o']t"
    r"|instead of|prefer|no longer|keep using|stick to"
    # … and the words that take a rule back ("stop cc'ing legal", "no need to run it").
    r"|stop [\w']+ing|no need to|not anymore|any ?more|from now on|going forward|scratch that"
    # German.
    r"|nie|niemals|immer|stets|nur|ausschließlich|muss|musst|müssen|keinesfalls"
    r"|auf keinen fall|d(?:arf|arfst|ürfen) (?:nicht|kein\w*)|vermeide\w*|statt|stattdessen"
    r"|nicht mehr|bitte (?:nicht|kein\w*)"
    # French.
    r"|jamais|toujours|surtout pas|il faut|doit|doivent|devez|uniquement|seulement"
    r"|évite[rz]?|au lieu de|plutôt que|interdite?s?|ne plus"
    # Spanish, Portuguese and Italian.
    r"|nunca|jamás|siempre|sempre|debes?|deben|devem?|devi|hay que|s[oó]lo|solamente"
    r"|únicamente|apenas|somente|só|soltanto|evit[ae][rs]?|en (?:lugar|vez) de|em vez de"
    r"|ao invés de|invece di|ya no|não mais|non più|mai più|prohibid[oa]s?|proibid[oa]s?"
    r"|vietat[oi]"
    # Dutch.
    r"|nooit|altijd|moet|moeten|alleen|vermijd\w*|in plaats van|niet meer"
    # Russian.
    r"|никогда|всегда|нельзя|должн\w*|только|избега\w*|вместо|обязательно|запрещ\w*"
    r"|больше не"
    # Arabic (not `لا ت…`, "do not …", which also says what a thing does not do).
    r"|أبدا|أبداً|دائما|دائماً|يجب|فقط|بدلا من|بدلاً من|ممنوع|إياك"
)
_UNSPACED = (
    # Japanese.
    r"必ず|絶対|常に|のみ|ないで|禁止|避けて|代わりに|てはいけない|ではなく|ないように"
    # Chinese.
    r"|不要|别再|不再|必须|一定要|务必|只能|只用|仅|总是|永远|始终|避免|而不是|不得|不准|不许"
    # Korean.
    r"|절대|항상|반드시|하지 ?마|금지|대신|피하"
)


def _factored(words: str) -> str:
    """`words` (top-level alternatives, each starting with a letter) grouped by their first
    letter behind a look-ahead for those letters: searched over a megabyte, each position
    tries one class and at most one group, not every word (27 ms against 70 ms)."""
    alternatives: list[str] = []
    depth, current = 0, ""
    for char in words:
        depth += (char == "(") - (char == ")")
        if char == "|" and depth == 0:
            alternatives.append(current)
            current = ""
        else:
            current += char
    alternatives.append(current)
    groups: dict[str, list[str]] = {}
    for alternative in alternatives:
        groups.setdefault(alternative[0], []).append(alternative[1:])
    grouped = "|".join(f"{first}(?:{'|'.join(rest)})" for first, rest in groups.items())
    return rf"\b(?=[{''.join(groups)}])(?:{grouped})\b"


_SPACED_RULE = re.compile(_factored(_WORDS))
_UNSPACED_RULE = re.compile(_UNSPACED)


def states_rule(sentence: str) -> bool:
    """Whether a sentence of the user's states a rule or a decision: it holds one of the
    words above, in any case."""
    lowered = sentence.lower()
    return bool(_SPACED_RULE.search(lowered) or _UNSPACED_RULE.search(lowered))


SENTENCE_END = re.compile(r"(?<=[.!?؟।])\s+|(?<=[。！？])|\n+")
"""Where a prompt's sentences end: after `.`, `!`, `?` (and the Arabic and Devanagari
marks) and a space, after `。！？` (no space follows them), and at a line end."""

_ABBREVIATED = re.compile(
    r"(?:\b(?P<always>e\.g|i\.e|cf|vs|viz|approx|incl|esp|resp|a\.k\.a|w\.r\.t|mr|mrs|dr"
    r"|prof)|\b(?P<numbered>no|nr|fig|figs|eq|sec|ch|vol|pp?|art|para)|\b(?P<listed>etc))\.\Z",
    re.IGNORECASE,
)
"""A word written short with a dot, that a sentence goes on after: always (`e.g.`, `i.e.`,
`vs.`, `Dr.`; not `Ms.`, far more often milliseconds ending a sentence: `940 ms.`), before a
number (`no. 5`, `sec. 19.2`, `pp. 4`), before a word in lower case (`etc. and`)."""
_WORD_BEHIND = 12
"""How far back an abbreviation is looked for (`a.k.a.`, `approx.`, `w.r.t.` are shorter)."""


def sentences(text: str) -> list[str]:
    """`text` cut where `SENTENCE_END` ends a sentence, but not after a word written short that
    the sentence goes on after on the same line (`Use a cache, e.g. Redis, instead of ...`
    is one sentence). The parts are as `SENTENCE_END.split` gives them: what joins two parts
    is the space between them, kept."""
    parts: list[str] = []
    start = 0
    for end in SENTENCE_END.finditer(text):
        if end.start() == end.end() or not _goes_on(text, end):
            parts.append(text[start : end.start()])
            start = end.end()
    parts.append(text[start:])
    return parts


def _goes_on(text: str, end: re.Match[str]) -> bool:
    if "\n" in end.group(0) or end.end() >= len(text):
        return False
    word = _ABBREVIATED.search(text, max(0, end.start() - _WORD_BEHIND), end.start())
    if word is None:
        return False
    following = text[end.end()]
    if word.group("always"):
        return True
    if word.group("numbered"):
        return following.isdigit()
    return following.islower()


CONSTRAINT_CHARS = 300
"""The most of a rule's sentence the ledger keeps."""


def stated_rules(text: str) -> list[str]:
    """The sentences of a prompt that state a rule or a decision (`states_rule`, in the
    languages `abridged.domain.rule_words` reads), each at most `CONSTRAINT_CHARS` long, in
    order, each once."""
    # A dict, not a list: a prompt of 40,000 distinct rules took seconds to deduplicate.
    rules: dict[str, None] = {}
    for part in sentences(text):
        sentence = part.strip()[:CONSTRAINT_CHARS]
        if len(sentence) > 3 and sentence not in rules and states_rule(sentence):
            rules[sentence] = None
    return list(rules)
