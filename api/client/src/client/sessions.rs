//! The engine's sessions (docs/SPEC.md §13.2; admin): created, read, touched and revoked by
//! token hash.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{
    CreateSessionRequest, NoChangeBody, ReauthChange, RevokeSessionsRequest, SessionCapRequest,
    SessionChanged, SessionCreated, SessionList, SessionView, SessionsPurged, SessionsRevoked,
};

impl Client {
    /// `POST /v1/sessions`.
    pub async fn create_session(
        &self,
        session: &CreateSessionRequest,
    ) -> Result<SessionCreated, ClientError> {
        self.call(&routes::SESSION_CREATE, [])
            .json(session)?
            .answer()
            .await
    }

    /// `GET /v1/sessions/{token_hash}` (404 for an unknown session).
    pub async fn session(&self, token_hash: &str) -> Result<SessionView, ClientError> {
        self.call(&routes::SESSION, [token_hash])
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/users/{id}/sessions`: the live sessions at the request's time.
    pub async fn user_sessions(&self, id: &str) -> Result<SessionList, ClientError> {
        self.call(&routes::USER_SESSIONS, [id])
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/sessions/{token_hash}/{change}` (`touch`, `reauth`, `mfa-verified`, `revoke`).
    pub async fn change_session(
        &self,
        token_hash: &str,
        change: &str,
        client: Option<&str>,
    ) -> Result<SessionChanged, ClientError> {
        let body = ReauthChange {
            client: client.map(str::to_string),
            at: None,
        };
        self.change_session_with(token_hash, change, &body).await
    }

    /// [`Client::change_session`] with the whole body: the caller's time `at` to stamp, and
    /// (`reauth`) the client.
    pub async fn change_session_with(
        &self,
        token_hash: &str,
        change: &str,
        body: &ReauthChange,
    ) -> Result<SessionChanged, ClientError> {
        self.call(&routes::SESSION_CHANGE, [token_hash, change])
            .json(body)?
            .answer()
            .await
    }

    /// `POST /v1/users/{id}/sessions/revoke`.
    pub async fn revoke_user_sessions(
        &self,
        id: &str,
        except_token_hash: Option<&str>,
    ) -> Result<SessionsRevoked, ClientError> {
        let body = RevokeSessionsRequest {
            except_token_hash: except_token_hash.map(str::to_string),
            at: None,
        };
        self.call(&routes::USER_SESSIONS_REVOKE, [id])
            .json(&body)?
            .answer()
            .await
    }

    /// `POST /v1/users/{id}/sessions/cap`.
    pub async fn cap_user_sessions(
        &self,
        id: &str,
        keep: u32,
    ) -> Result<SessionsRevoked, ClientError> {
        self.call(&routes::USER_SESSIONS_CAP, [id])
            .json(&SessionCapRequest { keep, at: None })?
            .answer()
            .await
    }

    /// `POST /v1/sessions/purge-expired`.
    pub async fn purge_expired_sessions(&self) -> Result<SessionsPurged, ClientError> {
        self.call(&routes::SESSIONS_PURGE_EXPIRED, [])
            .json(&NoChangeBody {})?
            .answer()
            .await
    }
}
