"""What every part of the store shares: one :class:`raftlane.Client`, the handle's settings and
clock mode, and its bookkeeping (claims and leases, caches, session touches).

The caller's clock: a method given ``now=`` sends it as the header :data:`CLIENT_TIME_HEADER`
(integer ms), which nodes started with ``--test-client-clock`` use as the command's time.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

from ...client import Client
from ...errors import NotFoundError
from ...types import MessageView
from .caches import Caches
from .claims import Claims
from .convert import ms
from .leases import Leases
from .outcomes import is_missing_route

#: The request header carrying the caller's ``now`` (integer milliseconds since the epoch). A node
#: started with ``--test-client-clock`` uses it as the command's time instead of its wall clock.
CLIENT_TIME_HEADER = "Raftlane-Client-Time-Ms"

#: How long an engine worker's claim waits at the server for work when there is none now
#: (``wait_ms``, docs/SPEC.md §4.7a; default of ``claim_wait_seconds``): the server answers as
#: soon as a row can be claimed, so an idle worker neither polls nor sleeps past new work.
CLAIM_WAIT_S = 5.0


@dataclass(frozen=True)
class StoreSettings:
    """The settings the engine and its tests read from a store (``store._settings``)."""

    lease_ttl_seconds: float = 30.0


class StoreContext:
    """The connection and state one store handle's parts share."""

    def __init__(
        self,
        client: Client,
        *,
        owner: str | None = None,
        lease_ttl_seconds: float = 30.0,
        journal_mode: str = "raftlane",
        client_clock: bool = False,
        claim_wait_seconds: float = CLAIM_WAIT_S,
    ) -> None:
        if lease_ttl_seconds <= 0:
            raise ValueError("lease_ttl_seconds must be > 0")
        if not 0 <= claim_wait_seconds <= 30:
            raise ValueError("claim_wait_seconds must be between 0 and 30")
        self.client = client
        self.settings = StoreSettings(lease_ttl_seconds=lease_ttl_seconds)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.path = "raftlane:" + ",".join(client.endpoints)
        self.journal_mode = journal_mode
        #: Send a method's ``now=`` as the request's time (a cluster in client-clock test mode);
        #: otherwise ``now`` is ignored and the cluster stamps its own time, as in production.
        self.client_clock = client_clock
        #: How long a worker's claim (``claim_ready``, ``claim_next_fifo``, made without ``now``)
        #: waits at the server for work when none is there: the engine's poll, and its sleep
        #: after an empty claim, then rarely run. 0: answer at once.
        self.claim_wait_ms = ms(claim_wait_seconds)
        self.leases = Leases(self)
        self.claims = Claims(self)
        self.caches = Caches()
        #: When this handle last touched each session (the caller's seconds).
        self.session_touches: dict[str, float] = {}

    def at(self, now: float | None) -> Client:
        """The client handle for a call made at ``now``: with the client-time header when the
        store runs against a client-clock cluster and ``now`` is given."""
        if now is None or not self.client_clock:
            return self.client
        return self.client.with_headers({CLIENT_TIME_HEADER: str(ms(now))})

    @property
    def ttl_ms(self) -> int:
        return ms(self.settings.lease_ttl_seconds)

    def claim_wait(self, now: float | None) -> int:
        """The ``wait_ms`` of a worker's claim made at ``now``: the store's wait for the engine's
        own claims (no ``now``, the cluster's clock); none for a claim dated by its caller (a
        client-clock cluster's time never moves while a claim waits)."""
        return 0 if now is not None or self.client_clock else self.claim_wait_ms

    async def message_view(self, message_id: str) -> MessageView | None:
        """``GET /v1/messages/{id}`` with its bodies, ``None`` for an unknown message.
        ``message_id`` is raftlane's id or a re-ingested child's key (docs/SPEC.md §14.7).

        The engine reads bodies to process them and records its users' views itself
        (``record_view``), so this read does not record one (``record_view=false``)."""
        try:
            return await self.client.message(message_id, body=True, record_view=False)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None


class StorePart:
    """A part of the store (one of messagefoundry's protocols or a section of one) over the
    handle's shared :class:`StoreContext`."""

    _ctx: StoreContext
