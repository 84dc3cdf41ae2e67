//! State, reference data, retention purges and record expiry.

use crate::harness::*;

#[test]
fn write_reference_snapshot_replaces_the_whole_set() {
    let mut h = Harness::new();
    let rows = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    };
    let write = |version: u64, r: BTreeMap<String, String>| {
        Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
            name: "codes".into(),
            version: ReferenceVersion::Number(version),
            rows: r,
        })
    };
    assert_eq!(
        h.ok(write(1, rows(&[("a", "1"), ("b", "2")]))),
        Outcome::Count(2)
    );
    h.advance(9);
    assert_eq!(h.ok(write(2, rows(&[("c", "3")]))), Outcome::Count(1));
    assert_eq!(
        h.sm.read().reference("codes").unwrap(),
        Some(ReferenceSnapshot {
            version: 2,
            rows: rows(&[("c", "3")]),
            synced_at: T0 + 9,
            row_count: 1
        })
    );
    assert_eq!(h.sm.read().reference("other").unwrap(), None);
    h.reject(
        Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
            name: String::new(),
            version: ReferenceVersion::Number(3),
            rows: BTreeMap::new(),
        }),
        invalid("name", "must not be empty"),
    );
}

#[test]
fn purge_message_bodies_blanks_ended_messages_and_skips_live_ones() {
    let mut h = Harness::new();
    // m0: delivered with a captured response.
    let done = h.outbound_claimed("orders", "api");
    h.ok(respond(&done, "secret-body", None));
    // m1: still pending.
    let live = h.enqueue_message("orders", &[("api", "p")]);
    // m2: dead-lettered (no live rows, but a dead payload is kept for PurgeDeadLetters).
    let dead = h.enqueue_message("orders", &[("api2", "dead-payload")]);
    h.ok(dead_letter(RowId(2), None, "x"));
    h.advance(10_000);
    // m3: after the cutoff.
    let young = h.outbound_claimed("orders", "api3");
    h.mark_done(&young).unwrap();

    assert_eq!(
        h.ok(Command::PurgeMessageBodies(PurgeMessageBodies {
            older_than: T0 + 5_000
        })),
        Outcome::Count(2)
    );
    let v = h.view(done.message_id);
    assert!(v.message.purged);
    assert_eq!(v.message.raw, "");
    assert_eq!(v.message.summary, None);
    assert_eq!(v.rows[0].payload, "");
    assert!(v.events.iter().all(|e| e.detail.is_none()));
    // received, delivered.
    assert_eq!(v.events.len(), 2);
    assert_eq!(v.responses[0].body, "");
    assert_eq!(v.responses[0].detail, None);
    assert_eq!(v.responses[0].outcome, "200");
    let l = h.view(live);
    assert!(!l.message.purged);
    assert_eq!(l.message.raw, "raw");
    let d = h.view(dead);
    assert!(d.message.purged);
    assert_eq!(d.message.raw, "");
    assert_eq!(d.rows[0].payload, "dead-payload");
    assert!(!h.view(young.message_id).message.purged);
    assert_eq!(h.audit_actions(DEFAULT_ORG), vec!["retention.purge_bodies"]);
    // Already purged: nothing left to do.
    h.no_change(
        Command::PurgeMessageBodies(PurgeMessageBodies {
            older_than: T0 + 5_000,
        }),
        Outcome::Count(0),
    );
}

#[test]
fn purge_dead_letters_blanks_payload_and_error_of_old_dead_outbound_rows() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "old-payload")]);
    h.ok(dead_letter(RowId(0), None, "old-error"));
    h.advance(10_000);
    h.enqueue_message("orders", &[("d", "new-payload")]);
    h.ok(dead_letter(RowId(1), None, "new-error"));
    assert_eq!(
        h.ok(Command::PurgeDeadLetters(PurgeDeadLetters {
            older_than: T0 + 5_000
        })),
        Outcome::Count(1)
    );
    let old = h.row(RowId(0));
    assert_eq!(old.payload, "");
    assert_eq!(old.last_error, None);
    assert_eq!(old.status, RowStatus::Dead);
    let new = h.row(RowId(1));
    assert_eq!(new.payload, "new-payload");
    assert_eq!(new.last_error.as_deref(), Some("new-error"));
    assert_eq!(
        h.audit_actions(DEFAULT_ORG),
        vec!["retention.purge_dead_letters"]
    );
    h.no_change(
        Command::PurgeDeadLetters(PurgeDeadLetters {
            older_than: T0 + 5_000,
        }),
        Outcome::Count(0),
    );
}

#[test]
fn purge_state_deletes_old_entries_and_bumps_touched_namespace_versions() {
    let mut h = Harness::new();
    routed_message(&mut h, "c", &[("h", "p")]);
    let first = h.claim_one(Stage::Routed);
    h.ok(transform(
        &first,
        &[],
        &[("ns1", "old", "1"), ("ns2", "old", "2")],
    ));
    h.advance(10_000);
    routed_message(&mut h, "c", &[("h", "p")]);
    let second = h.claim_one(Stage::Routed);
    h.ok(transform(
        &second,
        &[],
        &[("ns1", "new", "3"), ("ns3", "new", "4")],
    ));
    let r = h.sm.read();
    assert_eq!(
        (
            r.namespace_version("ns1").unwrap(),
            r.namespace_version("ns2").unwrap()
        ),
        (2, 1)
    );
    drop(r);
    assert_eq!(
        h.ok(Command::PurgeState(PurgeState {
            older_than: T0 + 5_000
        })),
        Outcome::Count(2)
    );
    let r = h.sm.read();
    assert_eq!(r.state_entry("ns1", "old").unwrap(), None);
    assert_eq!(r.state_entry("ns2", "old").unwrap(), None);
    assert_eq!(r.state_entry("ns1", "new").unwrap().unwrap().value, "3");
    assert_eq!(r.namespace_version("ns1").unwrap(), 3);
    assert_eq!(r.namespace_version("ns2").unwrap(), 2);
    assert_eq!(r.namespace_version("ns3").unwrap(), 1);
    drop(r);
    assert_eq!(h.audit_actions(DEFAULT_ORG), vec!["retention.purge_state"]);
    h.no_change(
        Command::PurgeState(PurgeState {
            older_than: T0 + 5_000,
        }),
        Outcome::Count(0),
    );
}

#[test]
fn expire_records_drops_decided_approvals_and_marks_pending_ones_expired() {
    let mut h = Harness::new();
    let decided = approval_id(h.ok_as("alice", create_approval("purge", 1_000)));
    h.ok_as("bob", decide(decided, true));
    let pending = approval_id(h.ok_as("alice", create_approval("purge", 1_000)));
    h.advance(999);
    h.no_change(Command::ExpireRecords, Outcome::Count(0));
    h.advance(1);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(2));
    assert_eq!(h.sm.read().approval(decided).unwrap(), None);
    assert_eq!(
        h.sm.read().approval(pending).unwrap().unwrap().status,
        ApprovalStatus::Expired
    );
}

// --- paged retention (RetentionPage, docs/SPEC.md §8.6) ---

mod paged {
    use crate::harness::*;
    use raftlane_statemachine::model::retention::RetentionCursor;
    use raftlane_statemachine::storage::store::Direction;
    use raftlane_statemachine::wire::command::{RetentionPage, RetentionPass, MAX_RETENTION_PAGE};
    use raftlane_statemachine::Millis;

    fn page(pass: RetentionPass, older_than: Millis, limit: u32) -> Command {
        Command::RetentionPage(RetentionPage {
            pass,
            older_than,
            limit,
        })
    }

    /// `(examined, purged, next)` of a page.
    #[track_caller]
    fn run_page(
        h: &mut Harness,
        pass: RetentionPass,
        older_than: Millis,
        limit: u32,
    ) -> (u64, u64, Option<RetentionCursor>) {
        match h.ok(page(pass, older_than, limit)) {
            Outcome::RetentionPaged {
                examined,
                purged,
                next,
            } => (examined, purged, next),
            other => panic!("expected RetentionPaged, got {other:?}"),
        }
    }

    /// Finish the one-time walk over messages from before the index (none in a new state).
    fn index_walk_done(h: &mut Harness) {
        assert_eq!(
            run_page(h, RetentionPass::IndexEnded, 0, 1000),
            (0, 0, None)
        );
    }

    /// A message delivered with a captured response, ended at the current time.
    fn delivered(h: &mut Harness, destination: &str) -> MessageId {
        let row = h.outbound_claimed("orders", destination);
        h.ok(respond(&row, "secret-body", None));
        row.message_id
    }

    /// A message recorded as filtered: born terminal, one command.
    fn filtered(h: &mut Harness) -> MessageId {
        enqueued(h.ok(Command::RecordReceived(RecordReceived {
            channel: "orders".into(),
            raw: "raw".into(),
            fields: MessageFields::default(),
            status: ReceivedStatus::Filtered,
            error: None,
        })))
        .0
    }

    fn count(h: &Harness, table: Table) -> usize {
        h.sm.store()
            .scan(table, &[], None, Direction::Forward)
            .unwrap()
            .count()
    }

    /// Keys of `table` that start with the message id (its events, rows, responses...).
    fn keyed_by(h: &Harness, table: Table, id: MessageId) -> usize {
        h.sm.store()
            .scan(table, &[], None, Direction::Forward)
            .unwrap()
            .filter(|kv| kv.as_ref().unwrap().0.starts_with(&id.to_be_bytes()))
            .count()
    }

    fn gone(h: &Harness, id: MessageId) -> bool {
        h.sm.read().message(id).unwrap().is_none()
    }

    #[test]
    fn blank_pages_are_bounded_and_resume_after_their_cursor() {
        let mut h = Harness::new();
        index_walk_done(&mut h);
        let ids: Vec<MessageId> = (0..5)
            .map(|_| {
                h.advance(10);
                delivered(&mut h, "api")
            })
            .collect();
        h.advance(10_000);
        let cutoff = h.now;
        // Two per page: 2, 2, then a short page that ends the pass.
        let (e, p, next) = run_page(&mut h, RetentionPass::BlankBodies, cutoff, 2);
        assert_eq!((e, p), (2, 2));
        assert_eq!(next.map(|c| c.message_id), Some(ids[1]));
        assert!(h.view(ids[1]).message.purged);
        assert!(!h.view(ids[2]).message.purged);
        let (e, p, next) = run_page(&mut h, RetentionPass::BlankBodies, cutoff, 2);
        assert_eq!((e, p, next.map(|c| c.message_id)), (2, 2, Some(ids[3])));
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankBodies, cutoff, 2),
            (1, 1, None)
        );
        for id in &ids {
            let v = h.view(*id);
            assert!(v.message.purged);
            assert_eq!(v.message.raw, "");
            assert_eq!(v.rows[0].payload, "");
            assert_eq!(v.responses[0].body, "");
            assert!(v.events.iter().all(|e| e.detail.is_none()));
        }
        // A second pass reads nothing it already handled, even with a later cutoff.
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankBodies, cutoff, 2),
            (0, 0, None)
        );
        h.advance(10_000);
        let later = h.now;
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankBodies, later, 1000),
            (0, 0, None)
        );
        // Three pages that blanked something: three audit rows.
        assert_eq!(
            h.audit_actions(DEFAULT_ORG),
            vec!["retention.purge_bodies"; 3]
        );
    }

    #[test]
    fn a_page_never_examines_more_than_the_bound() {
        let mut h = Harness::new();
        index_walk_done(&mut h);
        for _ in 0..(MAX_RETENTION_PAGE + 5) {
            filtered(&mut h);
        }
        h.advance(1);
        let cutoff = h.now;
        let (e, p, next) = run_page(&mut h, RetentionPass::DeleteEnded, cutoff, u32::MAX);
        assert_eq!((e, p), (u64::from(MAX_RETENTION_PAGE), 1000));
        assert!(next.is_some());
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, cutoff, u32::MAX),
            (5, 5, None)
        );
        assert_eq!(count(&h, Table::Messages), 0);
        // A limit of 0 still makes progress (clamped to 1).
        filtered(&mut h);
        h.advance(1);
        let cutoff = h.now;
        let (e, p, next) = run_page(&mut h, RetentionPass::DeleteEnded, cutoff, 0);
        assert_eq!((e, p), (1, 1));
        // A full page (of one) does not know it was the last: it answers a cursor.
        assert!(next.is_some());
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, cutoff, 0),
            (0, 0, None)
        );
    }

    #[test]
    fn delete_removes_ended_messages_with_rows_events_responses_and_index_entries() {
        let mut h = Harness::new();
        index_walk_done(&mut h);
        let done = delivered(&mut h, "api");
        // Live: pending, inflight, and in backoff after a failed attempt.
        let pending = h.enqueue_message("orders", &[("slow", "p")]);
        let inflight = h.outbound_claimed("orders", "busy").message_id;
        let failing = h.outbound_claimed("orders", "flaky");
        h.ok(mark_failed(
            &failing,
            "503",
            retry(None, 60_000, 1000, 60_000),
        ));
        // Failed (a dead letter): its own class.
        let dead = h.enqueue_message("orders", &[("dlq", "dead-payload")]);
        let dead_row = h.view(dead).rows[0].id;
        h.ok(dead_letter(dead_row, None, "poison"));
        h.advance(10_000);
        let young = delivered(&mut h, "api2");
        let cutoff = h.now - 5_000;
        let live_before: Vec<_> = [pending, inflight, failing.message_id]
            .iter()
            .map(|id| h.view(*id))
            .collect();
        let rows_before = count(&h, Table::Rows);

        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, cutoff, 100),
            (1, 1, None)
        );
        assert!(gone(&h, done));
        for table in [
            Table::Messages,
            Table::Events,
            Table::EventCounts,
            Table::MessageRows,
            Table::Responses,
            Table::MessageEnds,
        ] {
            assert_eq!(keyed_by(&h, table, done), 0, "{table:?} still holds {done}");
        }
        assert_eq!(count(&h, Table::Rows), rows_before - 1);
        // Live messages and the young one are untouched; the dead letter waits for its pass.
        let live_after: Vec<_> = [pending, inflight, failing.message_id]
            .iter()
            .map(|id| h.view(*id))
            .collect();
        assert_eq!(live_before, live_after);
        assert!(!h.view(young).message.purged);
        assert_eq!(h.view(dead).rows[0].payload, "dead-payload");
        assert_eq!(
            h.audit_actions(DEFAULT_ORG),
            vec!["retention.delete_messages"]
        );
        // Nothing left before the cutoff: the next pass reads nothing.
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, cutoff, 100),
            (0, 0, None)
        );
        // The dead letter goes with its own pass, its dead row and dead-row index entry too.
        assert_eq!(count(&h, Table::DeadRows), 1);
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteFailed, cutoff, 100),
            (1, 1, None)
        );
        assert!(gone(&h, dead));
        assert_eq!(count(&h, Table::DeadRows), 0);
        assert_eq!(count(&h, Table::EndedMessages), 1); // the young one
    }

    #[test]
    fn a_terminal_message_with_a_live_row_is_not_deleted_and_not_read_again_at_once() {
        let mut h = Harness::new();
        index_walk_done(&mut h);
        // Filtered by its handoff, yet with a delivery still pending.
        let id = h.enqueue("orders", "raw");
        let row = h.claim_one(Stage::Ingress);
        h.ok(handoff(&row, &[("api", "p")], HandoffDisposition::Filtered));
        assert_eq!(h.status(id), MessageStatus::Filtered);
        h.advance(10_000);
        let cutoff = h.now;
        let before = h.view(id);
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, cutoff, 100),
            (1, 0, None)
        );
        assert_eq!(h.view(id), before);
        // Moved to the back of the index: the same cutoff finds nothing.
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, cutoff, 100),
            (0, 0, None)
        );
    }

    #[test]
    fn blank_first_then_delete_later() {
        let mut h = Harness::new();
        index_walk_done(&mut h);
        let id = delivered(&mut h, "api");
        h.advance(1_000);
        // Bodies after 500 ms, messages after an hour.
        let now = h.now;
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankBodies, now - 500, 100),
            (1, 1, None)
        );
        assert_eq!(
            run_page(
                &mut h,
                RetentionPass::DeleteEnded,
                now.saturating_sub(3_600_000),
                100
            ),
            (0, 0, None)
        );
        let v = h.view(id);
        assert!(v.message.purged);
        assert_eq!(v.message.status, MessageStatus::Processed);
        h.advance(3_600_000);
        let now = h.now;
        assert_eq!(
            run_page(
                &mut h,
                RetentionPass::DeleteEnded,
                now.saturating_sub(3_600_000),
                100
            ),
            (1, 1, None)
        );
        assert!(gone(&h, id));
    }

    #[test]
    fn dead_letters_are_blanked_by_their_own_pass() {
        let mut h = Harness::new();
        index_walk_done(&mut h);
        let dead = h.enqueue_message("orders", &[("dlq", "dead-payload")]);
        let row = h.view(dead).rows[0].id;
        h.ok(dead_letter(row, None, "poison"));
        let ok = delivered(&mut h, "api");
        h.advance(1_000);
        let now = h.now;
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankDeadLetters, now, 100),
            (1, 1, None)
        );
        let r = h.row(row);
        assert_eq!((r.payload.as_str(), r.last_error.as_deref()), ("", None));
        assert_eq!(r.status, RowStatus::Dead);
        assert!(!h.view(ok).message.purged);
        // The failed message's bodies are a pass of their own, the dead row stays as it is.
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankFailedBodies, now, 100),
            (1, 1, None)
        );
        assert!(h.view(dead).message.purged);
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankDeadLetters, now, 100),
            (0, 0, None)
        );
    }

    #[test]
    fn a_replay_takes_a_message_out_of_the_index_until_it_ends_again() {
        let mut h = Harness::new();
        index_walk_done(&mut h);
        let id = delivered(&mut h, "api");
        h.advance(1_000);
        h.ok(Command::Replay(Replay { message_id: id }));
        assert_eq!(keyed_by(&h, Table::MessageEnds, id), 0);
        let now = h.now;
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, now, 100),
            (0, 0, None)
        );
        // Ends again: indexed at its new end, so a cutoff before it keeps it.
        let row = h.claim_one(Stage::Outbound);
        h.mark_done(&row).unwrap();
        let ended_at = h.clock();
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, ended_at, 100),
            (0, 0, None)
        );
        h.advance(1);
        let now = h.now;
        assert_eq!(
            run_page(&mut h, RetentionPass::DeleteEnded, now, 100),
            (1, 1, None)
        );
        assert!(gone(&h, id));
    }

    #[test]
    fn messages_ended_before_the_index_existed_are_indexed_once_and_blanking_waits_for_it() {
        let mut h = Harness::new();
        let old: Vec<MessageId> = (0..3).map(|_| delivered(&mut h, "api")).collect();
        let live = h.enqueue_message("orders", &[("slow", "p")]);
        // As a state written before the index: drop its entries.
        let mut batch = WriteBatch::default();
        for table in [Table::EndedMessages, Table::MessageEnds] {
            for kv in
                h.sm.store()
                    .scan(table, &[], None, Direction::Forward)
                    .unwrap()
            {
                batch.delete(table, kv.unwrap().0);
            }
        }
        h.sm.store_mut().write(batch).unwrap();
        h.advance(1_000);
        let now = h.now;
        // Blanking waits until the walk is over (else a late entry could fall behind its cursor).
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankBodies, now, 100),
            (0, 0, None)
        );
        let (e, p, next) = run_page(&mut h, RetentionPass::IndexEnded, 0, 2);
        assert_eq!((e, p), (2, 2));
        assert!(next.is_some());
        // The rest: one more ended message and the live one.
        assert_eq!(
            run_page(&mut h, RetentionPass::IndexEnded, 0, 2),
            (2, 1, None)
        );
        // Done for good: messages made from now on are indexed as they end.
        delivered(&mut h, "api2");
        assert_eq!(
            run_page(&mut h, RetentionPass::IndexEnded, 0, 2),
            (0, 0, None)
        );
        assert_eq!(
            run_page(&mut h, RetentionPass::BlankBodies, now, 100),
            (3, 3, None)
        );
        assert!(old.iter().all(|id| h.view(*id).message.purged));
        assert!(!h.view(live).message.purged);
    }
}
