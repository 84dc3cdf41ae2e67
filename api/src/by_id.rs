//! Rows and messages named by their id, and who may know they exist.
//!
//! Row and message ids are sequential, so any answer that tells "this id is another channel's"
//! from "this id is unused" lets a channel-scoped token enumerate every channel's ids (and, when
//! the refusal named it, every channel). So a route that reaches a row or a message by id
//! answers an id outside the caller's channel scope exactly as an id that does not exist: the
//! same status, the same body, no channel named (docs/SPEC.md §9.4). Reads and writes alike ask
//! [`Caller::require_by_id`], and every "not found" of such a route is [`ById::not_found`].

use crate::auth::Caller;
use crate::error::ApiError;

/// What a route names by its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ById {
    /// A work row (`/v1/rows/{id}`, its actions, a batch's `row`).
    Row(u64),
    /// A message (`/v1/messages/{id}` and its actions), as the caller named it: its id, or the
    /// key of a re-ingested child.
    Message(String),
}

impl ById {
    /// The one answer for an id the caller cannot reach: `404 not_found`, naming the id the
    /// caller gave and nothing else.
    pub fn not_found(self) -> ApiError {
        match self {
            ById::Row(id) => ApiError::not_found(format!("row {id} not found")),
            ById::Message(id) => ApiError::not_found(format!("message {id} not found")),
        }
    }
}

impl Caller {
    /// `Ok` when `item` exists (`channel` is the channel it belongs to) in a channel the caller
    /// may see; otherwise the answer for an id that does not exist ([`ById::not_found`]), whether
    /// the item is missing or another channel's.
    pub fn require_by_id(&self, item: ById, channel: Option<&str>) -> Result<(), ApiError> {
        match channel {
            Some(c) if self.may_see(c) => Ok(()),
            _ => Err(item.not_found()),
        }
    }
}
