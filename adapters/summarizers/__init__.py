"""Summarizers: the `Summarizer` port.

`ExtractiveSummarizer` writes no prose: it pulls out of the messages what an agent needs later
(the user's requests, errors, files, commands and decisions) and fits them to the budget by
priority. It needs no model and no network, so it always works, and the same messages always
give the same summary.

`extraction` walks the messages into `items`, with `errors` and `paths` telling which lines
and words are worth keeping, and `earlier` reading back the summaries it wrote before;
`fitting` chooses the items that fit the budget and `rendering` writes them as Markdown
sections; `extractive` holds the summarizer itself.
"""

from __future__ import annotations

from abridged.adapters.summarizers.extractive import ExtractiveSummarizer

__all__ = ["ExtractiveSummarizer"]
