"""``RaftlaneStore``: the store's parts, one per protocol messagefoundry's ``Store`` composes,
over one shared :class:`~.context.StoreContext`; opening and closing a handle."""

from __future__ import annotations

from collections.abc import Sequence

from ...client import Client
from .audit import AuditPart
from .context import CLAIM_WAIT_S, StoreContext, StoreSettings
from .delivery import DeliveryPart
from .maintenance import MaintenancePart
from .pipeline import PipelinePart
from .reads import ReadsPart
from .recovery import RecoveryPart
from .roles import RolesPart
from .sessions import SessionsPart
from .state import StatePart
from .users import UsersPart


class RaftlaneStore(
    PipelinePart,
    StatePart,
    DeliveryPart,
    RecoveryPart,
    ReadsPart,
    MaintenancePart,
    AuditPart,
    UsersPart,
    RolesPart,
    SessionsPart,
):
    """messagefoundry's ``Store`` on a raftlane cluster. Open with :meth:`open`."""

    supports_ingest_stage = True
    supports_response_capture = True

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
        self._ctx = StoreContext(
            client,
            owner=owner,
            lease_ttl_seconds=lease_ttl_seconds,
            journal_mode=journal_mode,
            client_clock=client_clock,
            claim_wait_seconds=claim_wait_seconds,
        )

    # What the engine, its tests and the coordinator read from a store handle.

    @property
    def path(self) -> str:
        return self._ctx.path

    @property
    def _client(self) -> Client:
        return self._ctx.client

    @property
    def _owner(self) -> str:
        return self._ctx.owner

    @property
    def _settings(self) -> StoreSettings:
        return self._ctx.settings

    @classmethod
    async def open(
        cls,
        endpoints: Sequence[str],
        token: str,
        *,
        owner: str | None = None,
        lease_ttl_seconds: float = 30.0,
        journal_mode: str = "raftlane",
        deadline: float = 20.0,
        client_clock: bool = False,
        claim_wait_seconds: float = CLAIM_WAIT_S,
    ) -> RaftlaneStore:
        """Connect to the cluster at ``endpoints`` with ``token`` and load the read-through caches
        (transform state, reference sets). ``owner`` names this handle's claims (default
        ``host:pid:random``); ``journal_mode`` is the label :meth:`db_status` reports.
        ``client_clock``: the cluster runs in client-clock test mode (``--test-client-clock``)
        and a method's ``now=`` becomes the time of its command; otherwise ``now`` is ignored
        (the cluster stamps time, docs/SPEC.md §2.1) except by the session writes, which are
        dated by the caller in every mode (``now``, else this host's clock; docs/SPEC.md §13.2).
        ``claim_wait_seconds``: how long a worker's claim waits at the server for work (0 to 30;
        0: answer at once, as a poll)."""
        store = cls(
            Client(endpoints, token, deadline=deadline),
            owner=owner,
            lease_ttl_seconds=lease_ttl_seconds,
            journal_mode=journal_mode,
            client_clock=client_clock,
            claim_wait_seconds=claim_wait_seconds,
        )
        try:
            await store.converge_state_cache()
            await store.converge_reference_cache()
        except BaseException:
            await store.close()
            raise
        return store

    async def close(self) -> None:
        self._ctx.claims.forget_ahead()
        await self._ctx.leases.stop()
        await self._ctx.client.aclose()
