"""AuthStore, sessions: sign-in sessions by token hash, dated by the engine's clock."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from messagefoundry.store.store import SessionRecord

from ...errors import NotFoundError
from ...types import SessionView
from .context import StorePart
from .convert import drop_none, ms, s, s0
from .outcomes import is_missing_route

#: A session touched by this handle less than this long ago is not touched again (seconds):
#: ``touch_session`` runs on every API request, and each touch is a replicated write.
TOUCH_COALESCE_S = 60.0

#: How many sessions' last touches a handle remembers before it forgets them all.
TOUCH_MEMORY = 65_536


def _session(v: SessionView) -> SessionRecord:
    return SessionRecord(
        token_hash=v.token_hash,
        user_id=v.user_id,
        created_at=s0(v.created_at),
        expires_at=s0(v.expires_at),
        last_used_at=s0(v.last_used_at),
        revoked_at=s(v.revoked_at),
        client=v.client,
        reauth_at=s(v.reauth_at),
        mfa_verified_at=s(v.mfa_verified_at),
    )


def _session_at(now: float | None) -> int:
    """A session write's ``at``: the caller's time (its ``now``, else this host's clock) in ms.
    messagefoundry ages sessions by its own clock and revokes one stamped ahead of it, so a
    session's times are the engine's, in every mode; the cluster accepts them within its
    clock-skew bound (30 s, docs/SPEC.md §13.2)."""
    return ms(time.time() if now is None else now)


class SessionsPart(StorePart):
    """messagefoundry's ``AuthStore`` sessions."""

    async def _session_change(
        self, token_hash: str, change: str, body: Mapping[str, Any], now: float | None
    ) -> None:
        await self._ctx.at(now).change_session(token_hash, change, {**body, "at": _session_at(now)})

    async def create_session(
        self,
        *,
        token_hash: str,
        user_id: str,
        expires_at: float,
        client: str | None = None,
        seed_reauth: bool = True,
        now: float | None = None,
    ) -> None:
        body = {
            "token_hash": token_hash,
            "user_id": user_id,
            "expires_at": ms(expires_at),
            "client": client,
            "seed_reauth": seed_reauth,
            "at": _session_at(now),
        }
        await self._ctx.at(now).create_session(drop_none(body))

    async def get_session(self, token_hash: str) -> SessionRecord | None:
        try:
            return _session(await self._ctx.client.get_session(token_hash))
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None

    async def list_sessions(self, user_id: str, *, now: float | None = None) -> list[SessionRecord]:
        answer = await self._ctx.at(now).user_sessions(user_id)
        return [_session(v) for v in answer.sessions]

    async def touch_session(self, token_hash: str, *, now: float | None = None) -> None:
        touched = self._ctx.session_touches
        at = time.time() if now is None else now
        last = touched.get(token_hash)
        if last is not None and 0 <= at - last < TOUCH_COALESCE_S:
            return  # touched by this handle within the last minute: one write per minute
        await self._session_change(token_hash, "touch", {}, now)
        touched[token_hash] = at
        if len(touched) > TOUCH_MEMORY:
            touched.clear()

    async def mark_session_reauthed(
        self, token_hash: str, *, now: float | None = None, client: str | None = None
    ) -> None:
        await self._session_change(token_hash, "reauth", drop_none({"client": client}), now)

    async def mark_session_mfa_verified(self, token_hash: str, *, now: float | None = None) -> None:
        await self._session_change(token_hash, "mfa-verified", {}, now)

    async def revoke_session(self, token_hash: str, *, now: float | None = None) -> None:
        await self._session_change(token_hash, "revoke", {}, now)

    async def revoke_user_sessions(
        self, user_id: str, *, except_token_hash: str | None = None, now: float | None = None
    ) -> int:
        answer = await self._ctx.at(now).revoke_user_sessions(
            user_id, except_token_hash=except_token_hash, at=_session_at(now)
        )
        return answer.revoked

    async def enforce_session_cap(
        self, user_id: str, *, keep: int, now: float | None = None
    ) -> None:
        if keep <= 0:
            return  # the contract keeps every session then
        await self._ctx.at(now).cap_user_sessions(user_id, keep, at=_session_at(now))

    async def purge_expired_sessions(self, *, now: float | None = None) -> int:
        return (await self._ctx.at(now).purge_expired_sessions()).purged
