#![allow(dead_code)] // shares cmd_support with tests/commands/, which uses all of it
//! A message's events are numbered from its count in `Table::EventCounts` (a point read); a
//! message stored without a count (before that table existed) is numbered after its last event.
//! Either way a new event never overwrites an earlier one.

mod cmd_support;

use cmd_support::*;
use raftlane_statemachine::model::message::EventKind;
use raftlane_statemachine::storage::store::WriteBatch;
use raftlane_statemachine::{wire::codec, MessageId, Outcome, Store, Table};

fn stored_count(h: &Harness, id: MessageId) -> Option<u64> {
    h.sm.store()
        .get(Table::EventCounts, &id.to_be_bytes())
        .expect("read")
        .map(|bytes| codec::decode::<u64>(&bytes).expect("a count"))
}

#[test]
fn the_count_follows_every_event() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("lab", "ehr");
    let before = h.event_kinds(row.message_id);
    assert_eq!(stored_count(&h, row.message_id), Some(before.len() as u64));
    assert!(matches!(h.mark_done(&row), Ok(Outcome::Done)));
    let after = h.event_kinds(row.message_id);
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last(), Some(&EventKind::Delivered));
    assert_eq!(stored_count(&h, row.message_id), Some(after.len() as u64));
}

#[test]
fn a_message_without_a_count_is_numbered_after_its_last_event() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("lab", "ehr");
    let before = h.event_kinds(row.message_id);
    assert!(!before.is_empty(), "{before:?}");
    let mut batch = WriteBatch::default();
    batch.delete(Table::EventCounts, row.message_id.to_be_bytes().to_vec());
    h.sm.store_mut().write(batch).expect("drop the count");
    assert_eq!(stored_count(&h, row.message_id), None);

    assert!(matches!(h.mark_done(&row), Ok(Outcome::Done)));
    let mut expected = before.clone();
    expected.push(EventKind::Delivered);
    assert_eq!(
        h.event_kinds(row.message_id),
        expected,
        "nothing overwritten"
    );
    assert_eq!(
        stored_count(&h, row.message_id),
        Some(expected.len() as u64)
    );
}
