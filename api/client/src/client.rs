//! A typed async Rust client for the raftlane API, used by the tests, the chaos suite, the
//! benchmark and the demo.
//!
//! It knows every node's address. A call goes to the node that last answered; on a connection
//! failure, a timeout or a 503 it moves on to the next node and tries again until its deadline.
//! Every call is safe to repeat: reads change nothing, and each write carries a `Request-Id`
//! that stays the same across its retries, so the cluster applies it at most once and answers a
//! repeat with the first answer.
//!
//! Names that go into a path (channels, stages, lanes, actions) are percent-encoded, so a
//! name with `/`, `?`, `#`, `%` or a space reaches the server as one segment, byte for byte.

use crate::transport::{base_url, PeerClient};
use hyper::{Method, StatusCode};
use raftlane_contract::headers;
use raftlane_contract::path::encode_segment;
use raftlane_contract::{
    AuditAppendRequest, AuditAppended, AuditVerification, ClaimNext, ClaimRequest, Claimed,
    ClaimedRow, ClusterStatus, ConfigAnswer, ConfigWritten, DoneBody, EnqueueRequest, Enqueued,
    ErrorDetail, FifoClaim, FifoClaimRequest, MessageDetail, MessageId, RowAction, RowActionItem,
    RowActionResult, RowActionResults, RowActionsRequest, RowAnswer, StateDigest,
};
use raftlane_contract::{
    CreateSessionRequest, CreateUserRequest, GroupEntry, GroupMap, GroupMapRequest,
    GroupMapWritten, NoChangeBody, ReauthChange, RevokeSessionsRequest, RoleList, RoleRequest,
    RoleWritten, RolesAssigned, SessionCapRequest, SessionChanged, SessionCreated, SessionList,
    SessionView, SessionsPurged, SessionsRevoked, UserChanged, UserCreated, UserDeleted, UserList,
    UserRoles, UserRolesRequest, UserSecrets, UserView,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error body.
    #[error("{status} {code}: {message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        field: Option<String>,
        /// Every other member of the error object, e.g. `current_version` on a 412, so that a
        /// caller can act on it without another request.
        extra: serde_json::Map<String, Value>,
    },
    /// No node answered before the deadline. The call may or may not have taken effect.
    #[error("no node answered: {0}")]
    Unavailable(String),
    #[error("unexpected response: {0}")]
    Decode(String),
}

impl ClientError {
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Api { code, .. } => Some(code),
            _ => None,
        }
    }
    /// The request field the server blamed (400).
    pub fn field(&self) -> Option<&str> {
        match self {
            ClientError::Api { field, .. } => field.as_deref(),
            _ => None,
        }
    }
    /// A member of the error object beyond `code`, `message` and `field`.
    pub fn extra(&self, name: &str) -> Option<&Value> {
        match self {
            ClientError::Api { extra, .. } => extra.get(name),
            _ => None,
        }
    }
    /// The configuration's current version, sent with a 412 of a compare-and-set.
    pub fn current_version(&self) -> Option<u64> {
        self.extra("current_version").and_then(Value::as_u64)
    }

    /// The error a non-success, non-503 answer stands for. A body that is not the API's JSON
    /// error (e.g. from a proxy) still gives its status, with code `unknown`.
    pub fn from_response(status: u16, body: &[u8]) -> Self {
        let ErrorDetail {
            code,
            message,
            field,
            extra,
        } = ErrorDetail::from_body(body);
        ClientError::Api {
            status,
            code,
            message,
            field,
            extra,
        }
    }
}

/// A request body that would not serialize (not expected of the contract's types; a map with
/// non-string keys would do it).
fn encode_error(e: serde_json::Error) -> ClientError {
    ClientError::Decode(format!("request body: {e}"))
}

/// A request body as the JSON [`Client::request`] sends.
fn encode<T: Serialize>(body: &T) -> Result<Value, ClientError> {
    serde_json::to_value(body).map_err(encode_error)
}

#[derive(Clone)]
pub struct Client {
    nodes: Arc<Vec<String>>,
    current: Arc<AtomicUsize>,
    token: String,
    http: PeerClient,
    deadline: Duration,
    /// Set by [`Client::for_request`]: the id every write of this handle carries.
    request_id: Option<String>,
    /// Set by [`Client::with_client_time`]: the `Raftlane-Client-Time-Ms` of every call.
    client_time: Option<u64>,
}

impl Client {
    /// `nodes`: API addresses (`host:port` or URLs) of the cluster's nodes.
    pub fn new(nodes: Vec<String>, token: impl Into<String>) -> Self {
        Self {
            nodes: Arc::new(nodes.iter().map(|n| base_url(n)).collect()),
            current: Arc::new(AtomicUsize::new(0)),
            token: token.into(),
            http: PeerClient::new(Duration::from_secs(10)),
            deadline: Duration::from_secs(20),
            request_id: None,
            client_time: None,
        }
    }

    /// Dial every node over TLS with `tls` (its CA and, for mutual TLS, this client's
    /// certificate): bare `host:port` addresses and `http://` URLs alike go out as `https://`.
    pub fn with_tls(mut self, tls: &crate::tls::ClientTls) -> Self {
        self.http = PeerClient::with_tls(Duration::from_secs(10), Some(tls));
        self
    }

    /// How long a call keeps trying other nodes.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// A client pinned to one node (no failover): for tests that target a specific node.
    pub fn pinned(&self, node: usize) -> Self {
        let addr = self.nodes.get(node).cloned().unwrap_or_default();
        Self {
            nodes: Arc::new(vec![addr]),
            current: Arc::new(AtomicUsize::new(0)),
            token: self.token.clone(),
            http: self.http.clone(),
            deadline: self.deadline,
            request_id: self.request_id.clone(),
            client_time: self.client_time,
        }
    }

    /// A handle for one logical write that the caller may send several times (its own retry
    /// loop, other nodes): every send carries `Request-Id: id`, so the cluster applies it once
    /// and answers every repeat with the first answer. Use a new id for each different write.
    pub fn for_request(&self, id: impl Into<String>) -> Self {
        Self {
            request_id: Some(id.into()),
            ..self.clone()
        }
    }

    /// A handle whose calls carry `Raftlane-Client-Time-Ms: ms`: their proposals are stamped
    /// with `ms` instead of the node's wall clock. Only a node started with
    /// `--test-client-clock` accepts it (others answer 400); for tests.
    pub fn with_client_time(&self, ms: u64) -> Self {
        Self {
            client_time: Some(ms),
            ..self.clone()
        }
    }

    pub fn with_token(&self, token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            ..self.clone()
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, String)],
    ) -> Result<(StatusCode, Value), ClientError> {
        // One id for every attempt of this write: a retry after an ambiguous failure (timeout,
        // lost answer, 503 "outcome unknown") gets the first attempt's answer, never a second
        // application.
        let request_id = (method != Method::GET).then(|| {
            self.request_id
                .clone()
                .unwrap_or_else(|| format!("c-{:032x}", rand::random::<u128>()))
        });
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        let mut last;
        let n = self.nodes.len().max(1);
        loop {
            let i = self.current.load(Ordering::Relaxed) % n;
            let url = format!(
                "{}{}",
                self.nodes.get(i).map(String::as_str).unwrap_or(""),
                path
            );
            let mut hs: Vec<(&str, String)> =
                vec![("authorization", format!("Bearer {}", self.token))];
            if body.is_some() {
                hs.push(("content-type", "application/json".into()));
            }
            if let Some(id) = &request_id {
                hs.push((headers::REQUEST_ID, id.clone()));
            }
            if let Some(ms) = self.client_time {
                hs.push((headers::CLIENT_TIME_MS, ms.to_string()));
            }
            hs.extend(headers.iter().cloned());
            let bytes = body
                .as_ref()
                .map(|b| b.to_string().into_bytes())
                .unwrap_or_default();
            match self.http.call(method.clone(), &url, &hs, bytes).await {
                Ok((status, _, body)) if status == StatusCode::SERVICE_UNAVAILABLE => {
                    last = format!("{url}: 503 {}", String::from_utf8_lossy(&body));
                }
                Ok((status, _, body)) => {
                    if !status.is_success() {
                        return Err(ClientError::from_response(status.as_u16(), &body));
                    }
                    let value: Value = if body.is_empty() {
                        Value::Null
                    } else {
                        serde_json::from_slice(&body)
                            .map_err(|e| ClientError::Decode(format!("{url}: {e}")))?
                    };
                    return Ok((status, value));
                }
                Err(e) => last = format!("{url}: {e}"),
            }
            self.current.store((i + 1) % n, Ordering::Relaxed);
            if started.elapsed() + pause > self.deadline {
                return Err(ClientError::Unavailable(last));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(1000));
        }
    }

    fn decode<T: DeserializeOwned>(v: Value) -> Result<T, ClientError> {
        serde_json::from_value(v).map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// Any call, for routes without a typed method.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ClientError> {
        Ok(self.send(method, path, body, &[]).await?.1)
    }

    /// A plain-text GET (e.g. `/metrics`) from the current node, without auth.
    pub async fn request_text(&self, path: &str) -> Result<String, ClientError> {
        let i = self.current.load(Ordering::Relaxed) % self.nodes.len().max(1);
        let url = format!(
            "{}{}",
            self.nodes.get(i).map(String::as_str).unwrap_or(""),
            path
        );
        let (_, _, body) = self
            .http
            .call(Method::GET, &url, &[], Vec::new())
            .await
            .map_err(|e| ClientError::Unavailable(e.to_string()))?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    pub async fn enqueue(
        &self,
        channel: &str,
        raw: &str,
        idempotency_key: Option<&str>,
    ) -> Result<Enqueued, ClientError> {
        let headers: Vec<(&str, String)> = idempotency_key
            .map(|k| vec![(headers::IDEMPOTENCY_KEY, k.to_string())])
            .unwrap_or_default();
        let (_, v) = self
            .send(
                Method::POST,
                &format!("/v1/channels/{}/messages", encode_segment(channel)),
                Some(encode(&EnqueueRequest::raw(raw))?),
                &headers,
            )
            .await?;
        Self::decode(v)
    }

    pub async fn claim_fifo(
        &self,
        stage: &str,
        lane: &str,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<FifoClaim, ClientError> {
        let v = self
            .request(
                Method::POST,
                &format!(
                    "/v1/lanes/{}/{}/claim",
                    encode_segment(stage),
                    encode_segment(lane)
                ),
                Some(encode(&FifoClaimRequest {
                    owner: owner.to_string(),
                    ttl_ms,
                    lane_lease: None,
                    row_owner: None,
                    wait_ms: None,
                })?),
            )
            .await?;
        Self::decode(v)
    }

    pub async fn claim_ready(
        &self,
        stage: &str,
        limit: u32,
        owner: &str,
        ttl_ms: u64,
        channel: Option<&str>,
    ) -> Result<Vec<ClaimedRow>, ClientError> {
        let body = ClaimRequest {
            stage: stage.to_string(),
            limit,
            owner: owner.to_string(),
            ttl_ms,
            channel: channel.map(str::to_string),
            destination: None,
            wait_ms: None,
        };
        let v = self
            .request(Method::POST, "/v1/claims", Some(encode(&body)?))
            .await?;
        Ok(Self::decode::<Claimed>(v)?.items)
    }

    /// A fenced row action: `POST /v1/rows/{row_id}/{action}` with the action's body. Answers
    /// the action's own answer (e.g. [`RowAnswer::HandedOff`] for a hand-off).
    pub async fn row(&self, row_id: u64, action: RowAction) -> Result<RowAnswer, ClientError> {
        let body = action.body().map_err(encode_error)?;
        let v = self
            .request(
                Method::POST,
                &format!("/v1/rows/{row_id}/{}", encode_segment(action.name())),
                Some(body),
            )
            .await?;
        Self::decode(v)
    }

    /// Many fenced row actions in one request (each on a different row, no `done` with
    /// `claim_next`). Answers one result per action, in order: the action's own answer, or
    /// [`RowActionResult::Refused`] for an action the cluster refused (bad input refuses the
    /// whole request instead).
    pub async fn row_actions(
        &self,
        actions: &[RowActionItem],
    ) -> Result<Vec<RowActionResult>, ClientError> {
        let body = encode(&RowActionsRequest {
            actions: actions.to_vec(),
        })?;
        let v = self
            .request(Method::POST, "/v1/rows/actions", Some(body))
            .await?;
        Ok(Self::decode::<RowActionResults>(v)?.results)
    }

    pub async fn done(&self, row: &ClaimedRow) -> Result<RowAnswer, ClientError> {
        self.row(row.row_id.0, RowAction::Done(DoneBody::new(row.fence)))
            .await
    }

    /// Mark `row` done and claim the next row of its lane for `owner`, in one write.
    pub async fn done_then_claim_next(
        &self,
        row: &ClaimedRow,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<FifoClaim, ClientError> {
        let action = RowAction::Done(DoneBody {
            fence: row.fence,
            claim_next: Some(ClaimNext {
                owner: owner.to_string(),
                ttl_ms,
            }),
        });
        match self.row(row.row_id.0, action).await? {
            RowAnswer::Done {
                next: Some(next), ..
            } => Ok(next),
            other => Err(ClientError::Decode(format!(
                "a done with claim_next answered without next: {other:?}"
            ))),
        }
    }

    /// A message with its events, rows and responses, without bodies.
    pub async fn message(&self, id: MessageId) -> Result<MessageDetail, ClientError> {
        let v = self
            .request(Method::GET, &format!("/v1/messages/{id}"), None)
            .await?;
        Self::decode(v)
    }

    /// [`Client::message`] with its bodies, read for processing (`record_view=false`: the caller
    /// needs role worker or above; docs/SPEC.md §9.7).
    pub async fn message_with_bodies(&self, id: MessageId) -> Result<MessageDetail, ClientError> {
        let path = format!("/v1/messages/{id}?body=true&record_view=false");
        Self::decode(self.request(Method::GET, &path, None).await?)
    }

    /// `(last_applied, digest)` of the node that answers.
    pub async fn digest(&self) -> Result<(u64, String), ClientError> {
        let v = self
            .request(Method::GET, "/v1/cluster/digest", None)
            .await?;
        let d: StateDigest = Self::decode(v)?;
        Ok((d.last_applied, d.digest))
    }

    pub async fn cluster(&self) -> Result<ClusterStatus, ClientError> {
        let v = self.request(Method::GET, "/v1/cluster", None).await?;
        Self::decode(v)
    }

    pub async fn audit_append(
        &self,
        action: &str,
        org: Option<&str>,
        detail: Option<&str>,
    ) -> Result<AuditAppended, ClientError> {
        let body = AuditAppendRequest {
            action: action.to_string(),
            channel: None,
            org: org.map(str::to_string),
            detail: detail.map(str::to_string),
            actor: None,
        };
        let v = self
            .request(Method::POST, "/v1/audit", Some(encode(&body)?))
            .await?;
        Self::decode(v)
    }

    pub async fn audit_verify(&self, org: &str) -> Result<AuditVerification, ClientError> {
        let v = self
            .request(
                Method::GET,
                &format!("/v1/audit/verify?org={}", encode_segment(org)),
                None,
            )
            .await?;
        Self::decode(v)
    }

    pub async fn config(&self) -> Result<ConfigAnswer, ClientError> {
        let v = self.request(Method::GET, "/v1/config", None).await?;
        Self::decode(v)
    }

    /// A POST/PUT of a typed body, decoded as `T`.
    async fn send_typed<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let v = self.request(method, path, Some(encode(body)?)).await?;
        Self::decode(v)
    }

    /// A GET decoded as `T`.
    async fn get_typed<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let v = self.request(Method::GET, path, None).await?;
        Self::decode(v)
    }

    // --- the engine's users, roles, directory groups and sessions (admin) ---

    /// `POST /v1/users` (409 `already_exists` when the id or username is taken).
    pub async fn create_user(&self, user: &CreateUserRequest) -> Result<UserCreated, ClientError> {
        self.send_typed(Method::POST, "/v1/users", user).await
    }

    /// `GET /v1/users/{id}` (404 for an unknown user).
    pub async fn user(&self, id: &str) -> Result<UserView, ClientError> {
        self.get_typed(&format!("/v1/users/{}", encode_segment(id)))
            .await
    }

    /// `GET /v1/users`, optionally the one user with `username`.
    pub async fn users(&self, username: Option<&str>) -> Result<UserList, ClientError> {
        let path = match username {
            Some(u) => format!("/v1/users?username={}", encode_segment(u)),
            None => "/v1/users".to_string(),
        };
        self.get_typed(&path).await
    }

    /// `POST /v1/users/{id}/{change}` with the change's body (e.g. a [`raftlane_contract::PasswordChange`]).
    pub async fn change_user<B: Serialize>(
        &self,
        id: &str,
        change: &str,
        body: &B,
    ) -> Result<UserChanged, ClientError> {
        let path = format!(
            "/v1/users/{}/{}",
            encode_segment(id),
            encode_segment(change)
        );
        self.send_typed(Method::POST, &path, body).await
    }

    /// `GET /v1/users/{id}/secrets`.
    pub async fn user_secrets(&self, id: &str) -> Result<UserSecrets, ClientError> {
        self.get_typed(&format!("/v1/users/{}/secrets", encode_segment(id)))
            .await
    }

    /// `DELETE /v1/users/{id}`.
    pub async fn delete_user(&self, id: &str) -> Result<UserDeleted, ClientError> {
        let v = self
            .request(
                Method::DELETE,
                &format!("/v1/users/{}", encode_segment(id)),
                None,
            )
            .await?;
        Self::decode(v)
    }

    /// `PUT /v1/roles/{id}`.
    pub async fn put_role(&self, id: &str, role: &RoleRequest) -> Result<RoleWritten, ClientError> {
        let path = format!("/v1/roles/{}", encode_segment(id));
        self.send_typed(Method::PUT, &path, role).await
    }

    /// `GET /v1/roles`.
    pub async fn roles(&self) -> Result<RoleList, ClientError> {
        self.get_typed("/v1/roles").await
    }

    /// `GET /v1/users/{id}/roles`.
    pub async fn user_roles(&self, id: &str) -> Result<UserRoles, ClientError> {
        self.get_typed(&format!("/v1/users/{}/roles", encode_segment(id)))
            .await
    }

    /// `PUT /v1/users/{id}/roles` (404 for an unknown user or role).
    pub async fn set_user_roles(
        &self,
        id: &str,
        body: &UserRolesRequest,
    ) -> Result<RolesAssigned, ClientError> {
        let path = format!("/v1/users/{}/roles", encode_segment(id));
        self.send_typed(Method::PUT, &path, body).await
    }

    /// `GET /v1/directory-groups/{map}` (`roles` or `channels`).
    pub async fn group_map(&self, map: &str) -> Result<GroupMap, ClientError> {
        self.get_typed(&format!("/v1/directory-groups/{}", encode_segment(map)))
            .await
    }

    /// `PUT /v1/directory-groups/{map}`: replace the whole map.
    pub async fn put_group_map(
        &self,
        map: &str,
        entries: Vec<GroupEntry>,
    ) -> Result<GroupMapWritten, ClientError> {
        let path = format!("/v1/directory-groups/{}", encode_segment(map));
        self.send_typed(Method::PUT, &path, &GroupMapRequest { entries })
            .await
    }

    /// `POST /v1/sessions`.
    pub async fn create_session(
        &self,
        session: &CreateSessionRequest,
    ) -> Result<SessionCreated, ClientError> {
        self.send_typed(Method::POST, "/v1/sessions", session).await
    }

    /// `GET /v1/sessions/{token_hash}` (404 for an unknown session).
    pub async fn session(&self, token_hash: &str) -> Result<SessionView, ClientError> {
        self.get_typed(&format!("/v1/sessions/{}", encode_segment(token_hash)))
            .await
    }

    /// `GET /v1/users/{id}/sessions`: the live sessions at the request's time.
    pub async fn user_sessions(&self, id: &str) -> Result<SessionList, ClientError> {
        self.get_typed(&format!("/v1/users/{}/sessions", encode_segment(id)))
            .await
    }

    /// `POST /v1/sessions/{token_hash}/{change}` (`touch`, `reauth`, `mfa-verified`, `revoke`).
    pub async fn change_session(
        &self,
        token_hash: &str,
        change: &str,
        client: Option<&str>,
    ) -> Result<SessionChanged, ClientError> {
        let path = format!(
            "/v1/sessions/{}/{}",
            encode_segment(token_hash),
            encode_segment(change)
        );
        let body = ReauthChange {
            client: client.map(str::to_string),
            at: None,
        };
        self.send_typed(Method::POST, &path, &body).await
    }

    /// `POST /v1/users/{id}/sessions/revoke`.
    pub async fn revoke_user_sessions(
        &self,
        id: &str,
        except_token_hash: Option<&str>,
    ) -> Result<SessionsRevoked, ClientError> {
        let path = format!("/v1/users/{}/sessions/revoke", encode_segment(id));
        let body = RevokeSessionsRequest {
            except_token_hash: except_token_hash.map(str::to_string),
            at: None,
        };
        self.send_typed(Method::POST, &path, &body).await
    }

    /// `POST /v1/users/{id}/sessions/cap`.
    pub async fn cap_user_sessions(
        &self,
        id: &str,
        keep: u32,
    ) -> Result<SessionsRevoked, ClientError> {
        let path = format!("/v1/users/{}/sessions/cap", encode_segment(id));
        self.send_typed(Method::POST, &path, &SessionCapRequest { keep, at: None })
            .await
    }

    /// `POST /v1/sessions/purge-expired`.
    pub async fn purge_expired_sessions(&self) -> Result<SessionsPurged, ClientError> {
        self.send_typed(Method::POST, "/v1/sessions/purge-expired", &NoChangeBody {})
            .await
    }

    /// Compare-and-set the config (a [`raftlane_contract::ConfigDoc`], or JSON of its shape);
    /// `Err` with status 412 carries the current version ([`ClientError::current_version`]).
    pub async fn put_config(
        &self,
        expected_version: u64,
        config: impl Serialize,
    ) -> Result<u64, ClientError> {
        let (_, v) = self
            .send(
                Method::PUT,
                "/v1/config",
                Some(encode(&config)?),
                &[(headers::IF_MATCH, expected_version.to_string())],
            )
            .await?;
        let written: ConfigWritten = Self::decode(v)?;
        Ok(written.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_keeps_its_extra_members() {
        let body = json!({ "error": {
            "code": "version_mismatch",
            "message": "expected 7, current 3",
            "current_version": 3,
        }})
        .to_string();
        let e = ClientError::from_response(412, body.as_bytes());
        assert_eq!(e.status(), Some(412));
        assert_eq!(e.code(), Some("version_mismatch"));
        assert_eq!(e.current_version(), Some(3));
        assert_eq!(e.field(), None);

        let e = ClientError::from_response(
            400,
            br#"{"error":{"code":"invalid","message":"m","field":"ttl_ms"}}"#,
        );
        assert_eq!(e.field(), Some("ttl_ms"));
        assert_eq!(e.current_version(), None);
        assert_eq!(e.extra("field"), None);

        // Not the API's error shape (e.g. a proxy's page): the status survives.
        let e = ClientError::from_response(502, b"");
        assert_eq!((e.status(), e.code()), (Some(502), Some("unknown")));
    }
}
