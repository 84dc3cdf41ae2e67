//! Producing and reading messages; replay and dead letters.

use super::{check_name, prepare_read, propose, read_covered, read_state, unexpected, ReadOpts};
use crate::app::{body_error, parse_json, parse_json_or_default, AppState, Path, Query, RawBody};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::error::{ApiError, ApiResult};
use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use raftlane_contract::{
    DeadLetters, DeliveryBody, EnqueueRequest, Enqueued, MessageDetail, MessageList,
    ReplayDeadRequest, Requeued, Stats,
};
use raftlane_statemachine::model::message::MessageStatus;
use raftlane_statemachine::query::MessageFilter;
use raftlane_statemachine::wire::command::{
    EnqueueIngress, EnqueueMessage, MessageFields, ReceivedStatus, RecordReceived, Replay,
    ReplayDead,
};
use raftlane_statemachine::{Command, MessageId, Outcome};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `POST /v1/channels/{channel}/messages`: JSON body, or a raw body with `X-` headers.
pub async fn enqueue(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(channel): Path<String>,
    req: Request,
) -> ApiResult<(StatusCode, Json<Enqueued>)> {
    caller.require(Permission::Produce)?;
    check_name("channel", &channel)?;
    caller.require_channel(&channel)?;
    let headers = req.headers().clone();
    let is_json =
        header(&headers, "content-type").is_some_and(|c| c.starts_with("application/json"));
    let bytes = Bytes::from_request(req, &()).await.map_err(body_error)?;
    let body: EnqueueRequest = if is_json {
        parse_json(&bytes)?
    } else {
        let raw = String::from_utf8(bytes.to_vec())
            .map_err(|_| ApiError::invalid("body", "raw body must be UTF-8 text"))?;
        let metadata = match header(&headers, "x-metadata") {
            Some(m) => Some(
                serde_json::from_str(&m)
                    .map_err(|e| ApiError::invalid("X-Metadata", e.to_string()))?,
            ),
            None => None,
        };
        EnqueueRequest {
            raw,
            control_id: header(&headers, "x-control-id"),
            message_type: header(&headers, "x-message-type"),
            source_type: header(&headers, "x-source-type"),
            summary: header(&headers, "x-summary"),
            metadata,
            ..EnqueueRequest::default()
        }
    };
    if body.raw.is_empty() {
        return Err(ApiError::invalid("raw", "must not be empty"));
    }
    let metadata = match body.metadata {
        None => None,
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(_) => return Err(ApiError::invalid("metadata", "must be a JSON object")),
    };
    let idempotency_key = header(&headers, "idempotency-key");
    if let Some(k) = &idempotency_key {
        check_name("Idempotency-Key", k)?;
    }
    let fields = MessageFields {
        control_id: body.control_id,
        message_type: body.message_type,
        source_type: body.source_type,
        summary: body.summary,
        metadata,
    };
    let command = enqueue_command(
        channel,
        body.raw,
        fields,
        idempotency_key,
        body.deliveries,
        body.status,
        body.error,
    )?;
    match propose(&state, &caller, command).await? {
        (
            index,
            Outcome::Enqueued {
                message_id,
                duplicate,
            },
        ) => {
            let status = if duplicate {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            Ok((
                status,
                Json(Enqueued {
                    message_id,
                    duplicate,
                    index,
                }),
            ))
        }
        (_, other) => Err(unexpected(other)),
    }
}

/// The command an enqueue proposes: a message for the ingress stage (EnqueueIngress), one its
/// producer routed already (`deliveries`: EnqueueMessage), or one recorded as filtered or in
/// error on receipt (`status`: RecordReceived). The three shapes exclude each other.
fn enqueue_command(
    channel: String,
    raw: String,
    fields: MessageFields,
    idempotency_key: Option<String>,
    deliveries: Option<Vec<DeliveryBody>>,
    status: Option<ReceivedStatus>,
    error: Option<String>,
) -> ApiResult<Command> {
    if error.is_some() && status.is_none() {
        return Err(ApiError::invalid("error", "only with status"));
    }
    Ok(match (deliveries, status) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "status",
                "not with deliveries: a message is either routed by its producer or recorded as filtered or in error",
            ))
        }
        (Some(list), None) => Command::EnqueueMessage(EnqueueMessage {
            channel,
            raw,
            fields,
            deliveries: super::work::deliveries(list)?,
            idempotency_key,
        }),
        (None, Some(status)) => {
            if idempotency_key.is_some() {
                return Err(ApiError::invalid(
                    "Idempotency-Key",
                    "not with status: a message recorded on receipt has no idempotency key",
                ));
            }
            Command::RecordReceived(RecordReceived {
                channel,
                raw,
                fields,
                status,
                error,
            })
        }
        (None, None) => Command::EnqueueIngress(EnqueueIngress {
            channel,
            raw,
            fields,
            idempotency_key,
        }),
    })
}

#[derive(Deserialize)]
pub struct ListQuery {
    channel: Option<String>,
    status: Option<String>,
    message_type: Option<String>,
    control_id: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
    consistency: Option<String>,
}

pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<MessageList>> {
    caller.require(Permission::Read)?;
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(
            MessageStatus::parse(s)
                .ok_or_else(|| ApiError::invalid("status", format!("unknown status '{s}'")))?,
        ),
    };
    if let Some(c) = &q.channel {
        caller.require_channel(c)?;
    }
    prepare_read(
        &state,
        &ReadOpts {
            consistency: q.consistency,
        },
    )
    .await?;
    let filter = MessageFilter {
        channel: q.channel,
        status,
        message_type: q.message_type,
        control_id: q.control_id,
        allowed_channels: caller.scope(),
        limit: q.limit.unwrap_or(50),
        offset: q.offset.unwrap_or(0),
    };
    let messages = state.writes.read_covered(|r| r.list_messages(&filter))?;
    Ok(Json(MessageList { messages }))
}

pub async fn get_one(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<MessageDetail>> {
    caller.require(Permission::Read)?;
    let id = parse_message_id(&id)?;
    let view = read_covered(&state, &opts, |r| r.message(id)).await?;
    match view {
        Some(v) if caller.may_see(&v.message.channel_id) => Ok(Json(MessageDetail::from(v))),
        _ => Err(ApiError::not_found(format!("message {id} not found"))),
    }
}

pub fn parse_message_id(s: &str) -> ApiResult<MessageId> {
    s.parse::<u64>()
        .map(MessageId)
        .map_err(|_| ApiError::invalid("id", "must be a message id (an integer)"))
}

/// Load a message's channel for a scope check (stale read: channels never change).
fn message_channel(state: &AppState, id: MessageId) -> ApiResult<String> {
    let view = backend::read(state.backend.as_ref(), |r| r.message(id))?;
    view.map(|v| v.message.channel_id)
        .ok_or_else(|| ApiError::not_found(format!("message {id} not found")))
}

pub async fn replay(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Requeued>> {
    caller.require(Permission::Operate)?;
    let id = parse_message_id(&id)?;
    if caller.channels.is_some() {
        caller.require_channel(&message_channel(&state, id)?)?;
    }
    match propose(&state, &caller, Command::Replay(Replay { message_id: id })).await? {
        (index, Outcome::Count(n)) => Ok(Json(Requeued { index, requeued: n })),
        (_, other) => Err(unexpected(other)),
    }
}

#[derive(Deserialize)]
pub struct DeadQuery {
    channel: Option<String>,
    destination: Option<String>,
    limit: Option<usize>,
    consistency: Option<String>,
}

pub async fn dead_letters(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<DeadQuery>,
) -> ApiResult<Json<DeadLetters>> {
    caller.require(Permission::Read)?;
    if let Some(c) = &q.channel {
        caller.require_channel(c)?;
    }
    prepare_read(
        &state,
        &ReadOpts {
            consistency: q.consistency,
        },
    )
    .await?;
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    let rows = state.writes.read_covered(|r| {
        let rows = r.dead_letters(q.channel.as_deref(), q.destination.as_deref(), limit * 4)?;
        Ok(rows
            .into_iter()
            .filter(|r| caller.may_see(&r.channel_id))
            .take(limit)
            .collect::<Vec<_>>())
    })?;
    Ok(Json(DeadLetters { dead_letters: rows }))
}

pub async fn replay_dead(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    RawBody(body): RawBody,
) -> ApiResult<Json<Requeued>> {
    caller.require(Permission::Operate)?;
    let body: ReplayDeadRequest = parse_json_or_default(&body)?;
    caller.require_channel_filter(body.channel.as_deref())?;
    let command = Command::ReplayDead(ReplayDead {
        channel: body.channel,
        destination: body.destination,
    });
    match propose(&state, &caller, command).await? {
        (index, Outcome::Count(n)) => Ok(Json(Requeued { index, requeued: n })),
        (_, other) => Err(unexpected(other)),
    }
}

pub async fn stats(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<Stats>> {
    caller.require(Permission::Read)?;
    // The counts span every channel: a channel-scoped token would learn the other channels'
    // volumes from them.
    if caller.scope().is_some() {
        return Err(ApiError::forbidden(
            "the stats count every channel; a channel-scoped token cannot read them",
        ));
    }
    let stats = read_state(&state, &opts, |r| Ok(r.stats())).await?;
    Ok(Json(Stats::from(stats)))
}
