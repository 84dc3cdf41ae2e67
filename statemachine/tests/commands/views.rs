//! RecordView: the `viewed` event on a message whose body someone opened.

use crate::harness::*;
use raftlane_statemachine::wire::command::RecordView;

fn view(id: MessageId, viewer: Option<&str>) -> Command {
    Command::RecordView(RecordView {
        message_id: id,
        viewer: viewer.map(Into::into),
    })
}

#[test]
fn a_view_appends_the_viewed_event_with_the_viewer_and_changes_nothing_else() {
    let mut h = Harness::new();
    let id = h.enqueue_message("IB", &[("OB1", "p")]);
    let status = h.status(id);
    let audit_before = h.audit(DEFAULT_ORG).len();
    h.advance(50);
    assert_eq!(h.ok(view(id, Some("alice"))), Outcome::Done);
    assert_eq!(h.ok(view(id, None)), Outcome::Done);
    let events = h.view(id).events;
    let viewed: Vec<_> = events
        .iter()
        .filter(|e| e.event == EventKind::Viewed)
        .map(|e| (e.ts, e.destination.clone(), e.detail.clone()))
        .collect();
    assert_eq!(
        viewed,
        vec![
            (T0 + 50, None, Some("alice".to_string())),
            (T0 + 50, None, None)
        ]
    );
    assert_eq!(events.last().map(|e| e.event), Some(EventKind::Viewed));
    assert_eq!(h.status(id), status);
    assert_eq!(h.audit(DEFAULT_ORG).len(), audit_before);
    // Later events are numbered after the views.
    let row = h.claim_one(Stage::Outbound);
    assert_eq!(h.mark_done(&row), Ok(Outcome::Done));
    assert_eq!(
        h.event_kinds(id).last().copied(),
        Some(EventKind::Delivered)
    );
}

#[test]
fn viewing_an_unknown_message_is_not_found() {
    let mut h = Harness::new();
    h.reject(
        view(MessageId(7), Some("alice")),
        Rejection::UnknownMessage(MessageId(7)),
    );
    assert_eq!(view(MessageId(0), None).name(), "record_view");
}
