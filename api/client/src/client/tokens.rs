//! API principals and their tokens, and the binding of lease owner names and engine node ids
//! to principals (docs/SPEC.md §9.8).

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{
    OwnerBinding, OwnerReservation, Revoked, TokenCreated, TokenList, TokenRequest,
};

impl Client {
    /// `GET /v1/tokens`: every principal (never a token).
    pub async fn tokens(&self) -> Result<TokenList, ClientError> {
        self.call(&routes::TOKENS, []).reads_state().answer().await
    }

    /// `POST /v1/tokens`: create or rotate a principal's token, shown this once. Under dual
    /// control, send it through [`Client::with_approval`].
    pub async fn create_token(&self, request: &TokenRequest) -> Result<TokenCreated, ClientError> {
        self.call(&routes::TOKEN_CREATE, [])
            .json(request)?
            .answer()
            .await
    }

    /// `DELETE /v1/tokens/{name}`: revoke a principal.
    pub async fn revoke_token(&self, name: &str) -> Result<Revoked, ClientError> {
        self.call(&routes::TOKEN_REVOKE, [name]).answer().await
    }

    /// `GET /v1/owners/{owner}`: the principal `owner` is bound to (`principal: null`: nobody's
    /// yet).
    pub async fn owner(&self, owner: &str) -> Result<OwnerBinding, ClientError> {
        self.call(&routes::OWNER, [owner])
            .reads_state()
            .answer()
            .await
    }

    /// `PUT /v1/owners/{owner}`: bind `owner` to `principal` ahead of its first use (409 when
    /// bound to another).
    pub async fn reserve_owner(
        &self,
        owner: &str,
        principal: &str,
    ) -> Result<OwnerBinding, ClientError> {
        let body = OwnerReservation {
            principal: principal.to_string(),
        };
        self.call(&routes::OWNER_RESERVE, [owner])
            .json(&body)?
            .answer()
            .await
    }

    /// `DELETE /v1/owners/{owner}`: release `owner`'s binding.
    pub async fn release_owner(&self, owner: &str) -> Result<OwnerBinding, ClientError> {
        self.call(&routes::OWNER_RELEASE, [owner]).answer().await
    }
}
