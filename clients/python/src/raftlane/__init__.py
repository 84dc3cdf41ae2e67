"""raftlane: an async Python client for a raftlane cluster's HTTP API.

>>> async with Client(["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"], token) as c:
...     sent = await c.enqueue("lab", "MSH|...")
...     (row,) = await c.claim("ingress", owner="w1", ttl_ms=30_000)
...     await c.handoff(row.row_id, row.fence, [("emr", row.payload)])

The client follows the leader, fails over on connection errors and ``503``, retries every write
under one ``Request-Id`` and raises :mod:`raftlane.errors` exceptions carrying the error body's
``code``, ``field`` and ``message``. :mod:`raftlane.testing` starts a throwaway local cluster.
"""

from .client import Client, RowAction, client_routes
from .errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    DecodeError,
    ForbiddenError,
    InsecureTransportError,
    NotFoundError,
    RaftlaneError,
    RateLimitedError,
    RequestIdReusedError,
    StaleFenceError,
    TooLargeError,
    UnauthorizedError,
    UnavailableError,
    VersionMismatchError,
    WrongStatusError,
)
from .types import (
    UNLIMITED_ATTEMPTS,
    ClaimedRow,
    DeadLetterRow,
    Delivery,
    FifoClaim,
    Handler,
    ListedMessage,
    Message,
    MessageView,
    RetryPolicy,
    Stage,
    StateOp,
    WorkRow,
)

__version__ = "0.1.0"

__all__ = [
    "UNLIMITED_ATTEMPTS",
    "ApiError",
    "BadRequestError",
    "ClaimedRow",
    "Client",
    "ConflictError",
    "DeadLetterRow",
    "DecodeError",
    "Delivery",
    "FifoClaim",
    "ForbiddenError",
    "Handler",
    "InsecureTransportError",
    "ListedMessage",
    "Message",
    "MessageView",
    "NotFoundError",
    "RaftlaneError",
    "RateLimitedError",
    "RequestIdReusedError",
    "RetryPolicy",
    "RowAction",
    "Stage",
    "StaleFenceError",
    "StateOp",
    "TooLargeError",
    "UnauthorizedError",
    "UnavailableError",
    "VersionMismatchError",
    "WorkRow",
    "WrongStatusError",
    "client_routes",
]
