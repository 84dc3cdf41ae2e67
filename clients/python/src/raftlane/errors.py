"""Typed errors.

Every non-2xx answer of raftlane has the body ``{"error": {"code", "message", "field"?, ...}}``
(docs/SPEC.md §10.2). :func:`error_from_response` turns it into an :class:`ApiError` subclass
chosen by ``code`` (and, for codes this client does not know, by the HTTP status), keeping
``code``, ``field``, ``message`` and every other member of the error object (``extra``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "ApiError",
    "BadRequestError",
    "ConflictError",
    "DecodeError",
    "ForbiddenError",
    "InsecureTransportError",
    "NotFoundError",
    "RaftlaneError",
    "RateLimitedError",
    "RequestIdReusedError",
    "StaleFenceError",
    "TooLargeError",
    "UnauthorizedError",
    "UnavailableError",
    "VersionMismatchError",
    "WrongStatusError",
    "error_from_response",
]


class RaftlaneError(Exception):
    """Base of every error this client raises."""


class UnavailableError(RaftlaneError):
    """No node answered (connection failures, timeouts, 503s) before the client's deadline.

    The write may or may not have taken effect; resending it with the same ``Request-Id``
    (:meth:`raftlane.Client.for_request`) within 120 s finds out without applying it twice.
    """

    def __init__(self, message: str, *, last_status: int | None = None) -> None:
        super().__init__(message)
        self.last_status = last_status


class InsecureTransportError(RaftlaneError):
    """The client would send its token in clear text to a node on another machine: give it the
    cluster's CA (``verify=``) or, knowingly, ``allow_cleartext=True``. Nothing was sent."""


class DecodeError(RaftlaneError):
    """A 2xx answer that is not the JSON this client expects."""


class ApiError(RaftlaneError):
    """The server answered with an error body."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.extra: dict[str, Any] = dict(extra or {})


class BadRequestError(ApiError):
    """400 ``invalid``: ``field`` names the body member, header or query parameter at fault."""


class UnauthorizedError(ApiError):
    """401: missing, unknown or revoked token."""


class ForbiddenError(ApiError):
    """403 ``forbidden`` or ``self_approval``: outside the token's role or channel scope."""


class NotFoundError(ApiError):
    """404."""


class ConflictError(ApiError):
    """409: a refused change (``already_decided``, ``expired``, ``token_not_issued``, ...)."""


class StaleFenceError(ConflictError):
    """409 ``stale_fence``: the row was claimed again (or given back) since this fence."""


class WrongStatusError(ConflictError):
    """409 ``wrong_status``: the row is not in a status the action acts on (e.g. already done)."""


class VersionMismatchError(ApiError):
    """412 ``version_mismatch`` of ``PUT /v1/config``; ``current_version`` is the live version."""

    @property
    def current_version(self) -> int | None:
        v = self.extra.get("current_version")
        return v if isinstance(v, int) else None


class RequestIdReusedError(ConflictError):
    """409 ``request_id_reused``: this ``Request-Id`` already answered a different request
    (another route, path or body) within the last 120 s; nothing was applied. Send the request
    again with a new ``Request-Id`` (docs/SPEC.md §10.5)."""


class TooLargeError(ApiError):
    """413 ``too_large``: the body is over the node's ``--max-body-bytes``."""


class RateLimitedError(ApiError):
    """429 ``rate_limited``: the token is over its request rate on that node
    (``--rate-limit-per-token``); nothing was done. ``retry_after`` is how many seconds to wait
    (the ``Retry-After`` header, also in the body as ``retry_after_s``)."""

    @property
    def retry_after(self) -> int | None:
        v = self.extra.get("retry_after_s")
        return v if isinstance(v, int) and not isinstance(v, bool) else None


_BY_CODE: dict[str, type[ApiError]] = {
    "invalid": BadRequestError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "self_approval": ForbiddenError,
    "not_found": NotFoundError,
    "stale_fence": StaleFenceError,
    "wrong_status": WrongStatusError,
    "version_mismatch": VersionMismatchError,
    "too_large": TooLargeError,
    "request_id_reused": RequestIdReusedError,
    "rate_limited": RateLimitedError,
}

_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    412: VersionMismatchError,
    413: TooLargeError,
    429: RateLimitedError,
}


def error_from_response(status: int, body: bytes) -> ApiError:
    """The error a non-2xx answer stands for.

    A body that is not raftlane's error shape (a proxy's page, an empty body) still gives an
    error carrying the status, with code ``unknown`` and the start of the body as its message.
    """
    detail: Any = None
    try:
        parsed = json.loads(body) if body else None
        if isinstance(parsed, dict):
            detail = parsed.get("error")
    except ValueError:
        detail = None
    if (
        isinstance(detail, dict)
        and isinstance(detail.get("code"), str)
        and isinstance(detail.get("message"), str)
    ):
        code: str = detail["code"]
        message: str = detail["message"]
        field = detail.get("field")
        extra = {k: v for k, v in detail.items() if k not in ("code", "message", "field")}
        cls = _BY_CODE.get(code) or _BY_STATUS.get(status, ApiError)
        return cls(status, code, message, field if isinstance(field, str) else None, extra)
    text = body.decode("utf-8", errors="replace")[:200]
    return _BY_STATUS.get(status, ApiError)(status, "unknown", text)
