"""Images and documents are shown whole or as a placeholder, never in part: a message too
large for its cap shows those that fit in what the others leave (docs/content.md, "Never
stuck")."""

from __future__ import annotations

from abridged.domain.degradation import plan_degradations
from abridged.domain.messages import ImageBlock, Message, TextBlock
from abridged.domain.tokens import MESSAGE_OVERHEAD, block_tokens
from tests.support.fakes import FakeTokenCounter
from tests.support.images import b64, png

COUNTER = FakeTokenCounter()


def screenshot(width: int, height: int) -> ImageBlock:
    return ImageBlock("base64", "image/png", b64(png(width, height)))


def test_a_prompt_of_screenshots_over_its_cap_shows_those_the_cap_holds() -> None:
    # Four screenshots of about 2,600, 5,100, 1,500 and 5,100 tokens and a question, capped
    # at 5,000: an equal share each is too little for any of them, but the two smaller fit
    # beside the question in what the placeholders of the two larger leave.
    message = Message.user(
        screenshot(1200, 1600),
        screenshot(2500, 1600),
        screenshot(1200, 900),
        screenshot(2500, 1600),
        TextBlock("What is the total on the second screenshot?"),
    )
    counts = [block_tokens(block, COUNTER.count) for block in message.content]
    cap = 5_000

    truncations, shown = plan_degradations(message, cap, COUNTER.count, counts)

    assert MESSAGE_OVERHEAD + sum(shown) <= cap
    assert sorted(t.block_index for t in truncations) == [1, 3]
    assert (shown[0], shown[2], shown[4]) == (counts[0], counts[2], counts[4])


def test_at_its_smallest_every_image_is_a_placeholder() -> None:
    message = Message.user(screenshot(400, 300), TextBlock("And this one?"))
    counts = [block_tokens(block, COUNTER.count) for block in message.content]

    truncations, _ = plan_degradations(message, 0, COUNTER.count, counts)

    assert [t.block_index for t in truncations] == [0]
