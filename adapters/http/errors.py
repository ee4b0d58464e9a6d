"""Errors in the Messages API's own shape, so an SDK reads them as the API's."""

from __future__ import annotations

from uuid import uuid4

from starlette.responses import JSONResponse

from abridged.domain.errors import (
    ConcurrentWriteError,
    ContextOverflowError,
    ContextTooSmallError,
    SessionError,
    StoreError,
    UnknownSessionError,
)


class ApiError(Exception):
    """A request refused before it reached the upstream, with the API's status and type."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


def error_response(status: int, kind: str, message: str) -> JSONResponse:
    """`{"type": "error", "error": {"type": kind, "message": ...}, "request_id": ...}`."""
    return JSONResponse(
        {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": f"req_abridged_{uuid4().hex[:24]}",
        },
        status_code=status,
    )


def from_session_error(error: SessionError) -> ApiError:
    """The API error a client gets for what the service refused (nothing was stored)."""
    if isinstance(error, UnknownSessionError):
        return ApiError(404, "not_found_error", str(error))
    if isinstance(error, ConcurrentWriteError):
        # Retryable: the SDKs retry a 529 on their own.
        return ApiError(529, "overloaded_error", f"abridged: {error}")
    if isinstance(error, StoreError):
        return ApiError(500, "api_error", "abridged: the session store failed; try again")
    if isinstance(error, ContextTooSmallError | ContextOverflowError):
        return ApiError(400, "invalid_request_error", f"prompt is too long (abridged): {error}")
    return ApiError(400, "invalid_request_error", f"abridged: {error}")
