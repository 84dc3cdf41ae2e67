"""AuthStore, roles: the role catalogue, users' roles and channel scope, and the directory-group
maps to roles and to channels."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import NotFoundError
from ...types import GroupEntry
from .context import StorePart
from .outcomes import is_missing_route


class RolesPart(StorePart):
    """messagefoundry's ``AuthStore`` roles, scope and directory-group maps."""

    async def upsert_role(
        self,
        *,
        role_id: str,
        display_name: str,
        description: str | None = None,
        builtin: bool = True,
    ) -> None:
        await self._ctx.client.put_role(
            role_id, display_name, description=description, builtin=builtin
        )

    async def list_roles(self) -> list[dict[str, Any]]:
        return [
            {
                "id": r.id,
                "display_name": r.display_name,
                "description": r.description,
                "builtin": r.builtin,
            }
            for r in (await self._ctx.client.list_roles()).roles
        ]

    async def get_user_role_ids(self, user_id: str) -> list[str]:
        try:
            return list((await self._ctx.client.user_roles(user_id)).role_ids)
        except NotFoundError as e:
            if is_missing_route(e):
                raise
            return []

    async def set_user_roles(
        self,
        user_id: str,
        role_ids: Sequence[str],
        *,
        assigned_by: str | None = None,
        now: float | None = None,
    ) -> None:
        await self._ctx.at(now).set_user_roles(user_id, list(role_ids), assigned_by=assigned_by)

    async def set_user_channel_scope(
        self, user_id: str, scope_json: str | None, *, now: float | None = None
    ) -> None:
        await self._ctx.at(now).change_user(user_id, "channel-scope", {"scope": scope_json})

    # --- directory-group maps --------------------------------------------------------------------

    async def _group_map(self, which: str) -> list[GroupEntry]:
        return (await self._ctx.client.group_map(which)).entries

    async def _set_group_map(self, which: str, entries: Iterable[tuple[str, str]]) -> None:
        await self._ctx.client.put_group_map(which, list(entries))

    async def _groups_to_values(self, which: str, groups: Iterable[str]) -> set[str]:
        wanted = {g.strip().lower() for g in groups if g.strip()}
        if not wanted:
            return set()
        return {e.value for e in await self._group_map(which) if e.group.lower() in wanted}

    async def roles_for_ad_groups(self, groups: Iterable[str]) -> set[str]:
        return await self._groups_to_values("roles", groups)

    async def list_ad_group_role_map(self) -> list[dict[str, Any]]:
        return [{"ad_group": e.group, "role_id": e.value} for e in await self._group_map("roles")]

    async def set_ad_group_role_map(self, entries: Iterable[tuple[str, str]]) -> None:
        await self._set_group_map("roles", entries)

    async def channels_for_ad_groups(self, groups: Iterable[str]) -> set[str]:
        return await self._groups_to_values("channels", groups)

    async def list_ad_group_scope_map(self) -> list[dict[str, Any]]:
        return [
            {"ad_group": e.group, "channel_id": e.value} for e in await self._group_map("channels")
        ]

    async def set_ad_group_scope_map(self, entries: Iterable[tuple[str, str]]) -> None:
        await self._set_group_map("channels", entries)
