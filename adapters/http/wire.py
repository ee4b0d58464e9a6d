"""What the proxy reads from a Messages request and writes back: the session's name, the
request's checks, the body and headers sent upstream, and the headers passed back."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from abridged.adapters.anthropic.request import CACHE_TTLS, render_request
from abridged.adapters.http.errors import ApiError
from abridged.adapters.http.history import Shape, stripped
from abridged.application.inputs import PLAIN_DEPTH
from abridged.application.service import PreparedRequest
from abridged.domain.messages import SERVER_TOOL_RESULT_TYPES, SERVER_TOOL_USE_TYPES

SESSION_HEADER = "x-abridged-session"
TOKEN_HEADER = "x-abridged-token"
MAX_NAME_LENGTH = 256
MAX_BREAKPOINTS = 4

# Not passed upstream: hop-by-hop headers, the body's framing (re-made), the proxy's own.
OWN_HEADER_PREFIX = "x-abridged-"
"""The proxy's own request headers: never sent upstream."""
_DROPPED_REQUEST_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "accept-encoding",
        "upgrade",
        "te",
        "trailer",
        "proxy-authorization",
        SESSION_HEADER,
        TOKEN_HEADER,
    }
)
# `location`: a client that followed it would send its body, key and token elsewhere.
_DROPPED_RESPONSE_HEADERS = frozenset(
    {
        "content-length",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "location",
    }
)


async def json_body(request: Request, limit: int) -> dict[str, Any]:
    """The request's body as a JSON object: 413 over `limit` bytes (before reading it all,
    when the client declared its length), 400 for anything but a JSON object in UTF-8 (NaN
    and Infinity are not JSON, and could not be sent on; nor could a number such as `1e999`,
    which Python reads as infinity and would write back as `Infinity`)."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        # What a web page may send anywhere without asking first (text/plain, a form): a
        # proxy on loopback with no tokens must not take it.
        raise ApiError(400, "invalid_request_error", "content-type must be application/json")
    if request.headers.get("content-encoding", "identity").strip().lower() != "identity":
        raise ApiError(400, "invalid_request_error", "a compressed request body is not accepted")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "request_too_large", f"the request is over {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "request_too_large", f"the request is over {limit} bytes")
        chunks.append(chunk)
    try:
        # Strict UTF-8: `json.loads` of bytes would take UTF-16, and surrogates encoded as
        # bytes, which cannot be stored or sent on.
        body = json.loads(
            b"".join(chunks).decode("utf-8"), parse_constant=_not_json, parse_float=_finite
        )
    except RecursionError:
        raise _too_deep() from None
    except ValueError:
        raise ApiError(
            400, "invalid_request_error", "the request body is not valid JSON in UTF-8"
        ) from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request_error", "the request body must be a JSON object")
    return body


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ApiError(
            400,
            "invalid_request_error",
            f"the request body holds a number too large to send on: {text[:20]}",
        )
    return value


def _too_deep() -> ApiError:
    return ApiError(
        400, "invalid_request_error", f"the request body is nested more than {PLAIN_DEPTH} deep"
    )


def check_sendable(body: Mapping[str, Any], *, skip: str | None = None) -> None:
    """400 unless every field of `body` (but `skip`, checked elsewhere) can be sent upstream
    as JSON in UTF-8: at most `PLAIN_DEPTH` deep (the proxy's own reading of a field, and
    the encoder, would otherwise run out of stack), and no lone surrogate (`"\\ud800"`)
    in a string or a key. Checked before anything is stored: a request that could not be
    sent stores nothing."""
    fields = {key: value for key, value in body.items() if key != skip}
    pending: list[tuple[Any, int]] = [(fields, 0)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > PLAIN_DEPTH:
            raise _too_deep()
        pending.extend((child, depth + 1) for child in children)
    try:
        json.dumps(fields, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise ApiError(
            400,
            "invalid_request_error",
            "the request body holds a lone surrogate (U+D800 to U+DFFF), which is not UTF-8",
        ) from None


def session_name(headers: Mapping[str, str], body: Mapping[str, Any]) -> str:
    """The `x-abridged-session` header, else `metadata.user_id` and the fingerprint of the
    system prompt (cache markers left out): `user:<id>|system:<16 hex digits>`."""
    named = headers.get(SESSION_HEADER, "").strip()
    if named:
        try:
            # HTTP carries a header's bytes, which the server reads as Latin-1; a client
            # writes a name in UTF-8 (and in ASCII, which UTF-8 reads the same).
            named = named.encode("latin-1").decode("utf-8")
        except UnicodeError:
            raise ApiError(400, "invalid_request_error", f"{SESSION_HEADER} is not UTF-8") from None
        if len(named) > MAX_NAME_LENGTH:
            raise ApiError(
                400,
                "invalid_request_error",
                f"{SESSION_HEADER} is over {MAX_NAME_LENGTH} characters",
            )
        return named
    metadata = body.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    system = json.dumps(stripped(body.get("system", "")), ensure_ascii=False, sort_keys=True)
    fingerprint = hashlib.sha256(system.encode()).hexdigest()[:16]
    return f"user:{user or ''}|system:{fingerprint}"


def new_texts(messages: Any) -> list[str]:
    """The texts of a request's last message (the one usually new) that its counts read as
    they came: a text block's text, a tool result's text (its content, or its text blocks')."""
    last = messages[-1] if isinstance(messages, list) and messages else None
    content = last.get("content") if isinstance(last, dict) else None
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for block in content if isinstance(content, list) else ():
        inner = block.get("content") if isinstance(block, dict) else None
        for item in [block, *(inner if isinstance(inner, list) else ())]:
            text = item.get("text") if isinstance(item, dict) else None
            if isinstance(text, str):
                texts.append(text)
        if isinstance(inner, str):
            texts.append(inner)
    return texts


def session_system(body: Mapping[str, Any]) -> str:
    """The system prompt's text, as the session counts it (the client's own `system` is what
    goes upstream)."""
    system = body.get("system", "")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n\n".join(
            str(block.get("text", "")) for block in system if isinstance(block, dict)
        )
    raise ApiError(400, "invalid_request_error", "system: a string or a list of text blocks")


def check_messages_request(body: Mapping[str, Any]) -> None:
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            raise ApiError(400, "invalid_request_error", f"{field}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise ApiError(400, "invalid_request_error", "model: a model name is required")
    max_tokens = body["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ApiError(400, "invalid_request_error", "max_tokens: a positive integer")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "invalid_request_error", "messages: at least one message")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise ApiError(400, "invalid_request_error", "tools: Input should be a valid list")
    for index, tool in enumerate(tools or ()):
        if not isinstance(tool, dict):
            raise ApiError(
                400, "invalid_request_error", f"tools.{index}: Input should be a valid dictionary"
            )
    # Trailing system messages follow the user's turn they belong to (the API takes them
    # there); what must not end the request is a prefilled assistant turn.
    turns = [m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")]
    last = turns[-1] if turns else None
    if not isinstance(last, dict) or (last.get("role") != "user" and not _paused(last)):
        raise ApiError(
            400,
            "invalid_request_error",
            "abridged: the last message must be the user's, or a paused turn (a prefilled "
            "assistant turn is not supported by the proxy)",
        )


def joined_user_turns(messages: list[Any]) -> list[Any]:
    """`messages` with each run of consecutive user messages joined into one, as the API
    joins them ("Consecutive `user` or `assistant` turns in your request will be combined
    into a single turn"): the tool rules then apply to the joined turn, as they do
    upstream, and the session stores the turn the model is sent. A client that sends an
    interruption, or a note after its tool results, as a message of its own is answered
    instead of refused. Anything not shaped as a message is left for the parse to refuse."""
    joined: list[Any] = []
    for message in messages:
        previous: Any = joined[-1] if joined else None
        if _user_turn(message) and _user_turn(previous):
            content = [*_blocks(previous["content"]), *_blocks(message["content"])]
            joined[-1] = {**previous, "content": content}
        else:
            joined.append(message)
    return joined


def _user_turn(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and message.get("role") == "user"
        and isinstance(message.get("content"), str | list)
    )


def _blocks(content: str | list[Any]) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _paused(message: dict[str, Any]) -> bool:
    """Whether a final assistant message is a paused turn (`pause_turn`) the client sends
    back to continue: it ends in a server tool's call or result."""
    content = message.get("content")
    last = content[-1] if isinstance(content, list) and content else None
    kind = last.get("type") if isinstance(last, dict) else None
    return message.get("role") == "assistant" and kind in (
        SERVER_TOOL_USE_TYPES | SERVER_TOOL_RESULT_TYPES
    )


def upstream_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers sent upstream, by lower-case name; 400 for a value that cannot be
    (HTTP/1.1 client headers are ASCII), named but never quoted: it may be a key.
    `headers.items()` may name a header more than once (Starlette's `Headers` does)."""
    # Hop-by-hop: those listed, and those the client's `Connection` header names (RFC 9110,
    # 7.6.1); and every header of the proxy's own (`x-abridged-*`), meant for it alone.
    named = {
        token.strip().lower()
        for key, value in headers.items()
        if key.lower() == "connection"
        for token in value.split(",")
    }
    passed: dict[str, str] = {}
    for key, value in headers.items():
        name = key.lower()
        if name in _DROPPED_REQUEST_HEADERS or name in named or name.startswith(OWN_HEADER_PREFIX):
            continue
        # A header sent on several lines (two `anthropic-beta` lines) goes on as one, its
        # values joined as RFC 9110 (5.3) combines them; a cookie's with "; ".
        joint = "; " if name == "cookie" else ", "
        passed[name] = f"{passed[name]}{joint}{value}" if name in passed else value
    for name, value in passed.items():
        if not value.isascii():
            raise ApiError(
                400,
                "invalid_request_error",
                f"the {name.lower()} header holds characters other than ASCII",
            )
    passed["content-type"] = "application/json"
    passed["accept-encoding"] = "identity"
    return passed


def response_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _DROPPED_RESPONSE_HEADERS}


def _breakpoints(values: list[Any]) -> int:
    """How many cache breakpoints the client set outside the messages."""
    found = 0
    for value in values:
        if isinstance(value, dict):
            found += 1 if "cache_control" in value or value.get("type") == "ephemeral" else 0
            found += sum(_breakpoints([v]) for k, v in value.items() if k != "cache_control")
        elif isinstance(value, list):
            found += _breakpoints(value)
    return found


def _keep_last_breakpoints(messages: list[dict[str, Any]], room: int) -> None:
    """Drops the earliest message breakpoints beyond `room` (the API allows four in all)."""
    marked = [
        block
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and "cache_control" in block
    ]
    for block in marked[: max(len(marked) - room, 0)]:
        del block["cache_control"]


def _marks(value: Any) -> list[Any]:
    """The `cache_control` values set anywhere in `value`."""
    if isinstance(value, dict):
        own = [value["cache_control"]] if "cache_control" in value else []
        return own + [m for k, v in value.items() if k != "cache_control" for m in _marks(v)]
    if isinstance(value, list):
        return [mark for item in value for mark in _marks(item)]
    return []


def _hour_long(marks: list[Any]) -> bool:
    return all(isinstance(mark, dict) and mark.get("ttl") == "1h" for mark in marks)


def _message_ttl(body: Mapping[str, Any]) -> str:
    """The TTL of the proxy's message breakpoints. The client's automatic (top-level)
    breakpoint sits on the last block: its TTL. Else an hour when every breakpoint the
    client set asks for an hour, its own on the messages included (Claude Code's hour-long
    caching): at five minutes, a user idle for more would pay the whole prompt again.
    Else five minutes: the API refuses a 1-hour entry after a 5-minute one."""
    control = body.get("cache_control")
    if isinstance(control, dict):
        ttl = control.get("ttl", "5m")
        return ttl if ttl in CACHE_TTLS else "5m"
    on_messages = _marks(body.get("messages"))
    outside = _marks([body.get("system"), body.get("tools")])
    return "1h" if on_messages and _hour_long(on_messages + outside) else "5m"


def outgoing(body: dict[str, Any], prepared: PreparedRequest) -> dict[str, Any]:
    """The client's body with the compacted messages; its system, tools and every other
    field as it sent them."""
    rendered = render_request(
        prepared.context,
        model=prepared.model,
        max_tokens=prepared.max_tokens,
        ttl=_message_ttl(body),
    )
    messages = rendered["messages"]
    room = MAX_BREAKPOINTS - _breakpoints(
        [body.get("system"), body.get("tools"), body.get("cache_control")]
    )
    _keep_last_breakpoints(messages, max(room, 0))
    return {**body, "messages": messages}


def shape_changes(
    shape: Shape,
    body: dict[str, Any],
    system: str | None = None,
    tools: list[Any] | None = None,
) -> dict[str, Any]:
    """What a request changes of what its session was asked with, as `reconfigure`'s
    arguments: its system prompt, tools, model or output reservation. The reservation
    follows each request's `max_tokens`, down as well as up: recorded before the upstream
    answers, a `max_tokens` the upstream refused (over the model's output limit) would
    otherwise shrink the room for the history of every later request for good."""
    system = session_system(body) if system is None else system
    if tools is None:
        tools = [stripped(tool) for tool in body.get("tools") or []]
    changes: dict[str, Any] = {}
    if shape.system != system:
        changes["system"] = system
    if list(shape.tools) != tools:
        changes["tools"] = tools
    if shape.model != body["model"]:
        changes["model"] = body["model"]
    if body["max_tokens"] != shape.reserved_output:
        changes["max_output_tokens"] = body["max_tokens"]
    return changes


def regenerates(shape: Shape | None, body: dict[str, Any]) -> bool:
    """Whether a request sent again, its reply recorded, asks for another reply than that
    one: on another model, system prompt or tools, or with more output tokens than it was
    asked with (a smaller `max_tokens` is the same request, which the recorded reply
    answers)."""
    if shape is None:
        return False
    if body["max_tokens"] > shape.reserved_output:
        return True
    return bool(shape_changes(shape, body).keys() - {"max_output_tokens"})
