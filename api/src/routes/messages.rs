//! Producing and reading messages; replay and dead letters.

use super::{check_name, prepare_read, propose, read_covered, read_state, unexpected, ReadOpts};
use crate::auth::{Caller, Permission};
use crate::backend;
use crate::by_id::ById;
use crate::dual_control::{self, Action};
use crate::error::{ApiError, ApiResult};
use crate::extract::{body_error, parse_json, OptionalJson, Path, Query};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use raftlane_contract::{
    CommaList, ConnectionMetrics, Count, DeadLetterOrder, DeadLetterQuery, DeadLetterRow,
    DeadLetters, DeliveryBody, EnqueueRequest, Enqueued, ListedMessage, MessageDetail,
    MessageDetailQuery, MessageList, MessageQuery, ReplayDeadRequest, Requeued, Stats,
    StorageStats, TrafficQuery, Viewed, ViewedRequest,
};
use raftlane_statemachine::query::{
    DeadLetterFilter, MessageFilter, MessageView, Reader, PAGE_SCAN_BUDGET,
};
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::wire::command::{
    EnqueueIngress, EnqueueMessage, MessageFields, ReceivedStatus, RecordReceived, RecordView,
    Replay, ReplayDead,
};
use raftlane_statemachine::{Command, MessageId, Outcome, StoreError};
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
    let command = enqueue_command(channel, req).await?;
    match propose(&state, &caller, command).await? {
        (
            index,
            Outcome::Enqueued {
                message_id,
                duplicate,
            },
        ) => Ok((
            // A duplicate of an earlier idempotency key is not created again.
            if duplicate {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            },
            Json(Enqueued {
                message_id,
                duplicate,
                index,
            }),
        )),
        (_, other) => Err(unexpected(other)),
    }
}

/// An enqueue's request read (after the caller's checks, so a caller that may not produce
/// learns nothing from how its body is refused) and checked, as the command it proposes.
async fn enqueue_command(channel: String, req: Request) -> ApiResult<Command> {
    let headers = req.headers().clone();
    let bytes = Bytes::from_request(req, &()).await.map_err(body_error)?;
    let body = enqueue_body(&headers, &bytes)?;
    // A message to process needs a body; a disposition record (`status`: what arrived and
    // was filtered or refused, messagefoundry's `record_received`) keeps whatever arrived,
    // an empty body included.
    if body.raw.is_empty() && body.status.is_none() {
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
    enqueue_shape(
        channel,
        body.raw,
        fields,
        idempotency_key,
        body.deliveries,
        body.status,
        body.error,
    )
}

/// An enqueue's body: JSON (`Content-Type: application/json`), or the raw message with its
/// fields in `X-` headers.
fn enqueue_body(headers: &HeaderMap, bytes: &[u8]) -> ApiResult<EnqueueRequest> {
    let is_json =
        header(headers, "content-type").is_some_and(|c| c.starts_with("application/json"));
    if is_json {
        return parse_json(bytes);
    }
    let raw = String::from_utf8(bytes.to_vec())
        .map_err(|_| ApiError::invalid("body", "raw body must be UTF-8 text"))?;
    let metadata = match header(headers, "x-metadata") {
        Some(m) => Some(
            serde_json::from_str(&m).map_err(|e| ApiError::invalid("X-Metadata", e.to_string()))?,
        ),
        None => None,
    };
    Ok(EnqueueRequest {
        raw,
        control_id: header(headers, "x-control-id"),
        message_type: header(headers, "x-message-type"),
        source_type: header(headers, "x-source-type"),
        summary: header(headers, "x-summary"),
        metadata,
        ..EnqueueRequest::default()
    })
}

/// The command an enqueue proposes: a message for the ingress stage (EnqueueIngress), one its
/// producer routed already (`deliveries`: EnqueueMessage), or one recorded as filtered or in
/// error on receipt (`status`: RecordReceived). The three shapes exclude each other.
fn enqueue_shape(
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
            deliveries: crate::write::row_action::deliveries(list)?,
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

/// The channels a read may cover: the caller's scope, narrowed by a comma-separated
/// `allowed_channels` (an empty list, or empty items, allow none).
fn allowed_channels(caller: &Caller, asked: Option<CommaList>) -> Option<Vec<String>> {
    let asked: Option<Vec<String>> = asked.map(|list| {
        list.into_items()
            .into_iter()
            .filter(|c| !c.is_empty())
            .collect()
    });
    match (caller.scope(), asked) {
        (None, asked) => asked,
        (Some(scope), None) => Some(scope),
        (Some(scope), Some(asked)) => {
            Some(asked.into_iter().filter(|c| scope.contains(c)).collect())
        }
    }
}

/// The message filter a list query names, after the caller's checks.
async fn message_filter(
    state: &AppState,
    caller: &Caller,
    q: MessageQuery,
) -> ApiResult<MessageFilter> {
    caller.require(Permission::Read)?;
    if let Some(c) = &q.channel {
        caller.require_channel(c)?;
    }
    prepare_read(
        state,
        &ReadOpts {
            consistency: q.consistency,
        },
    )
    .await?;
    Ok(MessageFilter {
        channel: q.channel,
        status: q.status,
        message_type: q.message_type,
        control_id: q.control_id,
        allowed_channels: allowed_channels(caller, q.allowed_channels),
        limit: q.limit.get(),
        // A page examines at most PAGE_SCAN_BUDGET messages: deeper pages are reached with
        // `cursor`.
        offset: crate::page::within(q.offset, PAGE_SCAN_BUDGET, "messages")?,
        before: q.cursor.map(MessageId),
    })
}

pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<MessageQuery>,
) -> ApiResult<Json<MessageList>> {
    let filter = message_filter(&state, &caller, q).await?;
    let page = state
        .writes
        .read_covered(|r| r.list_messages_page(&filter))?;
    Ok(Json(MessageList {
        messages: page.messages.into_iter().map(ListedMessage::from).collect(),
        next_cursor: page.next_cursor.map(|id| id.0),
    }))
}

/// `GET /v1/messages/count`: the messages the list's filters pass (limit and offset ignored).
pub async fn count(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<MessageQuery>,
) -> ApiResult<Json<Count>> {
    let filter = message_filter(&state, &caller, q).await?;
    let count = backend::read(state.backend.as_ref(), |r| r.count_messages(&filter))?;
    Ok(Json(Count { count }))
}

/// `GET /v1/messages/{id}`: without `body=true` the message's members, events, rows and
/// responses without any body; with it the bodies too, and a `viewed` event records who read
/// them (docs/SPEC.md §9.7).
pub async fn get_one(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<MessageDetailQuery>,
) -> ApiResult<Json<MessageDetail>> {
    let (bodies, record) = detail_access(&caller, &q)?;
    let key = MessageKey::parse(&id)?;
    let opts = ReadOpts {
        consistency: q.consistency,
    };
    // The covered read opens the values a body-less answer keeps too (`error`, `last_error`).
    let view = read_covered(&state, &opts, |r| key.read(r)).await?;
    caller.require_by_id(
        ById::Message(id.clone()),
        view.as_ref().map(|v| v.message.channel_id.as_str()),
    )?;
    let Some(mut view) = view else {
        return Err(ById::Message(id).not_found());
    };
    for row in &mut view.rows {
        super::hide_foreign_fence(&state, &caller, row)?;
    }
    let message_id = view.message.id;
    let mut detail = MessageDetail::new(view, bodies);
    if bodies && record {
        let viewer = Some(caller.on_behalf_of(q.viewer.as_deref()));
        let command = Command::RecordView(RecordView { message_id, viewer });
        let (index, _) = propose(&state, &caller, command).await?;
        detail.viewed_index = Some(index);
    }
    Ok(Json(detail))
}

/// What a message read may show `caller`: whether it carries the bodies, and whether that
/// read is recorded as a `viewed` event (docs/SPEC.md §9.7).
fn detail_access(caller: &Caller, q: &MessageDetailQuery) -> ApiResult<(bool, bool)> {
    caller.require(Permission::Read)?;
    let bodies = q.body.unwrap_or(false);
    let record = q.record_view.unwrap_or(true);
    if bodies {
        caller.require(Permission::ReadBodies)?;
        if !record {
            caller.require(Permission::Work).map_err(|_| {
                ApiError::forbidden(
                    "record_view=false is for callers that process messages (role worker and \
                     above); a body read by this role is always recorded",
                )
            })?;
        }
    }
    if let Some(v) = &q.viewer {
        check_name("viewer", v)?;
    }
    Ok((bodies, record))
}

/// How `GET /v1/messages/{id}` names a message.
enum MessageKey {
    Id(MessageId),
    ChildKey(String),
}

impl MessageKey {
    /// A message id, or the key a caller gave a re-ingested child (docs/SPEC.md §14.7).
    fn parse(id: &str) -> ApiResult<Self> {
        match id.parse::<u64>() {
            Ok(n) => Ok(MessageKey::Id(MessageId(n))),
            Err(_) => {
                check_name("id", id).map_err(|_| {
                    ApiError::invalid("id", "must be a message id (an integer) or a child key")
                })?;
                Ok(MessageKey::ChildKey(id.to_string()))
            }
        }
    }

    /// The message this key names, as `r` holds it (`None`: no such message).
    fn read(&self, r: &Reader<'_>) -> Result<Option<MessageView>, StoreError> {
        let found = match self {
            MessageKey::Id(id) => Some(*id),
            MessageKey::ChildKey(k) => r.message_by_child_key(k)?,
        };
        match found {
            Some(id) => r.message(id),
            None => Ok(None),
        }
    }
}

pub fn parse_message_id(s: &str) -> ApiResult<MessageId> {
    s.parse::<u64>()
        .map(MessageId)
        .map_err(|_| ApiError::invalid("id", "must be a message id (an integer)"))
}

/// The scope check of an action on message `id` (stale read: channels never change): a
/// channel-scoped caller gets the same 404 for another channel's message as for a missing one
/// (`crate::by_id`); an unscoped caller's missing message is the state machine's to refuse.
fn require_message(state: &AppState, caller: &Caller, id: MessageId) -> ApiResult<()> {
    if caller.channels.is_none() {
        return Ok(());
    }
    let view = backend::read(state.backend.as_ref(), |r| r.message(id))?;
    caller.require_by_id(
        ById::Message(id.to_string()),
        view.as_ref().map(|v| v.message.channel_id.as_str()),
    )
}

pub async fn replay(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Requeued>> {
    caller.require(Permission::Requeue)?;
    let id = parse_message_id(&id)?;
    require_message(&state, &caller, id)?;
    // A message's replay requeues its dead rows too: the same action as a dead-letter replay
    // under dual control (docs/SPEC.md §9.5).
    let params = serde_json::json!({ "message_id": id.0 });
    dual_control::authorize(&state, &caller, Action::ReplayDead, &params).await?;
    match propose(&state, &caller, Command::Replay(Replay { message_id: id })).await? {
        (index, Outcome::Count(n)) => Ok(Json(Requeued { index, requeued: n })),
        (_, other) => Err(unexpected(other)),
    }
}

async fn dead_filter(
    state: &AppState,
    caller: &Caller,
    q: &DeadLetterQuery,
) -> ApiResult<DeadLetterFilter> {
    caller.require(Permission::Read)?;
    if let Some(c) = &q.channel {
        caller.require_channel(c)?;
    }
    prepare_read(
        state,
        &ReadOpts {
            consistency: q.consistency,
        },
    )
    .await?;
    Ok(DeadLetterFilter {
        // messagefoundry's dead letters, the outbound ones, unless the query names others.
        stages: q
            .stage
            .map_or_else(|| vec![Stage::Outbound], |s| s.stages()),
        channel: q.channel.clone(),
        destination: q.destination.clone(),
        allowed_channels: allowed_channels(caller, q.allowed_channels.clone()),
        limit: q.limit.get(),
        offset: q.offset.get(),
    })
}

pub async fn dead_letters(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<DeadLetterQuery>,
) -> ApiResult<Json<DeadLetters>> {
    let filter = dead_filter(&state, &caller, &q).await?;
    let rows = match q.order.unwrap_or(DeadLetterOrder::RowId) {
        DeadLetterOrder::NewestFailed => state
            .writes
            .read_covered(|r| r.dead_letters_newest(&filter))?,
        DeadLetterOrder::RowId => state
            .writes
            .read_covered(|r| r.dead_letters_in_order(&filter))?,
    };
    Ok(Json(DeadLetters {
        dead_letters: rows.into_iter().map(DeadLetterRow::from).collect(),
    }))
}

/// `GET /v1/dead-letters/count`: the dead outbound rows the filters pass.
pub async fn dead_count(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<DeadLetterQuery>,
) -> ApiResult<Json<Count>> {
    let filter = dead_filter(&state, &caller, &q).await?;
    let count = backend::read(state.backend.as_ref(), |r| r.count_dead_letters(&filter))?;
    Ok(Json(Count { count }))
}

/// `POST /v1/messages/{id}/viewed`: the event `viewed` in the message's history, with the
/// viewer as its detail (docs/SPEC.md §14.6).
pub async fn viewed(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    body: OptionalJson<ViewedRequest>,
) -> ApiResult<Json<Viewed>> {
    caller.require(Permission::Read)?;
    let id = parse_message_id(&id)?;
    let body = body.parse()?;
    require_message(&state, &caller, id)?;
    // Who viewed is always recorded: the caller's principal, with the person it names beside it.
    let command = Command::RecordView(RecordView {
        message_id: id,
        viewer: Some(caller.on_behalf_of(body.actor.as_deref())),
    });
    let (index, _) = propose(&state, &caller, command).await?;
    Ok(Json(Viewed { index }))
}

pub async fn replay_dead(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    body: OptionalJson<ReplayDeadRequest>,
) -> ApiResult<Json<Requeued>> {
    caller.require(Permission::Requeue)?;
    let body = body.parse()?;
    caller.require_channel_filter(body.channel.as_deref())?;
    dual_control::authorize(&state, &caller, Action::ReplayDead, &body).await?;
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
    // The figures span every channel: a scoped token would learn the others' volumes.
    caller.require_global(Permission::Read)?;
    let stats = read_state(&state, &opts, |r| Ok(r.stats())).await?;
    Ok(Json(Stats::from(stats)))
}

/// `GET /v1/stats/storage`: messages, events and the state's logical size. Scans the state.
pub async fn storage(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(opts): Query<ReadOpts>,
) -> ApiResult<Json<StorageStats>> {
    // The figures span every channel: a scoped token would learn the others' volumes.
    caller.require_global(Permission::Read)?;
    let (sizes, stats) = read_state(&state, &opts, |r| Ok((r.storage_stats()?, r.stats()))).await?;
    Ok(Json(StorageStats {
        messages: stats.messages,
        events: sizes.events,
        size_bytes: sizes.bytes,
        last_applied: stats.last_applied,
    }))
}

/// `GET /v1/metrics/connections`: per-channel inbound and per-destination outbound traffic.
/// Scans every message and row.
pub async fn connections(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Query(q): Query<TrafficQuery>,
) -> ApiResult<Json<ConnectionMetrics>> {
    // The figures span every channel: a scoped token would learn the others' volumes.
    caller.require_global(Permission::Read)?;
    let since = q.since.unwrap_or(0);
    let rate_since = caller
        .now_ms()
        .saturating_sub(q.rate_window_ms.unwrap_or(60_000));
    let opts = ReadOpts {
        consistency: q.consistency,
    };
    let metrics = read_state(&state, &opts, |r| r.connection_metrics(since, rate_since)).await?;
    Ok(Json(ConnectionMetrics::from(metrics)))
}
