//! The engine's users, roles and directory-group maps (docs/SPEC.md §13; admin).

use super::Client;
use crate::error::ClientError;
use crate::query::page_limit;
use crate::routes;
use raftlane_contract::{
    CreateUserRequest, GroupEntry, GroupMap, GroupMapQuery, GroupMapRequest, GroupMapWritten,
    RoleList, RoleRequest, RoleWritten, RolesAssigned, UserChanged, UserCreated, UserDeleted,
    UserList, UserQuery, UserRoles, UserRolesRequest, UserSecrets, UserView,
};
use serde::Serialize;

impl Client {
    /// `POST /v1/users` (409 `already_exists` when the id or username is taken).
    pub async fn create_user(&self, user: &CreateUserRequest) -> Result<UserCreated, ClientError> {
        self.call(&routes::USER_CREATE, [])
            .json(user)?
            .answer()
            .await
    }

    /// `GET /v1/users/{id}` (404 for an unknown user).
    pub async fn user(&self, id: &str) -> Result<UserView, ClientError> {
        self.call(&routes::USER, [id]).reads_state().answer().await
    }

    /// `GET /v1/users`, optionally the one user with `username`.
    pub async fn users(&self, username: Option<&str>) -> Result<UserList, ClientError> {
        self.users_limited(username, None).await
    }

    /// `GET /v1/users` with a `limit` (`Some(0)`: only the count of matches).
    pub async fn users_limited(
        &self,
        username: Option<&str>,
        limit: Option<u32>,
    ) -> Result<UserList, ClientError> {
        let query = UserQuery {
            username: username.map(str::to_string),
            limit: page_limit(limit),
            consistency: None,
        };
        self.call(&routes::USERS, [])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/users/{id}/{change}` with the change's body (e.g. a
    /// [`raftlane_contract::PasswordChange`]).
    pub async fn change_user<B: Serialize>(
        &self,
        id: &str,
        change: &str,
        body: &B,
    ) -> Result<UserChanged, ClientError> {
        self.call(&routes::USER_CHANGE, [id, change])
            .json(body)?
            .answer()
            .await
    }

    /// `GET /v1/users/{id}/secrets`.
    pub async fn user_secrets(&self, id: &str) -> Result<UserSecrets, ClientError> {
        self.call(&routes::USER_SECRETS, [id])
            .reads_state()
            .answer()
            .await
    }

    /// `DELETE /v1/users/{id}`. Under dual control, send it through
    /// [`Client::with_approval`].
    pub async fn delete_user(&self, id: &str) -> Result<UserDeleted, ClientError> {
        self.call(&routes::USER_DELETE, [id]).answer().await
    }

    /// `PUT /v1/roles/{id}`.
    pub async fn put_role(&self, id: &str, role: &RoleRequest) -> Result<RoleWritten, ClientError> {
        self.call(&routes::ROLE_PUT, [id])
            .json(role)?
            .answer()
            .await
    }

    /// `GET /v1/roles`.
    pub async fn roles(&self) -> Result<RoleList, ClientError> {
        self.call(&routes::ROLES, []).reads_state().answer().await
    }

    /// `GET /v1/users/{id}/roles`.
    pub async fn user_roles(&self, id: &str) -> Result<UserRoles, ClientError> {
        self.call(&routes::USER_ROLES, [id])
            .reads_state()
            .answer()
            .await
    }

    /// `PUT /v1/users/{id}/roles` (404 for an unknown user or role).
    pub async fn set_user_roles(
        &self,
        id: &str,
        body: &UserRolesRequest,
    ) -> Result<RolesAssigned, ClientError> {
        self.call(&routes::USER_ROLES_PUT, [id])
            .json(body)?
            .answer()
            .await
    }

    /// `GET /v1/directory-groups/{map}` (`roles` or `channels`).
    pub async fn group_map(&self, map: &str) -> Result<GroupMap, ClientError> {
        self.group_map_for(map, None).await
    }

    /// `GET /v1/directory-groups/{map}?groups=a,b`: the map, and in `values` what it gives any
    /// of `groups`.
    pub async fn group_map_for(
        &self,
        map: &str,
        groups: Option<&[String]>,
    ) -> Result<GroupMap, ClientError> {
        let query = GroupMapQuery {
            groups: groups.map(|g| g.iter().collect()),
            consistency: None,
        };
        self.call(&routes::GROUP_MAP, [map])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }

    /// `PUT /v1/directory-groups/{map}`: replace the whole map.
    pub async fn put_group_map(
        &self,
        map: &str,
        entries: Vec<GroupEntry>,
    ) -> Result<GroupMapWritten, ClientError> {
        self.call(&routes::GROUP_MAP_PUT, [map])
            .json(&GroupMapRequest { entries })?
            .answer()
            .await
    }
}
