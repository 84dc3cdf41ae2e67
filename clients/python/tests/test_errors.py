"""The error body becomes a typed exception (docs/SPEC.md §10.2, api/contract/src/error.rs)."""

from __future__ import annotations

import json

import pytest

from raftlane.errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RateLimitedError,
    RequestIdReusedError,
    StaleFenceError,
    TooLargeError,
    UnauthorizedError,
    VersionMismatchError,
    WrongStatusError,
    error_from_response,
)


def body(**error: object) -> bytes:
    return json.dumps({"error": error}).encode()


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "invalid", BadRequestError),
        (401, "unauthorized", UnauthorizedError),
        (403, "forbidden", ForbiddenError),
        (403, "self_approval", ForbiddenError),
        (404, "not_found", NotFoundError),
        (409, "stale_fence", StaleFenceError),
        (409, "wrong_status", WrongStatusError),
        (409, "already_decided", ConflictError),
        (412, "version_mismatch", VersionMismatchError),
        (413, "too_large", TooLargeError),
        (409, "request_id_reused", RequestIdReusedError),
        (429, "rate_limited", RateLimitedError),
    ],
)
def test_each_code_has_its_class(status: int, code: str, cls: type[ApiError]) -> None:
    e = error_from_response(status, body(code=code, message="m"))
    assert type(e) is cls
    assert (e.status, e.code, e.message, e.field) == (status, code, "m", None)


def test_field_and_extra_members_are_kept() -> None:
    e = error_from_response(400, body(code="invalid", message="must be 1..", field="ttl_ms"))
    assert isinstance(e, BadRequestError)
    assert e.field == "ttl_ms"
    assert e.extra == {}
    assert "ttl_ms" in str(e)

    e = error_from_response(
        412, body(code="version_mismatch", message="expected 7, current 3", current_version=3)
    )
    assert isinstance(e, VersionMismatchError)
    assert e.current_version == 3
    assert e.extra == {"current_version": 3}


def test_stale_and_wrong_status_are_conflicts() -> None:
    assert isinstance(
        error_from_response(409, body(code="stale_fence", message="m")), ConflictError
    )
    assert isinstance(
        error_from_response(409, body(code="wrong_status", message="m")), ConflictError
    )


def test_an_unknown_code_falls_back_to_its_status() -> None:
    e = error_from_response(409, body(code="membership_refused", message="no"))
    assert type(e) is ConflictError
    assert e.code == "membership_refused"
    e = error_from_response(500, body(code="internal", message="disk"))
    assert type(e) is ApiError
    assert (e.status, e.code) == (500, "internal")


def test_a_foreign_body_keeps_its_status() -> None:
    e = error_from_response(502, b"<html>bad gateway</html>")
    assert (e.status, e.code) == (502, "unknown")
    assert "bad gateway" in e.message
    e = error_from_response(404, b"")
    assert isinstance(e, NotFoundError)
    assert e.code == "unknown"
    # JSON, but not the error shape.
    e = error_from_response(400, b'{"error": "nope"}')
    assert (e.code, e.field) == ("unknown", None)


def test_a_reused_request_id_is_a_conflict_and_a_rate_limit_says_when_to_retry() -> None:
    e = error_from_response(409, body(code="request_id_reused", message="m", field="Request-Id"))
    assert isinstance(e, ConflictError) and e.field == "Request-Id"
    limited = error_from_response(429, body(code="rate_limited", message="m", retry_after_s=3))
    assert isinstance(limited, RateLimitedError) and limited.retry_after == 3
    # A 429 from something else (a proxy) is still a rate limit, without a known wait.
    proxied = error_from_response(429, b"slow down")
    assert isinstance(proxied, RateLimitedError) and proxied.retry_after is None
