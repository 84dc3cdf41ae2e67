//! The finalizer: the single place that derives a message's terminal status from its rows.
//!
//! Run after every command that ends or removes a row. Because `apply` is serial, a message is
//! finalized exactly once per transition; no lock is needed (the seeds needed advisory locks).

use crate::model::ids::MessageId;
use crate::model::lane::LaneEvent;
use crate::model::message::MessageStatus;
use crate::model::row::{RowStatus, Stage, WorkRow};
use crate::rules::dedupe;
use crate::storage::StoreError;
use crate::tables::{messages, rows, tallies, Db};

/// The status the rows imply, or `None` to leave the message as it is (docs/SPEC.md §5.1, in
/// precedence).
pub fn verdict(status: MessageStatus, rows: &[WorkRow]) -> Option<MessageStatus> {
    if rows.iter().any(|r| r.status.is_live()) {
        return None;
    }
    if rows.iter().any(|r| r.status == RowStatus::Dead) {
        return Some(MessageStatus::Error);
    }
    if rows.iter().any(|r| r.stage == Stage::Outbound) {
        return Some(MessageStatus::Processed);
    }
    if rows.is_empty() && status == MessageStatus::Routed {
        return Some(MessageStatus::Filtered);
    }
    None
}

/// Apply the verdict to a message.
pub(crate) fn finalize(cx: &mut Db<'_, '_>, id: MessageId) -> Result<(), StoreError> {
    let Some(mut message) = messages::get(cx.txn, id)? else {
        return Ok(());
    };
    let rows = rows::of_message(cx.txn, id)?;
    if let Some(status) = verdict(message.status, &rows) {
        if status != message.status {
            dedupe::set_status(cx, &mut message, status)?;
        }
    }
    Ok(())
}

/// Dead-letter a live row: `dead` with `error` as its `last_error`, event `dead`, its message
/// finalized. The one way a row dies outside MarkFailed's own branch (poison rows, orphans,
/// the depth cap, a lease expiry on the last attempt).
pub(crate) fn dead_letter(
    cx: &mut Db<'_, '_>,
    row: &WorkRow,
    error: &str,
) -> Result<(), StoreError> {
    let event = DeadEvent {
        destination: row.destination_name.as_deref(),
        detail: error.to_string(),
    };
    dead_letter_as(cx, row, error, event)
}

/// The `dead` event of a dead-lettering whose event says something other than the row's
/// `last_error` (messagefoundry's texts: MarkFailed's `attempt N: error`, the re-ingress
/// branches' short details).
pub(crate) struct DeadEvent<'a> {
    pub destination: Option<&'a str>,
    pub detail: String,
}

/// [`dead_letter`] with `error` as the row's `last_error` and `event` as its `dead` event.
pub(crate) fn dead_letter_as(
    cx: &mut Db<'_, '_>,
    row: &WorkRow,
    error: &str,
    event: DeadEvent<'_>,
) -> Result<(), StoreError> {
    rows::finish(cx, row, RowStatus::Dead, Some(error));
    tallies::add_lane(cx, LaneEvent::DeadLettered, &row.lane())?;
    messages::event(
        cx,
        row.message_id,
        crate::model::message::EventKind::Dead,
        event.destination,
        Some(event.detail),
    )?;
    finalize(cx, row.message_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::RowId;

    fn row(stage: Stage, status: RowStatus) -> WorkRow {
        WorkRow {
            id: RowId(1),
            message_id: MessageId(1),
            stage,
            channel_id: "c".into(),
            destination_name: None,
            handler_name: None,
            payload: String::new(),
            status,
            attempts: 0,
            next_attempt_at: 0,
            last_error: None,
            created_at: 0,
            updated_at: 0,
            claim: None,
            last_fence: None,
        }
    }

    #[test]
    fn precedence() {
        use MessageStatus as M;
        use RowStatus as R;
        // 1. anything live: not final, even with a dead sibling.
        let rs = [
            row(Stage::Outbound, R::Dead),
            row(Stage::Outbound, R::Pending),
        ];
        assert_eq!(verdict(M::Routed, &rs), None);
        let rs = [
            row(Stage::Response, R::Inflight),
            row(Stage::Outbound, R::Done),
        ];
        assert_eq!(verdict(M::Routed, &rs), None);
        // 2. dead anywhere: error.
        let rs = [row(Stage::Routed, R::Dead), row(Stage::Outbound, R::Done)];
        assert_eq!(verdict(M::Routed, &rs), Some(M::Error));
        // 3. outbound exists: processed (delivered or cancelled).
        let rs = [
            row(Stage::Outbound, R::Cancelled),
            row(Stage::Outbound, R::Done),
        ];
        assert_eq!(verdict(M::Routed, &rs), Some(M::Processed));
        // 4. no rows and routed: filtered.
        assert_eq!(verdict(M::Routed, &[]), Some(M::Filtered));
        // 5. otherwise unchanged.
        assert_eq!(verdict(M::Unrouted, &[]), None);
        assert_eq!(verdict(M::Received, &[row(Stage::Response, R::Done)]), None);
    }
}
