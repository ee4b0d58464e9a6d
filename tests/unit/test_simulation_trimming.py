"""`trimmed`: how the reference strategies drop their oldest turns to fit a request."""

from __future__ import annotations

from abridged.adapters.simulation.strategies import trimmed
from abridged.domain.messages import Message

MESSAGES = [
    Message.user("First request."),
    Message.assistant("Done."),
    Message.user("Second request."),
    Message.assistant("Done again."),
]
SIZES = [10, 20, 30, 40]


def test_what_fits_is_kept_whole() -> None:
    assert trimmed(MESSAGES, SIZES, 100) == (MESSAGES, SIZES, 0)


def test_the_oldest_messages_go_one_safe_start_at_a_time_until_the_rest_fits() -> None:
    kept, sizes, drops = trimmed(MESSAGES, SIZES, 70)

    assert (kept, sizes, drops) == (MESSAGES[2:], SIZES[2:], 2)


def test_the_last_message_stays_even_when_it_does_not_fit() -> None:
    kept, sizes, drops = trimmed(MESSAGES, SIZES, 5)

    assert (kept, sizes, drops) == (MESSAGES[3:], SIZES[3:], 3)
