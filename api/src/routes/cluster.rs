//! Cluster status, digest, membership, and the unauthenticated probes.
//!
//! Membership changes may be sent to any node: like writes, they are forwarded to the leader
//! ([`crate::write::Proposer::membership`]), since only the leader can change the configuration.

use crate::auth::{Caller, Permission};
use crate::backend::MembershipChange;
use crate::dual_control::{self, Action};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, OptionalJson};
use crate::metrics::exposition::Format;
use crate::metrics::set::MetricSet;
use crate::metrics::{cluster_figures, state_figures};
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use raftlane_contract::{
    Ack, ClusterStatus, Health, LeaderTransferRequest, LeaderTransferred, LearnerRequest,
    LogFormatRequest, LogFormatStatus, MembershipRequest, OpenApiDocument, Readiness,
    SnapshotTaken, StateDigest, SNAPSHOT_INDEX_HEADER, SNAPSHOT_NODE_HEADER,
};
use std::sync::Arc;

pub async fn status(
    State(state): State<Arc<AppState>>,
    caller: Caller,
) -> ApiResult<Json<ClusterStatus>> {
    caller.require(Permission::Read)?;
    Ok(Json(state.backend.status()))
}

pub async fn digest(
    State(state): State<Arc<AppState>>,
    caller: Caller,
) -> ApiResult<Json<StateDigest>> {
    caller.require(Permission::Read)?;
    let (last_applied, digest) = state.backend.digest().await.map_err(ApiError::internal)?;
    Ok(Json(StateDigest {
        node_id: state.backend.node_id(),
        last_applied,
        digest: hex::encode(digest),
    }))
}

/// `POST /v1/cluster/snapshot`: this node builds a snapshot of its state now (unless its
/// current one already covers everything it has applied) and answers once it has, so that its
/// log before that point can be compacted and a backup taken. Each node snapshots its own
/// state: ask each node whose log should shrink.
pub async fn snapshot(
    State(state): State<Arc<AppState>>,
    caller: Caller,
) -> ApiResult<Json<SnapshotTaken>> {
    caller.require_global(Permission::Admin)?;
    let index = state
        .backend
        .snapshot_now()
        .await
        .map_err(ApiError::unavailable)?;
    Ok(Json(SnapshotTaken {
        node_id: state.backend.node_id(),
        index,
    }))
}

/// `GET /openapi.json`: the document the router built from the route table.
pub async fn openapi(State(state): State<Arc<AppState>>) -> Json<OpenApiDocument> {
    Json(
        state
            .openapi
            .get()
            .cloned()
            .unwrap_or_else(|| OpenApiDocument(serde_json::Map::new())),
    )
}

/// Read size of a backup's stream.
const BACKUP_CHUNK: usize = 256 * 1024;

/// `GET /v1/cluster/snapshot`: a backup. This node first catches up with the leader's commit
/// (as a linearizable read does), then takes a snapshot covering everything it has applied
/// (`POST /v1/cluster/snapshot`) and streams that file: every write acknowledged before the
/// request is in it. The file carries its own SHA-256 (`raftlane ctl snapshot save` checks it;
/// `raftlane restore` lays a new cluster down from it); the index it reflects is in the
/// `x-raftlane-snapshot-index` header. Read from a file handle, so a newer snapshot replacing
/// it meanwhile changes nothing.
pub async fn download_snapshot(
    State(state): State<Arc<AppState>>,
    caller: Caller,
) -> ApiResult<impl IntoResponse> {
    caller.require_global(Permission::Admin)?;
    state.writes.linearize().await?;
    state
        .backend
        .snapshot_now()
        .await
        .map_err(ApiError::unavailable)?;
    let snapshot = state
        .backend
        .open_snapshot()
        .map_err(ApiError::internal)?
        .ok_or_else(|| ApiError::unavailable("this node has no snapshot to send"))?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, snapshot.bytes.to_string()),
            (
                header::HeaderName::from_static(SNAPSHOT_INDEX_HEADER),
                snapshot.index.to_string(),
            ),
            (
                header::HeaderName::from_static(SNAPSHOT_NODE_HEADER),
                state.backend.node_id().to_string(),
            ),
        ],
        axum::body::Body::from_stream(file_chunks(snapshot.file)),
    ))
}

/// `file` read from where it stands to its end, [`BACKUP_CHUNK`] bytes at a time.
fn file_chunks(
    file: std::fs::File,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    let file = tokio::fs::File::from_std(file);
    futures::stream::try_unfold(file, |mut file| async move {
        use tokio::io::AsyncReadExt as _;
        let mut buf = vec![0u8; BACKUP_CHUNK];
        let n = file.read(&mut buf).await?;
        if n == 0 {
            return Ok::<_, std::io::Error>(None);
        }
        buf.truncate(n);
        Ok(Some((bytes::Bytes::from(buf), file)))
    })
}

/// `POST /v1/cluster/leader`: hand leadership to voter `to` (none: the best placed voter),
/// through the leader like a membership change ([`crate::write::Proposer::membership`]). The
/// answer names the leader as this node sees it once the transfer is done (its view may take
/// a moment to follow: it waits up to [`LEADER_SEEN_WITHIN`] for a leader other than the old
/// one).
pub async fn transfer_leader(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    body: OptionalJson<LeaderTransferRequest>,
) -> ApiResult<Json<LeaderTransferred>> {
    caller.require_global(Permission::Admin)?;
    let b = body.parse()?;
    let before = state.backend.status().leader_id;
    state
        .writes
        .membership(MembershipChange::TransferLeader { to: b.to })
        .await?;
    let leader_id = seen_within(
        || Ok(state.backend.status().leader_id),
        |leader| leader.is_some() && *leader != before,
    )
    .await?;
    Ok(Json(LeaderTransferred { leader_id }))
}

/// `GET /v1/cluster/log-format`: the cluster's log format as this node applied it.
pub async fn log_format(
    State(state): State<Arc<AppState>>,
    caller: Caller,
) -> ApiResult<Json<LogFormatStatus>> {
    caller.require(Permission::Read)?;
    Ok(Json(log_format_status(&state)?))
}

/// `POST /v1/cluster/log-format`: raise it, through the leader, once every member reads it.
/// Answered once this node has applied the change.
pub async fn raise_log_format(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<LogFormatRequest>,
) -> ApiResult<Json<LogFormatStatus>> {
    caller.require_global(Permission::Admin)?;
    dual_control::authorize(&state, &caller, Action::ChangeMembership, &b).await?;
    state
        .writes
        .membership(MembershipChange::RaiseLogFormat {
            format: b.format,
            actor: caller.name.clone(),
        })
        .await?;
    let status = seen_within(
        || log_format_status(&state),
        |status| status.log_format >= b.format,
    )
    .await?;
    Ok(Json(status))
}

fn log_format_status(state: &AppState) -> ApiResult<LogFormatStatus> {
    let log_format = crate::backend::read(state.backend.as_ref(), |r| r.log_format())
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(LogFormatStatus {
        node_id: state.backend.node_id(),
        log_format,
        reads: raftlane_statemachine::wire::LogFormat::read_numbers(),
    })
}

/// How long the answer of a change made through the leader (a leader transfer, a raised log
/// format) waits for the answering node to see it.
const LEADER_SEEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);

/// What `look` answers once `done` holds of it, looking again every 20 ms for at most
/// [`LEADER_SEEN_WITHIN`] (then the last look): the leader answered once the change was made
/// there, and this node may trail it a moment.
async fn seen_within<T>(
    mut look: impl FnMut() -> ApiResult<T>,
    done: impl Fn(&T) -> bool,
) -> ApiResult<T> {
    let deadline = tokio::time::Instant::now() + LEADER_SEEN_WITHIN;
    let mut seen = look()?;
    while !done(&seen) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        seen = look()?;
    }
    Ok(seen)
}

pub async fn add_learner(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<LearnerRequest>,
) -> ApiResult<Json<Ack>> {
    caller.require_global(Permission::Admin)?;
    check_addr(&b.addr)?;
    dual_control::authorize(&state, &caller, Action::ChangeMembership, &b).await?;
    state
        .writes
        .membership(MembershipChange::AddLearner {
            id: b.id,
            addr: b.addr,
        })
        .await?;
    Ok(Json(Ack { ok: true }))
}

pub async fn change_membership(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(b): JsonBody<MembershipRequest>,
) -> ApiResult<Json<Ack>> {
    caller.require_global(Permission::Admin)?;
    if b.voters.is_empty() {
        return Err(ApiError::invalid("voters", "must name at least one node"));
    }
    dual_control::authorize(&state, &caller, Action::ChangeMembership, &b).await?;
    state
        .writes
        .membership(MembershipChange::SetVoters(b.voters))
        .await?;
    Ok(Json(Ack { ok: true }))
}

/// A learner's address is what every node will dial (`host:port`, optionally `http://`): refuse
/// what cannot be one before it enters the cluster's configuration, where a wrong address
/// would only show as a learner that never catches up.
fn check_addr(addr: &str) -> ApiResult<()> {
    let bad = |reason: &str| Err(ApiError::invalid("addr", reason));
    if addr.is_empty() {
        return bad("must not be empty");
    }
    if addr.len() > 255 || addr.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("must be host:port (at most 255 characters, no spaces)");
    }
    let (_, hostport) = crate::peer::split_scheme(addr);
    match hostport.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !host.contains('/') => {
            match port.parse::<u16>() {
                Ok(p) if p > 0 => Ok(()),
                _ => bad("the port must be a number from 1 to 65535"),
            }
        }
        _ => bad("must be host:port"),
    }
}

pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

pub async fn readyz(State(state): State<Arc<AppState>>) -> axum::response::Response {
    match state.backend.ready() {
        Ok(()) => (
            StatusCode::OK,
            Json(Readiness {
                ready: true,
                reason: None,
            }),
        )
            .into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Readiness {
                ready: false,
                reason: Some(reason),
            }),
        )
            .into_response(),
    }
}

/// `GET /metrics`: this node's figures, Prometheus' or OpenMetrics' text as `Accept` asks; a
/// bearer token with the read permission when `--metrics-token-required`.
pub async fn metrics(
    State(state): State<Arc<AppState>>,
    mut parts: axum::http::request::Parts,
) -> axum::response::Response {
    if state.metrics_token_required {
        use axum::extract::FromRequestParts;
        let allowed = match Caller::from_request_parts(&mut parts, &state).await {
            Ok(caller) => caller.require_global(Permission::Read),
            Err(e) => Err(e),
        };
        if let Err(e) = allowed {
            return e.into_response();
        }
    }
    let format = Format::from_accept(
        parts
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    let body = state.metrics.render(node_figures(&state), format);
    ([(header::CONTENT_TYPE, format.content_type())], body).into_response()
}

/// The figures one scrape of this node shows: the cluster as this node sees it, the node's own,
/// the replicated state's, its waiting claims and its forwarded writes.
fn node_figures(state: &AppState) -> MetricSet {
    let mut set = MetricSet::default();
    cluster_figures::write(&state.backend.status(), &mut set);
    state.backend.node_metrics(&mut set);
    state_figures::write(
        state.backend.as_ref(),
        &mut set,
        state.backend.cluster_now_ms(),
    );
    set.gauge(
        "raftlane_claim_waiters",
        "Claims waiting at this node for work to become due",
        Vec::new(),
        state.claim_waiters.waiting() as f64,
    );
    let (calls, writes) = state.writes.relay_counts();
    set.counter(
        "raftlane_forward_calls_total",
        "Calls this node made to the leader to forward writes",
        Vec::new(),
        calls,
    );
    set.counter(
        "raftlane_forwarded_writes_total",
        "Writes this node forwarded to the leader (over the calls: writes per call)",
        Vec::new(),
        writes,
    );
    set
}

#[cfg(test)]
mod tests {
    use super::check_addr;

    #[test]
    fn learner_addresses_must_be_host_and_port() {
        for ok in [
            "10.0.0.4:7000",
            "node4:80",
            "http://node4:7000",
            "http://[::1]:7000/",
        ] {
            assert!(check_addr(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "node4",
            "node4:",
            ":7000",
            "node4:0",
            "node4:70000",
            "a b:1",
            "x/y:1",
        ] {
            let e = check_addr(bad).expect_err(bad);
            assert_eq!(e.field.as_deref(), Some("addr"), "{bad}");
            assert_eq!(e.status.as_u16(), 400, "{bad}");
        }
    }
}
