"""Images through the proxy: by Files API id (kept as the client sent it) and inline."""

from __future__ import annotations

from typing import Any

import anthropic

from abridged.application.service import Sessions
from abridged.domain.events import MessageAppended
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.images import b64, png

MODEL = "claude-opus-4-8"


def test_an_image_by_file_id_and_a_screenshot_reach_the_upstream_as_sent(
    client: anthropic.Anthropic, fake_anthropic: FakeAnthropic, store: Sessions
) -> None:
    # Before: an image by file ({"type": "file"}) was refused as an unsupported source.
    by_file = {"type": "image", "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wX"}}
    screenshot = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(png(1_280, 800))},
    }
    history: list[Any] = [
        {"role": "user", "content": [by_file, screenshot, {"type": "text", "text": "Differ?"}]}
    ]
    reply = client.messages.create(model=MODEL, max_tokens=100, messages=history)
    history.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
    history.append({"role": "user", "content": "And the colours?"})
    client.messages.create(model=MODEL, max_tokens=100, messages=history)

    sent = fake_anthropic.requests_to()
    assert fake_anthropic.violations == []
    assert [r.body["messages"][0]["content"][:2] for r in sent] == [[by_file, screenshot]] * 2
    events = store.history(store.list_sessions().sessions[0].id)
    first = next(e for e in events if isinstance(e, MessageAppended))
    # The file's size is unknown: it counts the most an image costs; the screenshot its own.
    assert first.block_tokens[0] > first.block_tokens[1] > 1_000
