"""Speed of the parts a command leans on: the demo generator and the extractive summarizer.

Run with `make bench`; prints the best of five runs of each, in milliseconds. These used to
be timed assertions in unit tests; a busy machine made them flaky and they proved nothing
about behaviour.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from abridged.adapters.demo import demo_transcript
from abridged.adapters.summarizers import ExtractiveSummarizer
from abridged.adapters.token_counters import TiktokenCounter
from abridged.domain.messages import Message, ToolResultBlock, ToolUseBlock

RUNS = 5


def best_ms(run: Callable[[], object]) -> float:
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings) * 1000


def megabyte_of_history() -> list[Message]:
    listing = "".join(f"src/pkg/module_{i}.py: def handler_{i}(request): ...\n" for i in range(40))
    messages = [Message.user("Port the test-suite to pytest and keep it green.")]
    for n in range(500):
        failed = n % 25 == 0
        output = listing + (
            f"FAILED tests/test_{n}.py::test_case - AssertionError\n" if failed else ""
        )
        call = ToolUseBlock(f"t{n}", "bash", {"command": f"grep -rn handler src/pkg | head -{n}"})
        messages.append(Message.assistant(f"Step {n}: checking the handlers.", call))
        messages.append(Message.user(ToolResultBlock(f"t{n}", output, is_error=failed)))
    return messages


def main() -> None:
    counter = TiktokenCounter()
    counter.count("load the encoding before timing")
    summarizer = ExtractiveSummarizer(counter)
    history = megabyte_of_history()
    print(f"demo transcript generation: {best_ms(demo_transcript):8.1f} ms (best of {RUNS})")
    summarize = lambda: summarizer.summarize(history, max_tokens=4_000)  # noqa: E731
    print(f"extractive summary of 1 MB:  {best_ms(summarize):8.1f} ms (best of {RUNS})")


if __name__ == "__main__":
    main()
