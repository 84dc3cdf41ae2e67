"""AuthStore, users: accounts, passwords, the TOTP second factor and sign-in bookkeeping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from messagefoundry.store.store import UserRecord

from ...errors import NotFoundError
from ...types import UserChanged, UserSecrets, UserView
from .context import StorePart
from .convert import drop_none, ms, s, s0
from .outcomes import is_missing_route


def _user(u: UserView) -> UserRecord:
    return UserRecord(
        id=u.id,
        username=u.username,
        auth_provider=u.auth_provider,
        display_name=u.display_name,
        email=u.email,
        disabled=u.disabled,
        created_at=s0(u.created_at),
        updated_at=s0(u.updated_at),
        last_login_at=s(u.last_login_at),
        password_hash=u.password_hash,
        password_changed_at=s(u.password_changed_at),
        must_change_password=u.must_change_password,
        failed_attempts=u.failed_attempts,
        locked_until=s(u.locked_until),
        channel_scope=u.channel_scope,
        totp_enabled=u.totp_enabled,
        totp_enrolled_at=s(u.totp_enrolled_at),
    )


class UsersPart(StorePart):
    """messagefoundry's ``AuthStore`` users and second factor."""

    async def _user_change(
        self, user_id: str, change: str, body: Mapping[str, Any], now: float | None
    ) -> UserChanged:
        return await self._ctx.at(now).change_user(user_id, change, body)

    async def create_user(
        self,
        *,
        user_id: str,
        username: str,
        auth_provider: str,
        display_name: str | None = None,
        email: str | None = None,
        password_hash: str | None = None,
        must_change_password: bool = False,
        now: float | None = None,
    ) -> None:
        body = {
            "id": user_id,
            "username": username,
            "auth_provider": auth_provider,
            "display_name": display_name,
            "email": email,
            "password_hash": password_hash,
            "must_change_password": must_change_password,
        }
        await self._ctx.at(now).create_user(drop_none(body))

    async def get_user(self, user_id: str) -> UserRecord | None:
        try:
            return _user(await self._ctx.client.get_user(user_id))
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None

    async def get_user_by_username(self, username: str) -> UserRecord | None:
        users = (await self._ctx.client.list_users(username=username)).users
        return _user(users[0]) if users else None

    async def list_users(self) -> list[UserRecord]:
        return [_user(u) for u in (await self._ctx.client.list_users()).users]

    async def count_users(self) -> int:
        return (await self._ctx.client.list_users(limit=0)).count

    async def set_password(
        self,
        user_id: str,
        *,
        password_hash: str,
        must_change_password: bool = False,
        now: float | None = None,
    ) -> None:
        await self._user_change(
            user_id,
            "password",
            {"password_hash": password_hash, "must_change_password": must_change_password},
            now,
        )

    async def set_user_disabled(
        self, user_id: str, *, disabled: bool, now: float | None = None
    ) -> None:
        await self._user_change(user_id, "disabled", {"disabled": disabled}, now)

    async def update_user_profile(
        self,
        user_id: str,
        *,
        display_name: str | None,
        email: str | None,
        now: float | None = None,
    ) -> None:
        await self._user_change(
            user_id, "profile", {"display_name": display_name, "email": email}, now
        )

    async def delete_user(self, user_id: str) -> None:
        await self._ctx.client.delete_user(user_id)

    # --- second factor, sign-in ------------------------------------------------------------------

    async def set_totp_secret(
        self, user_id: str, *, secret: str | None, now: float | None = None
    ) -> None:
        await self._user_change(user_id, "totp-secret", {"secret": secret}, now)

    async def _secrets(self, user_id: str) -> UserSecrets:
        return await self._ctx.client.user_secrets(user_id)

    async def get_totp_secret(self, user_id: str) -> str | None:
        try:
            return (await self._secrets(user_id)).totp_secret
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return None

    async def enable_totp(
        self, user_id: str, *, recovery_code_hashes: list[str], now: float | None = None
    ) -> None:
        await self._user_change(
            user_id, "totp-enable", {"recovery_code_hashes": list(recovery_code_hashes)}, now
        )

    async def disable_totp(self, user_id: str, *, now: float | None = None) -> None:
        await self._user_change(user_id, "totp-disable", {}, now)

    async def get_recovery_code_hashes(self, user_id: str) -> list[str]:
        try:
            return list((await self._secrets(user_id)).recovery_code_hashes)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return []

    async def consume_recovery_code_hash(
        self, user_id: str, code_hash: str, *, now: float | None = None
    ) -> bool:
        answer = await self._user_change(user_id, "consume", {"recovery_code_hash": code_hash}, now)
        return bool(answer.consumed)

    async def consume_totp_step(self, user_id: str, step: int) -> bool:
        answer = await self._user_change(user_id, "consume", {"totp_step": step}, None)
        return bool(answer.consumed)

    async def record_login_success(self, user_id: str, *, now: float | None = None) -> None:
        await self._user_change(user_id, "login-success", {}, now)

    async def record_login_failure(
        self,
        user_id: str,
        *,
        failed_attempts: int,
        locked_until: float | None,
        now: float | None = None,
    ) -> None:
        body = {
            "failed_attempts": failed_attempts,
            "locked_until": None if locked_until is None else ms(locked_until),
        }
        await self._user_change(user_id, "login-failure", body, now)
