"""Cache breakpoints the client asked for with a TTL: the proxy's own breakpoints on the
messages keep the API's order rule (a 1-hour entry never after a 5-minute one)."""

from __future__ import annotations

import httpx2

from tests.support.fake_anthropic import TEST_API_KEY, FakeAnthropic


def test_automatic_caching_for_an_hour_gets_hour_long_message_breakpoints(
    proxy: str, fake_anthropic: FakeAnthropic
) -> None:
    # Automatic caching puts the client's breakpoint on the last block: a 5-minute
    # breakpoint on any message before it is a 400 ("longer TTL must appear before shorter").
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Read the module and list its functions."}],
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
    }
    answer = httpx2.post(f"{proxy}/v1/messages", json=body, headers={"x-api-key": TEST_API_KEY})
    assert answer.status_code == 200, answer.text
    sent = fake_anthropic.requests_to()[-1].body
    assert sent["cache_control"] == body["cache_control"]
    marks = [
        b["cache_control"] for m in sent["messages"] for b in m["content"] if "cache_control" in b
    ]
    assert marks  # the proxy still marks the messages
    assert all(mark.get("ttl") == "1h" for mark in marks)
    assert fake_anthropic.violations == []
