"""What a summary is made of: items, each belonging to one of its sections."""

from __future__ import annotations

import attrs

REQUESTS, ERRORS, FILES, COMMANDS, DECISIONS, EARLIER = range(6)
TITLES = ("User requests", "Errors", "Files", "Commands", "Decisions", "Earlier summaries")
"""Section titles, in the order a summary shows them. `Earlier summaries` holds, fenced, the
earlier chunks being folded that another summarizer wrote (a hook's, a model's, a failed
summary's note): their lines never join the sections above, whatever they say."""


@attrs.frozen
class Item:
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
        return self.section if self.preferred else len(TITLES)
