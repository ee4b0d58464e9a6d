"""The `TokenCounter` contract, run against the fake and every real counter.

Only properties that hold for byte-level BPE are asserted: a BPE count is not additive (joining
two texts can take more tokens than counting them apart), so no test relies on that.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from abridged.adapters import token_counters
from abridged.adapters.token_counters import (
    DEFAULT_CHARS_PER_TOKEN,
    CharRatioCounter,
    TiktokenCounter,
    TokenCounterUnavailableError,
    default_token_counter,
)
from abridged.application.ports import TokenCounter
from tests.support.fakes import FakeTokenCounter

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPTS = PROJECT_ROOT.parent / "shared" / "data" / "transcripts"

ODD_TEXTS = (
    "<|endoftext|>",
    "before <|endoftext|> after <|fim_prefix|>",
    "\x00",
    "a\x00b",
    "👍🏽👨‍👩‍👧‍👦",
    "e\u0301\u0301\u0301",  # stacked combining marks
    "\u200b",  # zero-width space
    " ",
    "\n\n\n",
    "\t",
    "中文文本と日本語",
)

# Any text Python can encode to UTF-8: everything but lone surrogates.
any_text = st.text(st.characters(exclude_categories=["Cs"])) | st.sampled_from(ODD_TEXTS)


class TokenCounterContract:
    """What every `TokenCounter` promises. Subclasses say which counter to build."""

    def make_counter(self) -> TokenCounter:
        raise NotImplementedError

    def test_satisfies_the_port(self) -> None:
        assert isinstance(self.make_counter(), TokenCounter)

    def test_empty_text_counts_zero(self) -> None:
        assert self.make_counter().count("") == 0

    def test_name_is_a_non_empty_string_that_does_not_change(self) -> None:
        counter = self.make_counter()
        assert isinstance(counter.name, str)
        assert counter.name.strip()
        counter.count("some text")
        assert counter.name == self.make_counter().name

    @pytest.mark.parametrize("text", ODD_TEXTS)
    def test_odd_text_counts_without_raising(self, text: str) -> None:
        assert self.make_counter().count(text) > 0

    # The properties are built per test call: a `@given` method inherited by several
    # subclasses would share one example database entry across different counters.

    def test_non_empty_text_counts_at_least_one(self) -> None:
        counter = self.make_counter()

        @given(text=any_text.filter(bool))
        @example(text="<|endoftext|>")
        def check(text: str) -> None:
            assert counter.count(text) >= 1

        check()

    def test_never_more_tokens_than_utf8_bytes(self) -> None:
        counter = self.make_counter()

        @given(text=any_text)
        def check(text: str) -> None:
            assert counter.count(text) <= len(text.encode("utf-8"))

        check()

    def test_deterministic_across_calls_and_instances(self) -> None:
        counter = self.make_counter()

        @given(text=any_text)
        def check(text: str) -> None:
            first = counter.count(text)
            assert counter.count(text) == first
            assert self.make_counter().count(text) == first

        check()

    def test_longer_text_counts_more(self) -> None:
        counter = self.make_counter()
        sentence = "The quick brown fox jumps over the lazy dog. "
        assert counter.count(sentence * 100) > counter.count(sentence) * 10


class TestFakeTokenCounter(TokenCounterContract):
    def make_counter(self) -> TokenCounter:
        return FakeTokenCounter()


class TestTiktokenCounter(TokenCounterContract):
    def make_counter(self) -> TokenCounter:
        return TiktokenCounter()

    def test_counts_cl100k_tokens(self) -> None:
        # Known cl100k counts: one token per common English word here.
        assert TiktokenCounter().count("hello world") == 2

    def test_special_token_text_counts_as_ordinary_text(self) -> None:
        counter = TiktokenCounter()
        assert counter.count("<|endoftext|>") > 1

    def test_name(self) -> None:
        assert TiktokenCounter().name == "tiktoken:cl100k_base"


class TestCharRatioCounter(TokenCounterContract):
    def make_counter(self) -> TokenCounter:
        return CharRatioCounter()

    def test_divides_length_by_the_ratio_rounding_up(self) -> None:
        counter = CharRatioCounter(4.0)
        assert counter.count("abcd") == 1
        assert counter.count("abcde") == 2
        assert counter.name == "chars/4.0"

    @pytest.mark.parametrize("ratio", [0.0, -1.0, float("nan"), float("inf")])
    def test_rejects_a_ratio_that_is_not_positive_and_finite(self, ratio: float) -> None:
        with pytest.raises(ValueError, match="chars_per_token"):
            CharRatioCounter(ratio)

    def test_default_over_counts_a_typical_agent_exchange(self) -> None:
        reference = TiktokenCounter()
        fallback = CharRatioCounter()
        traffic = _agent_traffic()
        assert sum(map(fallback.count, traffic)) >= sum(map(reference.count, traffic))

    @pytest.mark.parametrize("kind", ["prose", "code", "json"])
    def test_default_over_counts_prose_code_and_json(self, kind: str) -> None:
        text = {
            "prose": _agent_traffic()[0] + " " + _agent_traffic()[1],
            "code": _agent_traffic()[2],
            "json": _agent_traffic()[3],
        }[kind]
        assert CharRatioCounter().count(text) >= TiktokenCounter().count(text)

    @pytest.mark.transcripts
    def test_default_over_counts_the_shared_real_transcripts(self) -> None:
        if not TRANSCRIPTS.is_dir():
            pytest.skip(f"no shared transcripts at {TRANSCRIPTS}")
        texts = [
            line for path in sorted(TRANSCRIPTS.glob("*.jsonl")) for line in _block_texts(path)
        ]
        assert texts
        assert sum(map(CharRatioCounter().count, texts)) >= sum(map(TiktokenCounter().count, texts))

    @given(samples=st.lists(any_text, min_size=1, max_size=8).filter(any))
    def test_calibrated_never_under_counts_the_total_of_its_samples(
        self, samples: list[str]
    ) -> None:
        reference = TiktokenCounter()
        calibrated = CharRatioCounter.calibrated(reference, samples)
        assert sum(map(calibrated.count, samples)) >= sum(map(reference.count, samples))

    def test_calibrated_on_cjk_counts_more_than_the_default(self) -> None:
        samples = [
            "这是一个用于测试的中文句子，包含常见的汉字。",
            "日本語のテキストも含まれています。",
        ]
        calibrated = CharRatioCounter.calibrated(TiktokenCounter(), samples)
        assert calibrated.chars_per_token < DEFAULT_CHARS_PER_TOKEN
        assert calibrated.name == f"chars/{calibrated.chars_per_token}"

    def test_calibrated_accepts_a_one_shot_iterable(self) -> None:
        samples = iter(["some text to count", "and some more"])
        calibrated = CharRatioCounter.calibrated(TiktokenCounter(), samples)
        assert calibrated.count("some text to count") >= 1

    def test_calibrating_on_nothing_is_refused(self) -> None:
        with pytest.raises(ValueError, match="samples"):
            CharRatioCounter.calibrated(TiktokenCounter(), ["", ""])


class TestTiktokenOffline:
    def test_counts_with_an_empty_cache_and_no_network(self, tmp_path: Path) -> None:
        script = """
import socket, sys

def refuse(*args, **kwargs):
    raise OSError("network access attempted")

socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
try:
    socket.create_connection(("example.com", 443))
except OSError:
    pass
else:
    sys.exit("the network guard does not work")

from abridged.adapters.token_counters import TiktokenCounter
print(TiktokenCounter().count("hello world, counted offline"))
"""
        cache = tmp_path / "tiktoken-cache"
        cache.mkdir()
        env = {k: v for k, v in os.environ.items() if k != "DATA_GYM_CACHE_DIR"}
        env |= {
            "TIKTOKEN_CACHE_DIR": str(cache),
            "HTTP_PROXY": "http://127.0.0.1:9",
            "HTTPS_PROXY": "http://127.0.0.1:9",
        }
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert int(result.stdout) == TiktokenCounter().count("hello world, counted offline")

    def test_building_a_counter_does_not_load_the_tokenizer(self) -> None:
        script = (
            "import sys\n"
            "from abridged.adapters.token_counters import TiktokenCounter\n"
            "TiktokenCounter()\n"
            "print('tiktoken' in sys.modules)\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "False"


class TestDefaultTokenCounter:
    def test_is_tiktoken_when_the_encoding_loads(self) -> None:
        assert default_token_counter().name == TiktokenCounter().name

    def test_falls_back_to_char_ratio_and_says_so(
        self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        def unavailable() -> None:
            raise TokenCounterUnavailableError("no tokenizer here")

        monkeypatch.setattr(token_counters, "_cl100k", unavailable)
        with caplog.at_level(logging.WARNING, logger="abridged"):
            counter = default_token_counter()
        assert isinstance(counter, CharRatioCounter)
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert [r.name for r in warnings] == ["abridged.adapters.token_counters"]
        assert "no tokenizer here" in warnings[0].getMessage()


def _block_texts(path: Path) -> list[str]:
    """The text of every text, tool input and tool output block of a transcript."""
    texts: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        content = json.loads(line)["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if block["type"] == "text":
                texts.append(block["text"])
            elif block["type"] == "tool_use":
                texts.append(json.dumps(block["input"], ensure_ascii=False))
            elif block["type"] == "tool_result":
                inner = block.get("content", "")
                if isinstance(inner, str):
                    texts.append(inner)
                else:
                    texts.extend(part.get("text", "") for part in inner)
    return texts


def _agent_traffic() -> list[str]:
    """Short samples of what agents send: prose, code, JSON, shell output, a traceback."""
    return [
        "Please fix the failing login test; the session cookie is not set after a redirect.",
        "I'll start by reading the test and the middleware that sets the cookie.",
        'def set_cookie(response, name, value):\n    response.headers["Set-Cookie"] = '
        'f"{name}={value}; Path=/; HttpOnly"\n    return response\n',
        json.dumps(
            {"command": "pytest -x tests/test_auth.py", "timeout": 120, "cwd": "/srv/app"},
        ),
        "total 48\ndrwxr-xr-x  5 dev staff  160 Mar  3 10:02 src\n"
        "-rw-r--r--  1 dev staff 1204 Mar  3 10:02 pyproject.toml\n",
        'Traceback (most recent call last):\n  File "app/main.py", line 12, in <module>\n'
        "    main()\nKeyError: 'session'\n",
        "FAILED tests/test_auth.py::test_login_sets_cookie - AssertionError: assert None\n"
        "1 failed, 41 passed in 2.31s\n",
    ]
