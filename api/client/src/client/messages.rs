//! Producing and reading messages: enqueue, the message list and one message, views, replays,
//! dead letters, the counts and the row statistics.

use super::Client;
use crate::error::ClientError;
use crate::query::{offset, page_limit};
use crate::routes;
use raftlane_contract::{
    headers, Count, DeadLetterOrder, DeadLetterQuery, DeadLetterStage, DeadLetters, EnqueueRequest,
    Enqueued, MessageDetail, MessageDetailQuery, MessageId, MessageList, MessageQuery,
    ReplayDeadRequest, Requeued, Stage, Stats, Viewed, ViewedRequest,
};
use raftlane_statemachine::model::message::MessageStatus;

/// The filters of `GET /v1/messages` and `GET /v1/messages/count` (absent: no filter). A
/// count ignores `limit`, `offset` and `cursor`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageFilter {
    pub channel: Option<String>,
    pub status: Option<MessageStatus>,
    pub message_type: Option<String>,
    pub control_id: Option<String>,
    /// Only these channels: narrows the token's own scope, never widens it.
    pub allowed_channels: Option<Vec<String>>,
    /// 1 to 1000 (absent: 50).
    pub limit: Option<u32>,
    pub offset: Option<u64>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<u64>,
}

impl MessageFilter {
    /// The query of a list (`paged`) or of a count.
    fn query(&self, paged: bool) -> MessageQuery {
        let filters = MessageQuery {
            channel: self.channel.clone(),
            status: self.status,
            message_type: self.message_type.clone(),
            control_id: self.control_id.clone(),
            allowed_channels: self.allowed_channels.as_ref().map(|c| c.iter().collect()),
            ..MessageQuery::default()
        };
        if !paged {
            return filters;
        }
        MessageQuery {
            limit: page_limit(self.limit),
            offset: offset(self.offset),
            cursor: self.cursor,
            ..filters
        }
    }
}

/// Which dead rows `GET /v1/dead-letters` and its count cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeadStage {
    /// Dead outbound rows (the server's default).
    #[default]
    Outbound,
    Only(Stage),
    All,
}

/// The filters of `GET /v1/dead-letters` and `GET /v1/dead-letters/count`. A count ignores
/// `limit`, `offset` and `newest_failed`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadLetterFilter {
    pub stage: DeadStage,
    pub channel: Option<String>,
    pub destination: Option<String>,
    /// Only these channels: narrows the token's own scope, never widens it.
    pub allowed_channels: Option<Vec<String>>,
    /// Absent: 100.
    pub limit: Option<u32>,
    pub offset: Option<u64>,
    /// The most recently dead first, instead of row-id order.
    pub newest_failed: bool,
}

impl DeadLetterFilter {
    /// The query of a list (`paged`) or of a count.
    fn query(&self, paged: bool) -> DeadLetterQuery {
        let stage = match self.stage {
            DeadStage::Outbound => None,
            DeadStage::Only(s) => Some(DeadLetterStage::from(s)),
            DeadStage::All => Some(DeadLetterStage::All),
        };
        let filters = DeadLetterQuery {
            stage,
            channel: self.channel.clone(),
            destination: self.destination.clone(),
            allowed_channels: self.allowed_channels.as_ref().map(|c| c.iter().collect()),
            ..DeadLetterQuery::default()
        };
        if !paged {
            return filters;
        }
        DeadLetterQuery {
            limit: page_limit(self.limit),
            offset: offset(self.offset),
            order: self.newest_failed.then_some(DeadLetterOrder::NewestFailed),
            ..filters
        }
    }
}

/// How `GET /v1/messages/{id}` reads a message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageRead {
    /// With the bodies; the read is then recorded as a `viewed` event (docs/SPEC.md §9.7).
    pub body: bool,
    /// `Some(false)` with `body`: no `viewed` event (role worker and above, which process
    /// messages).
    pub record_view: Option<bool>,
    /// With `body`: the person the caller reads for, recorded in the `viewed` event.
    pub viewer: Option<String>,
}

impl Client {
    pub async fn enqueue(
        &self,
        channel: &str,
        raw: &str,
        idempotency_key: Option<&str>,
    ) -> Result<Enqueued, ClientError> {
        self.enqueue_with(channel, &EnqueueRequest::raw(raw), idempotency_key)
            .await
    }

    /// Enqueue a message with every member of the request (its fields, its producer's routing,
    /// or a disposition recorded on receipt). With `idempotency_key`, a key already used on
    /// this channel answers the first message with `duplicate: true`.
    pub async fn enqueue_with(
        &self,
        channel: &str,
        message: &EnqueueRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Enqueued, ClientError> {
        let mut call = self.call(&routes::ENQUEUE, [channel]).json(message)?;
        if let Some(key) = idempotency_key {
            call = call.header(headers::IDEMPOTENCY_KEY, key.to_string());
        }
        call.answer().await
    }

    /// `GET /v1/messages`: a page of messages, newest first, without bodies.
    pub async fn messages(&self, filter: &MessageFilter) -> Result<MessageList, ClientError> {
        self.call(&routes::MESSAGES, [])
            .query(&filter.query(true))?
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/messages/count`: how many messages pass `filter`.
    pub async fn count_messages(&self, filter: &MessageFilter) -> Result<u64, ClientError> {
        let c: Count = self
            .call(&routes::MESSAGES_COUNT, [])
            .query(&filter.query(false))?
            .reads_state()
            .answer()
            .await?;
        Ok(c.count)
    }

    /// A message with its events, rows and responses, without bodies.
    pub async fn message(&self, id: MessageId) -> Result<MessageDetail, ClientError> {
        self.message_read(&id.to_string(), &MessageRead::default())
            .await
    }

    /// [`Client::message`] with its bodies, read for processing (`record_view=false`: the caller
    /// needs role worker or above; docs/SPEC.md §9.7).
    pub async fn message_with_bodies(&self, id: MessageId) -> Result<MessageDetail, ClientError> {
        let read = MessageRead {
            body: true,
            record_view: Some(false),
            viewer: None,
        };
        self.message_read(&id.to_string(), &read).await
    }

    /// `GET /v1/messages/{id}` read as `read` says; `id` is a message id, or the key a
    /// re-ingested child was given (`child_key`).
    pub async fn message_read(
        &self,
        id: &str,
        read: &MessageRead,
    ) -> Result<MessageDetail, ClientError> {
        let query = MessageDetailQuery {
            body: read.body.then_some(true),
            record_view: read.record_view,
            viewer: read.viewer.clone(),
            consistency: None,
        };
        self.call(&routes::MESSAGE, [id])
            .query(&query)?
            .reads_state()
            .answer()
            .await
    }

    /// `POST /v1/messages/{id}/viewed`: append a `viewed` event (its detail: `actor`).
    pub async fn record_view(
        &self,
        id: MessageId,
        actor: Option<&str>,
    ) -> Result<Viewed, ClientError> {
        let body = ViewedRequest {
            actor: actor.map(str::to_string),
        };
        self.call(&routes::MESSAGE_VIEWED, [&id.to_string()])
            .json(&body)?
            .answer()
            .await
    }

    /// `POST /v1/messages/{id}/replay`: recover the message's stuck rows, else re-send its
    /// done rows.
    pub async fn replay(&self, id: MessageId) -> Result<Requeued, ClientError> {
        self.call(&routes::MESSAGE_REPLAY, [&id.to_string()])
            .answer()
            .await
    }

    /// `GET /v1/dead-letters`: dead rows with their messages' fields.
    pub async fn dead_letters(
        &self,
        filter: &DeadLetterFilter,
    ) -> Result<DeadLetters, ClientError> {
        self.call(&routes::DEAD_LETTERS, [])
            .query(&filter.query(true))?
            .reads_state()
            .answer()
            .await
    }

    /// `GET /v1/dead-letters/count`: how many dead rows pass `filter`.
    pub async fn count_dead_letters(&self, filter: &DeadLetterFilter) -> Result<u64, ClientError> {
        let c: Count = self
            .call(&routes::DEAD_LETTERS_COUNT, [])
            .query(&filter.query(false))?
            .reads_state()
            .answer()
            .await?;
        Ok(c.count)
    }

    /// `POST /v1/dead-letters/replay`: requeue dead outbound rows (of one channel and/or
    /// destination). Under dual control, send it through [`Client::with_approval`].
    pub async fn replay_dead(&self, which: &ReplayDeadRequest) -> Result<Requeued, ClientError> {
        self.call(&routes::DEAD_LETTERS_REPLAY, [])
            .json(which)?
            .answer()
            .await
    }

    /// `GET /v1/stats`: row counts by stage and status.
    pub async fn stats(&self) -> Result<Stats, ClientError> {
        self.call(&routes::STATS, []).reads_state().answer().await
    }
}
