"""Choosing the items that fit the budget, by priority, and counting the text they make."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from abridged.adapters.summarizers.items import FILES, REQUESTS, TITLES, Item
from abridged.adapters.summarizers.rendering import head, render_request, render_sections

if TYPE_CHECKING:
    from abridged.application.ports import TokenCounter

_SAMPLE_CHARS = 65_536
_FIT_ATTEMPTS = 6
_REQUEST_SHARE = 0.5
_MIN_CUT_CHARS = 24

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


class Fitter:
    """Chooses and renders items so the text stays within `max_tokens` by the counter.

    Counting every candidate line would be slow on big ranges, so it counts a sample once to
    learn tokens per character, selects by that estimate, then counts the assembled text and
    corrects the estimate a few times."""

    def __init__(
        self, counter: TokenCounter, max_tokens: int, focus: str, items: Sequence[Item]
    ) -> None:
        self._counter = counter
        self._max_tokens = max_tokens
        self._focus = focus
        self._focus_line = ""
        self._tokens_per_char = 1.0
        words = {w for w in _FOCUS_WORD.findall(focus.lower()) if w not in _FOCUS_STOPWORDS}
        first_request = min(
            (item.order for item in items if item.section == REQUESTS), default=None
        )
        # The first request (the task) leads, then the other requests, most recent first; then
        # items sharing words with the focus; then by section, paths only seen in tool output
        # last. Within a section recent items win, except files (in order of appearance).
        self._candidates = sorted(
            items,
            key=lambda item: (
                item.section != REQUESTS,
                item.order != first_request,
                not (words and any(w in item.search_text for w in words)),
                item.tier,
                item.order if item.section == FILES else -item.order,
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
            self._focus_line = "Focus: " + head(self._focus, limit)
        target = float(self._max_tokens)
        best: tuple[str, int] | None = None
        for _ in range(_FIT_ATTEMPTS):
            chosen, complete = self._select(target)
            if not chosen:
                break
            text = render_sections(self._focus_line, chosen)
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
        return self.estimate(TITLES[section]) + 2

    def room_chars(self, tokens: float) -> int:
        return int(tokens / self._tokens_per_char)

    def _select(self, target: float) -> tuple[list[Item], bool]:
        """Items by priority whose estimated tokens fit `target`; and whether all fitted whole.

        Requests come first but take at most half of the target at first, so that a long
        session's many prompts leave room for its errors; what they leave over goes to the
        requests that did not fit, then to the one cut short."""
        selection = _Selection(self, self.estimate(self._focus_line) if self._focus_line else 0)
        request_limit = selection.used + target * _REQUEST_SHARE
        deferred: list[Item] = []
        for item in self._candidates:
            if item.section == REQUESTS:
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

    def _truncate_to_fit(self, text: str) -> tuple[str, int]:
        """The longest head of `text` (with a marker when cut) within `max_tokens`."""
        tokens = self._counter.count(text)
        if tokens <= self._max_tokens:
            return text, tokens
        low, high = 1, len(text) - 1
        best = ("", 0)
        while low <= high:
            middle = (low + high) // 2
            candidate = head(text, middle)
            candidate_tokens = self._counter.count(candidate)
            if candidate_tokens <= self._max_tokens and candidate.strip():
                best = (candidate, candidate_tokens)
                low = middle + 1
            else:
                high = middle - 1
        return best


class _Selection:
    """The items chosen so far for one target, and their estimated tokens."""

    def __init__(self, fitter: Fitter, used: float) -> None:
        self._fitter = fitter
        self.used = used
        self.chosen: list[Item] = []
        self._sections: set[int] = set()
        self._cut: tuple[Item, Item] | None = None

    def offer(self, item: Item, limit: float, *, cut: bool = True) -> bool:
        """Takes `item` if it fits under `limit`, or (if allowed) its head; says if it did."""
        header = 0.0 if item.section in self._sections else self._fitter.header_cost(item.section)
        cost = self._fitter.estimate(item.text) + header
        if self.used + cost <= limit:
            self._take(item, cost)
            return True
        room = self._fitter.room_chars(limit - self.used - header - 4)
        if not (cut and item.truncatable and room >= _MIN_CUT_CHARS and self._cut is None):
            return False
        shortened = attrs.evolve(item, text=render_request(head(item.plain, room)))
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
        grown_plain = head(whole.plain, room)
        grown = (
            whole
            if grown_plain == whole.plain
            else attrs.evolve(whole, text=render_request(grown_plain))
        )
        self.used += self._fitter.estimate(grown.text) - self._fitter.estimate(shortened.text)
        self.chosen[self.chosen.index(shortened)] = grown
        self._cut = None if grown is whole else (whole, grown)

    def _take(self, item: Item, cost: float) -> None:
        self.chosen.append(item)
        self._sections.add(item.section)
        self.used += cost
