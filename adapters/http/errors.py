"""Errors in the Messages API's own shape, so an SDK reads them as the API's."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any
from uuid import uuid4

from starlette.responses import JSONResponse

from abridged.domain.errors import (
    ConcurrentWriteError,
    ContextOverflowError,
    ContextTooSmallError,
    MessageTooLargeError,
    SessionError,
    StoreError,
    UnknownSessionError,
)

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """A request refused before it reached the upstream, with the API's status and type."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


def error_response(status: int, kind: str, message: str) -> JSONResponse:
    """`{"type": "error", "error": {"type": kind, "message": ...}, "request_id": ...}`, the
    id also in a `request-id` header, where the SDKs read it from."""
    request_id = f"req_abridged_{uuid4().hex[:24]}"
    return JSONResponse(
        {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id},
        status_code=status,
        headers={"request-id": request_id},
    )


def unreachable(error: Exception) -> JSONResponse:
    """502: the client is told the upstream could not be reached, the log says why (never
    the upstream's address, which may carry a gateway's credentials)."""
    logger.warning("the upstream could not be reached: %s", type(error).__name__)
    return error_response(502, "api_error", "abridged: the upstream could not be reached")


def from_session_error(error: SessionError) -> ApiError:
    """The API error a client gets for what the service refused (nothing was stored)."""
    if isinstance(error, UnknownSessionError):
        return ApiError(404, "not_found_error", str(error))
    if isinstance(error, ConcurrentWriteError):
        # Retryable: the SDKs retry a 529 on their own.
        return ApiError(529, "overloaded_error", f"abridged: {error}")
    if isinstance(error, StoreError):
        return ApiError(500, "api_error", "abridged: the session store failed; try again")
    if isinstance(error, MessageTooLargeError):
        return ApiError(
            413,
            "request_too_large",
            f"abridged: a message of {error.size:,} bytes is over the limit of {error.limit:,} "
            "a message (abridged serve --max-message-bytes)",
        )
    if isinstance(error, ContextTooSmallError | ContextOverflowError):
        return ApiError(400, "invalid_request_error", f"prompt is too long (abridged): {error}")
    return ApiError(400, "invalid_request_error", f"abridged: {error}")


KINDS_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def is_message(answer: Any) -> bool:
    return isinstance(answer, dict) and answer.get("type") == "message"


def is_count(answer: Any) -> bool:
    return isinstance(answer, dict) and isinstance(answer.get("input_tokens"), int)


def upstream_answer(
    status: int,
    payload: bytes,
    is_reply: Callable[[Any], bool] = is_message,
    request_id: str | None = None,
) -> tuple[int, bytes, Any]:
    """The status and body the client gets for the upstream's whole (not streamed) answer,
    and its JSON: the answer itself when it is a reply (200) or an API error; else, an
    API error of the kind the status says (a 200 that is no reply, any other 2xx and a
    redirect: 502 `api_error`). A gateway's HTML page or a body cut short would otherwise
    reach an SDK that cannot read it; it is not quoted (what a gateway writes is no business
    of the client's)."""
    try:
        answer = json.loads(payload)
    except ValueError:
        answer = None
    if status == 200 and is_reply(answer):
        return status, payload, answer
    erred = status >= 400
    if erred and isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return status, payload, answer
    if not erred:
        # A 201 or 206 is no answer the SDKs check, and a redirect would send the client's
        # body and headers (its token among them) wherever the upstream points: a 502.
        text = f"abridged: the upstream answered {status}, not one of the API's answers"
        status = 502
    else:
        text = f"abridged: the upstream answered {status} without an API error"
    error_type = KINDS_BY_STATUS.get(status, "api_error")
    error: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": text}}
    if request_id:
        error["request_id"] = request_id  # the upstream's: the one its operator can look up
    return status, json.dumps(error).encode(), error
