"""A message the proxy receives is parsed and encoded once: a re-sent message is the one
parsed before, and the JSON its digest is taken from is the JSON its event stores."""

from __future__ import annotations

import hashlib
import json

from abridged.adapters.http.digests import message_digest
from abridged.adapters.http.history import Parser, raw_fingerprint
from abridged.application.transcodings import MessageAsJSON, message_json
from abridged.domain.messages import Message

LOG = "".join(f"{k:06d} INFO worker processed item, all fine\n" for k in range(20_000))


def test_a_large_message_is_encoded_once_for_its_digest_and_its_event() -> None:
    message = Message.from_wire({"role": "user", "content": [{"type": "text", "text": LOG}]})

    digest = message_digest(message)
    stored = MessageAsJSON().encode(message)

    assert stored is message_json(message)  # the same text, not encoded again
    assert Message.from_wire(json.loads(stored)) == message
    fresh = json.dumps(message.to_wire(), ensure_ascii=False, separators=(",", ":"))
    assert digest == hashlib.sha256(fresh.encode()).hexdigest()


def test_a_message_sent_again_is_the_message_parsed_the_first_time() -> None:
    parser = Parser()
    first = parser.parse([{"role": "user", "content": LOG}])
    # The same message as the next request's JSON brings it: equal values, new objects.
    again = parser.parse(json.loads(json.dumps([{"role": "user", "content": LOG}])))

    assert again.messages[0] is first.messages[0]
    assert again.digests == first.digests


def test_messages_that_differ_only_in_a_value_s_type_are_parsed_apart() -> None:
    def use(value: object) -> dict[str, object]:
        return {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": value}}],
        }

    parser = Parser()
    inputs = [1, 1.0, True, "1", [1], {"1": 1}, None]
    parsed = [parser.parse([use(value)]).messages[0] for value in inputs]

    assert [m.content[0].input["x"] for m in parsed] == inputs  # type: ignore[union-attr]
    assert len({raw_fingerprint(use(value)) for value in inputs}) == len(inputs)
    assert raw_fingerprint(["ab"]) != raw_fingerprint(["a", "b"])
    assert raw_fingerprint({"a": "b"}) != raw_fingerprint(["a", "b"])
