//! What retention keeps about a message's end, and where a paged retention pass stopped.
//!
//! Retention works from an index of ended messages ordered by end time (docs/SPEC.md §8.6), not
//! from a scan of every message: a message enters it when it becomes terminal and leaves it when
//! a replay revives it or retention deletes it, so a pass only ever reads messages it has to act
//! on. These are the values of that index's reverse table and of the pass cursors.

use crate::model::ids::{MessageId, Millis};
use serde::{Deserialize, Serialize};

/// When a message ended, and whether it ended in error (a dead letter or an error recorded by
/// its producer). Failed messages have their own retention period, so they are indexed apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageEnd {
    pub failed: bool,
    /// The state machine's clock when the message last became terminal.
    pub at: Millis,
}

/// Where a paged retention pass resumes: after the ended-message key `(at, message_id)`.
///
/// For the one-time pass that indexes messages which ended before the index existed
/// (`RetentionPass::IndexEnded`), `message_id` is the next message to examine and `at` is the
/// first message id the pass does not need to look at (the id counter when it began: newer
/// messages are indexed as they end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RetentionCursor {
    pub at: Millis,
    pub message_id: MessageId,
}
