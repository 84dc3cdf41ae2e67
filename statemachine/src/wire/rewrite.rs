//! Key rotation on the wire (docs/SPEC.md §2.6): which stored value a [`Rewrite`] targets and
//! the compare-and-set it asks for, carried by
//! [`RewriteValues`](crate::wire::command::RewriteValues).
//!
//! The state machine never does any cryptography: the proposer reads the covered values in a
//! stable walk order ([`crate::tables::covered`], through `Reader::covered_values`), decrypts
//! and re-encrypts them under the active key, and proposes the new ciphertexts. Each
//! [`Rewrite`] is a compare-and-set: the value is replaced only if it still equals `expected`,
//! so a value changed concurrently (a retry recorded a new error, a purge blanked a body) is
//! never clobbered with stale content. What the command does is [`crate::apply::rewrite`].

use crate::model::ids::{MessageId, RowId};
use serde::{Deserialize, Serialize};

/// Most items one `RewriteValues` may carry.
pub const MAX_REWRITES: usize = 10_000;

/// One value covered by encryption at rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueRef {
    MessageRaw {
        message_id: MessageId,
    },
    MessageError {
        message_id: MessageId,
    },
    RowPayload {
        row_id: RowId,
    },
    RowLastError {
        row_id: RowId,
    },
    EventDetail {
        message_id: MessageId,
        event_no: u64,
    },
    ResponseBody {
        message_id: MessageId,
        destination: String,
        seq: u32,
    },
    ResponseDetail {
        message_id: MessageId,
        destination: String,
        seq: u32,
    },
    StateValue {
        namespace: String,
        key: String,
    },
    ReferenceValue {
        name: String,
        key: String,
    },
}

/// Replace the value at `target` with `value` if it currently equals `expected`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    pub target: ValueRef,
    pub expected: String,
    pub value: String,
}
