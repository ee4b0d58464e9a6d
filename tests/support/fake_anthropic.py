"""A local HTTP server that speaks the Anthropic Messages API, for tests through the real SDK.

`FakeAnthropic` listens on 127.0.0.1 (a free port) in a daemon thread and answers
`POST /v1/messages` (plain JSON, or server-sent events when the body asks for `stream`) and
`POST /v1/messages/count_tokens` with the API's shapes: a `message` object with `usage`,
`{"input_tokens": n}`, and `{"type": "error", "error": {...}, "request_id": ...}` bodies under
the API's HTTP statuses.

Each path has a queue of scripted responses (`enqueue`); `fail_model` answers every request
for one model the same way. With nothing scripted, `/v1/messages` answers a canned text cut to
`max_tokens` words (or "prompt is too long" when the body is over `context_window` tokens) and
count_tokens answers a count from the body's size: one token per four characters of JSON.
Every request is recorded (`requests`) and every `/v1/messages` body is checked with
`tests.support.anthropic_rules.violations`: one that breaks a rule gets the API's 400
`invalid_request_error`, naming the first broken rule, before any scripted answer.

Retry timing: the SDK obeys `retry-after` (and `retry-after-ms`) before its own backoff of
0.5 s, 1 s, ... The real API asks for whole seconds on 429s; the fake's retryable errors ask
for `FAST_RETRY` seconds so that retried tests take milliseconds. Pass `retry_after=None` to
see the SDK's own backoff.
"""

from __future__ import annotations

import itertools
import json
import math
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs
import pytest

from tests.support import api_features
from tests.support.anthropic_rules import Violation, violations
from tests.support.thinking_binding import (
    PREFIX_MISMATCH,
    binding_failures,
    drop_requested,
    is_bound_model,
    sign_reply,
    without_blocks,
)

if TYPE_CHECKING:
    # Imported where a client is made: this module is a pytest plugin, loaded by every
    # process of a run (the xdist controller too), and the SDK takes seconds to import.
    import anthropic

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
FAST_RETRY = "0.01"
DEFAULT_CONTEXT_WINDOW = 200_000
TEST_API_KEY = "sk-ant-test-key"
CANNED_TEXT = (
    "The user asked to fix the CSV export that dropped the last row in reports/export.py. "
    "Running the tests failed with an off-by-one assertion; the row slice was corrected, and "
    "the export now keeps every row. Next: run the whole test suite and update the changelog."
)
COUNT_TOKENS_FIELDS = frozenset(
    {
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "cache_control",
        "output_config",
        "context_management",
        "speed",
    }
)
"""Top-level fields count_tokens accepts; anything else is a 400 "Extra inputs are not
permitted", as from the real API."""

_REQUIRED_FIELDS = {
    MESSAGES_PATH: ("model", "max_tokens", "messages"),
    COUNT_TOKENS_PATH: ("model", "messages"),
}
_REASONS = {529: "Overloaded"}
SPLIT_PAUSE = 0.05
"""Seconds between the pieces of a body sent in pieces (`Response.splits`)."""
_TEXT_CHUNK = 24
_JSON_CHUNK = 16


def estimate_tokens(body: object) -> int:
    """The fake's token count for a request body: one token per four characters of JSON,
    and `IMAGE_TOKENS` for an inline image's data (the API counts an image by its size in
    pixels, never by its bytes)."""
    images: list[int] = []
    text = json.dumps(_without_image_data(body, images), ensure_ascii=False)
    return max(1, math.ceil(len(text) / 4) + IMAGE_TOKENS * len(images))


IMAGE_TOKENS = 1_600
"""What the fake counts for an inline image: about the most the API counts for one, once it
is scaled down to its largest size."""


def _without_image_data(value: object, images: list[int]) -> object:
    if isinstance(value, list):
        return [_without_image_data(item, images) for item in value]
    if not isinstance(value, dict):
        return value
    source = value.get("source")
    if value.get("type") == "image" and isinstance(source, dict) and "data" in source:
        images.append(1)
        return {**value, "source": {**source, "data": ""}}
    return {key: _without_image_data(item, images) for key, item in value.items()}


@attrs.frozen
class Response:
    """One scripted answer.

    A message reply's `body` may leave out `id`, `model` (the request's is used) and
    `usage.input_tokens` (the body's estimate is used). For a streamed request,
    `midstream_error` is sent as an `error` event right after `message_start`, and
    `cut_stream` drops the connection half way through the events.
    """

    status: int
    body: Mapping[str, Any]
    headers: Mapping[str, str] = attrs.field(factory=dict)
    midstream_error: Mapping[str, Any] | None = None
    cut_stream: bool = False
    raw: bytes | None = None
    """Sent as the body instead of `body`, byte for byte (a malformed answer)."""
    content_type: str = "application/json"
    """The content type of a `raw` body."""
    delay: float = 0.0
    """Seconds the server waits before it answers (a slow or stuck API)."""
    splits: tuple[int, ...] = ()
    """Offsets in the body where the server flushes and pauses (`SPLIT_PAUSE`), so the
    client reads the pieces apart, as from a network that splits a stream anywhere."""
    hold: threading.Event | None = None
    """The server waits until it is set: before it answers at all, or, for a streamed
    reply, after the events up to the first delta. A client that closes the connection
    meanwhile is noted (`FakeAnthropic.abandoned`) and the rest is not sent."""
    hold_whole: bool = False
    """A stream too is held back before it starts (its headers included)."""


def held(response: Response, until: threading.Event, *, whole: bool = False) -> Response:
    """`response`, held back until `until` is set (a stream after its first delta, unless
    `whole`: then before its headers)."""
    return attrs.evolve(response, hold=until, hold_whole=whole)


def message(
    content: str | Sequence[Mapping[str, Any]] = "Done.",
    *,
    stop_reason: str = "end_turn",
    usage: Mapping[str, int] | None = None,
    model: str | None = None,
) -> Response:
    """A 200 message reply: `content` is a text or a list of content blocks."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    body: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(usage or {}),
    }
    if model is not None:
        body["model"] = model
    return Response(200, body)


def error(
    status: int, kind: str, text: str, *, headers: Mapping[str, str] | None = None
) -> Response:
    """An API error: `{"type": "error", "error": {"type": kind, "message": text}}`."""
    return Response(
        status,
        {"type": "error", "error": {"type": kind, "message": text}},
        headers=dict(headers or {}),
    )


def _retry_headers(retry_after: str | None) -> dict[str, str]:
    return {} if retry_after is None else {"retry-after": retry_after}


def prompt_too_long(tokens: int = 208_656, maximum: int = 200_000) -> Response:
    """400 invalid_request_error "prompt is too long: N tokens > M maximum"."""
    return error(
        400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {maximum} maximum"
    )


def invalid_request(text: str = "messages.0.content: Field required") -> Response:
    """400 invalid_request_error."""
    return error(400, "invalid_request_error", text)


def authentication_error() -> Response:
    """401 authentication_error "invalid x-api-key"."""
    return error(401, "authentication_error", "invalid x-api-key")


def model_not_found(model: str = "claude-unknown") -> Response:
    """404 not_found_error "model: <model>"."""
    return error(404, "not_found_error", f"model: {model}")


def rate_limited(retry_after: str | None = FAST_RETRY) -> Response:
    """429 rate_limit_error, with a `retry-after` header unless `retry_after` is None."""
    return error(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
        headers=_retry_headers(retry_after),
    )


def api_error(retry_after: str | None = FAST_RETRY) -> Response:
    """500 api_error."""
    return error(500, "api_error", "Internal server error", headers=_retry_headers(retry_after))


def overloaded(
    retry_after: str | None = FAST_RETRY, *, should_retry: bool | None = None
) -> Response:
    """529 overloaded_error; `should_retry` sets the `x-should-retry` header."""
    headers = _retry_headers(retry_after)
    if should_retry is not None:
        headers["x-should-retry"] = "true" if should_retry else "false"
    return error(529, "overloaded_error", "Overloaded", headers=headers)


def overloaded_midstream(content: str = "Partial answer") -> Response:
    """A stream that starts, then fails with an `overloaded_error` event (HTTP 200)."""
    reply = message(content)
    return attrs.evolve(
        reply,
        midstream_error={
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        },
    )


def dropped_stream(content: str = "Partial answer") -> Response:
    """A stream whose connection is dropped half way through."""
    return attrs.evolve(message(content), cut_stream=True)


def malformed(raw: bytes, content_type: str = "application/json", status: int = 200) -> Response:
    """A body that is not what the API sends: `raw` bytes under `content_type`."""
    return Response(status, {}, raw=raw, content_type=content_type)


def truncated_json() -> Response:
    """A 200 whose JSON body stops half way."""
    return malformed(b'{"id": "msg_1", "type": "message", "role": "assistant", "conte')


def empty_body() -> Response:
    """A 200 with an empty body."""
    return malformed(b"")


def plain_text() -> Response:
    """A 200 in text/plain (a proxy's page, say)."""
    return malformed(b"upstream connect error or disconnect/reset", "text/plain")


def bad_sse_data() -> Response:
    """A 200 event stream whose first event's data is not JSON."""
    return malformed(
        b"event: message_start\ndata: {not json\n\n", "text/event-stream; charset=utf-8"
    )


def html_error(status: int = 502) -> Response:
    """An HTML error page from a gateway, under an error status."""
    return malformed(b"<html><body>Bad Gateway</body></html>", "text/html", status)


def slow(response: Response, seconds: float) -> Response:
    """`response`, sent after `seconds`."""
    return attrs.evolve(response, delay=seconds)


def token_count(tokens: int) -> Response:
    """A count_tokens answer."""
    return Response(200, {"input_tokens": tokens})


@attrs.frozen
class ReceivedRequest:
    """One request as the server saw it; `body` is the parsed JSON (None when unreadable)."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: Any
    violations: tuple[Violation, ...]

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, Mapping) else None

    @property
    def api_key(self) -> str | None:
        """The key sent: as `x-api-key`, or as a bearer token (what SDK 2.x sends)."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None


@attrs.frozen
class _Reply:
    status: int
    headers: Mapping[str, str]
    payload: bytes
    cut_at: int | None = None
    """For a dropped stream: how many bytes of `payload` are sent before closing."""
    delay: float = 0.0
    splits: tuple[int, ...] = ()
    hold: threading.Event | None = None
    held_from: int = 0
    """How many bytes of `payload` are sent before waiting for `hold`."""


def _held_from(payload: bytes) -> int:
    """Where a held stream pauses: after its first delta (the client has begun to read)."""
    first = payload.find(b"event: content_block_delta")
    return payload.index(b"\n\n", first) + 2 if first >= 0 else 0


class FakeAnthropic:
    """The fake Messages API server; use it as a context manager (it starts and stops)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._queues: dict[str, deque[Response]] = {}
        self._model_rules: dict[str, Response] = {}
        self._client: anthropic.Anthropic | None = None
        self.requests: list[ReceivedRequest] = []
        self.holding = threading.Semaphore(0)
        """Released once for each answer as it starts to be held back (`Response.hold`)."""
        self.abandoned = threading.Semaphore(0)
        """Released once for each answer whose client closed the connection before all of it
        was sent (while it was held back, or being written)."""
        self.context_window = DEFAULT_CONTEXT_WINDOW
        self.reply_text = CANNED_TEXT
        self.compaction_text = CANNED_TEXT
        """What on-demand compaction requests are answered with (`api_features`)."""
        self.models_like: dict[str, str] = {}
        """Model names this server checks as if they were another (a host's own model
        name, checked like the known model whose rules it has), e.g. `{"acme-1":
        "claude-fable-5"}`."""
        handler = type("FakeAnthropicHandler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._thread: threading.Thread | None = None

    # Lifecycle.

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeAnthropic:
        """Starts serving in a daemon thread."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="fake-anthropic",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and closes the socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def client(self) -> anthropic.Anthropic:
        """An SDK client for this server (made once: building one takes ~0.1 s), with no
        retries of its own; adapters set theirs with `with_options`."""
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(
                api_key=TEST_API_KEY, base_url=self.base_url, max_retries=0, timeout=10.0
            )
        return self._client

    # Scripting.

    def reset(self) -> None:
        """Forgets every scripted response and received request, and restores the defaults."""
        with self._lock:
            self._queues.clear()
            self._model_rules.clear()
            self.requests.clear()
            self.holding = threading.Semaphore(0)
            self.abandoned = threading.Semaphore(0)
            self.context_window = DEFAULT_CONTEXT_WINDOW
            self.reply_text = CANNED_TEXT
            self.compaction_text = CANNED_TEXT
            self.models_like.clear()

    def enqueue(self, *responses: Response, path: str = MESSAGES_PATH) -> None:
        """Answers the next requests to `path` with `responses`, in order."""
        with self._lock:
            self._queues.setdefault(path, deque()).extend(responses)

    def fail_model(self, model: str, response: Response) -> None:
        """Answers every `/v1/messages` request for `model` with `response`."""
        with self._lock:
            self._model_rules[model] = response

    def requests_to(self, path: str = MESSAGES_PATH) -> list[ReceivedRequest]:
        """The requests received on `path`, in order."""
        with self._lock:
            return [request for request in self.requests if request.path == path]

    @property
    def violations(self) -> list[Violation]:
        """Every Messages request rule broken by any `/v1/messages` body received."""
        with self._lock:
            return [found for request in self.requests for found in request.violations]

    # Answering.

    def answer(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> _Reply:
        """The reply to one HTTP request (called by the handler thread)."""
        split = urlsplit(target)
        path, query = split.path, split.query
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        found: tuple[Violation, ...] = ()
        checked = body
        model = body.get("model") if isinstance(body, Mapping) else None
        if isinstance(model, str) and model in self.models_like:
            checked = {**body, "model": self.models_like[body["model"]]}
        if path == MESSAGES_PATH and isinstance(checked, Mapping):
            found = tuple(violations(checked))
        with self._lock:
            self.requests.append(ReceivedRequest(method, path, query, dict(headers), body, found))
            response = self._choose(method, path, headers, raw, checked, found)
            request_id = f"req_fake{next(self._ids):08d}"
            if response.status == 200 and response.body.get("type") == "message":
                reply_body = self._complete_message(response.body, body)
                if is_bound_model(checked.get("model")):
                    reply_body = _bound(reply_body, checked)
            else:
                reply_body = dict(response.body)
        if response.status >= 400:
            reply_body["request_id"] = request_id
        reply_headers = {"request-id": request_id, **response.headers}
        if response.raw is not None:
            reply_headers["content-type"] = response.content_type
            return _Reply(
                response.status,
                reply_headers,
                response.raw,
                delay=response.delay,
                splits=response.splits,
            )
        streamed = isinstance(body, Mapping) and body.get("stream") is True
        if response.status == 200 and streamed and reply_body.get("type") == "message":
            payload = _sse(reply_body, response.midstream_error)
            reply_headers["content-type"] = "text/event-stream; charset=utf-8"
            cut_at = len(payload) // 2 if response.cut_stream else None
            return _Reply(
                200,
                reply_headers,
                payload,
                cut_at,
                response.delay,
                hold=response.hold,
                held_from=0 if response.hold_whole else _held_from(payload),
            )
        reply_headers["content-type"] = "application/json"
        return _Reply(
            response.status,
            reply_headers,
            json.dumps(reply_body).encode(),
            delay=response.delay,
            hold=response.hold,
        )

    def _choose(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        raw: bytes,
        body: Any,
        found: Sequence[Violation] = (),
    ) -> Response:
        if method != "POST" or path not in (MESSAGES_PATH, COUNT_TOKENS_PATH):
            return error(404, "not_found_error", f"Not found: {method} {path}")
        if not headers.get("x-api-key") and not headers.get("authorization"):
            return error(401, "authentication_error", "x-api-key header is required")
        if not isinstance(body, Mapping):
            return invalid_request(
                "There was an issue with the request body: expected a JSON object"
                if raw
                else "request body is empty"
            )
        if problem := self._schema_problem(path, body):
            return invalid_request(problem)
        if path == MESSAGES_PATH and is_bound_model(body.get("model")):
            failures = binding_failures(body)
            if failures and not drop_requested(body):
                i, j = failures[0]
                return invalid_request(f"messages.{i}.content.{j}: {PREFIX_MISMATCH}")
        if path == MESSAGES_PATH and (refused := api_features.refusal(body, headers)):
            return Response(refused["status"], refused["body"])
        if found:
            # The real API refuses a request that breaks a rule: answering it would hide the
            # break from every test that does not look at `violations`.
            return invalid_request(f"{found[0].where}: {found[0].detail}")
        model = body.get("model")
        if path == MESSAGES_PATH and isinstance(model, str) and model in self._model_rules:
            return self._model_rules[body["model"]]
        queue = self._queues.get(path)
        if queue:
            return queue.popleft()
        if path == MESSAGES_PATH and "compaction" in body:
            answer = api_features.compaction_reply(body, headers, self.compaction_text)
            return Response(answer["status"], answer["body"])
        tokens = estimate_tokens(body)
        if path == COUNT_TOKENS_PATH:
            return token_count(tokens)
        if tokens > self.context_window:
            return prompt_too_long(tokens, self.context_window)
        words = self.reply_text.split()
        limit = body["max_tokens"]
        cut = len(words) > limit
        return message(
            " ".join(words[:limit]),
            stop_reason="max_tokens" if cut else "end_turn",
            usage={"output_tokens": min(len(words), limit)},
        )

    @staticmethod
    def _schema_problem(path: str, body: Mapping[str, Any]) -> str | None:
        for field in _REQUIRED_FIELDS[path]:
            if field not in body:
                return f"{field}: Field required"
        if path == COUNT_TOKENS_PATH:
            for field in body:
                if field not in COUNT_TOKENS_FIELDS:
                    return f"{field}: Extra inputs are not permitted"
        elif not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
            return "max_tokens: Input should be greater than or equal to 1"
        return None

    def _complete_message(self, template: Mapping[str, Any], request: Any) -> dict[str, Any]:
        reply = dict(template)
        reply.setdefault("id", f"msg_fake{next(self._ids):08d}")
        if reply.get("model") is None:
            reply["model"] = request.get("model", "claude-fake") if request else "claude-fake"
        usage = {
            "input_tokens": estimate_tokens(request),
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        usage.update(template.get("usage") or {})
        reply["usage"] = usage
        # The API's key order, which the SDK does not need but a reader of a dump expects.
        order = ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")
        return {key: reply[key] for key in order if key in reply} | reply


def _bound(reply: dict[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """A reply of a model with preserved thinking: the blocks that failed the prefix check
    were dropped (the request asked for `drop_block`) and are listed in
    `input_transformations`; the reply's thinking is signed over the prefix it was produced
    under, as the request stood after the drop."""
    failures = binding_failures(request)
    if failures:
        request = without_blocks(request, failures)
        reply["input_transformations"] = [
            {
                "type": "thinking_block_dropped",
                "reason": "prefix_mismatch",
                "message_index": i,
                "block_index": j,
            }
            for i, j in failures
        ]
    reply["content"] = sign_reply(request, reply.get("content") or [])
    return reply


def _sse(reply: Mapping[str, Any], midstream_error: Mapping[str, Any] | None) -> bytes:
    """The reply as the API streams it: message_start, one start/delta.../stop per block,
    message_delta (stop reason, output tokens) and message_stop."""
    usage = dict(reply["usage"])
    start = dict(reply) | {
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage | {"output_tokens": 1},
    }
    events: list[tuple[str, Mapping[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    if midstream_error is not None:
        events.append(("error", midstream_error))
        return _encode(events)
    for index, block in enumerate(reply["content"]):
        events.extend(_block_events(index, block))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": reply["stop_reason"],
                    "stop_sequence": reply.get("stop_sequence"),
                },
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return _encode(events)


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    kind = block["type"]

    def start(content_block: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        return (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": content_block},
        )

    def delta(payload: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        return (
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": payload},
        )

    def rest(*streamed: str) -> dict[str, Any]:
        # Fields the block has besides those its deltas carry (a tool call's `caller`) come
        # with its start, as the API streams them.
        return {k: v for k, v in block.items() if k not in streamed}

    if kind == "text":
        yield start({**rest("text", "citations"), "text": "", "citations": None})
        for piece in _chunks(block["text"], _TEXT_CHUNK):
            yield delta({"type": "text_delta", "text": piece})
        for citation in block.get("citations") or ():
            yield delta({"type": "citations_delta", "citation": citation})
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        # A server or MCP call's input streams as a client call's does (the SDKs build all
        # three from `input_json_delta`).
        yield start({**rest("input"), "input": {}})
        for piece in _chunks(json.dumps(block["input"]), _JSON_CHUNK):
            yield delta({"type": "input_json_delta", "partial_json": piece})
    elif kind == "thinking":
        yield start({**rest("thinking", "signature"), "thinking": "", "signature": ""})
        for piece in _chunks(block["thinking"], _TEXT_CHUNK):
            yield delta({"type": "thinking_delta", "thinking": piece})
        yield delta({"type": "signature_delta", "signature": block["signature"]})
    else:
        # Blocks without deltas (redacted_thinking, server tools' results) arrive whole.
        yield start(block)
    yield ("content_block_stop", {"type": "content_block_stop", "index": index})


def _chunks(text: str, size: int) -> Iterator[str]:
    for offset in range(0, len(text), size):
        yield text[offset : offset + size]


def _encode(events: Sequence[tuple[str, Mapping[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The SDK closes a failed response's connection before retrying, and a dropped stream
        # closes it on purpose: a reset connection is expected here, not worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
    timeout = 5.0  # an idle kept-alive connection is closed, so its thread ends
    # Headers and body go out in separate writes; with Nagle's algorithm the body would wait
    # for the client's delayed ACK (~40 ms a request).
    disable_nagle_algorithm = True
    fake: FakeAnthropic

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.fake.answer(method, self.path, headers, raw)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.hold is not None and not reply.held_from and not self._held(reply.hold):
            return
        self.send_response(reply.status, _REASONS.get(reply.status))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(reply.payload)))
        if reply.cut_at is not None:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        payload = reply.payload[: reply.cut_at]
        if reply.hold is not None and reply.held_from:
            self.wfile.write(payload[: reply.held_from])
            self.wfile.flush()
            if not self._held(reply.hold):
                return
            payload = payload[reply.held_from :]
        starts = (0, *reply.splits)
        for start, end in zip(starts, (*reply.splits, len(payload)), strict=True):
            try:
                self.wfile.write(payload[start:end])
                self.wfile.flush()
            except ConnectionError:
                self.close_connection = True
                self.fake.abandoned.release()
                return
            if end < len(payload):
                time.sleep(SPLIT_PAUSE)

    def _held(self, hold: threading.Event) -> bool:
        """Waits for `hold`; False (and noted) when the client closed the connection first."""
        self.fake.holding.release()
        while not hold.wait(0.01):
            readable, _, _ = select.select([self.connection], [], [], 0)
            try:
                gone = bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
            except ConnectionError:
                gone = True
            if gone:
                self.close_connection = True
                self.fake.abandoned.release()
                return False
        return True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test output is no place for an access log


@pytest.fixture(scope="session", name="fake_anthropic_server")
def fake_anthropic_server_fixture() -> Iterator[FakeAnthropic]:
    """One fake server for the whole test session (stopped at its end)."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture(name="fake_anthropic")
def fake_anthropic_fixture(fake_anthropic_server: FakeAnthropic) -> FakeAnthropic:
    """The fake server, with no script and no recorded requests."""
    fake_anthropic_server.reset()
    return fake_anthropic_server
