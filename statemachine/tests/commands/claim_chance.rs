//! `ClaimChance`: when a claim could next hand out a row, read without a write, for claims that
//! wait for work (docs/SPEC.md §4.7a). Each answer is checked against what the claim then does.

use crate::harness::*;
use raftlane_statemachine::row::ClaimChance;
use raftlane_statemachine::Millis;

fn ready(h: &Harness, t: Millis) -> ClaimChance {
    h.sm.read()
        .ready_claim_chance(Stage::Outbound, t, None, None, 256)
        .expect("read")
}

fn lane(h: &Harness, owner: &str, t: Millis) -> ClaimChance {
    h.sm.read()
        .fifo_claim_chance(Stage::Outbound, "d", owner, Some(owner), t)
        .expect("read")
}

#[test]
fn a_claims_chance_follows_what_the_claim_does() {
    let mut h = Harness::new();
    // Nothing anywhere: only a write can change that.
    assert_eq!(ready(&h, T0), ClaimChance::OnChange);
    assert_eq!(lane(&h, "a", T0), ClaimChance::OnChange);

    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let t = h.clock();
    assert_eq!(ready(&h, t), ClaimChance::Now);
    assert_eq!(lane(&h, "a", t), ClaimChance::Now);
    let head = h.fifo(Stage::Outbound, "d", "a", 10_000).expect("head");

    // Held by "a": another owner's chance is the first ms past the lease; "a" gets its row back.
    let after_lease = head.lease_expires_at + 1;
    assert_eq!(lane(&h, "b", t), ClaimChance::At(after_lease));
    assert_eq!(
        h.fifo(Stage::Outbound, "d", "b", 10_000)
            .map(|r| r.row_id)
            .ok(),
        None
    );
    assert_eq!(lane(&h, "a", t), ClaimChance::Now);
    // Past the lease the stranded head is taken back by the claim: a chance now.
    assert_eq!(lane(&h, "b", after_lease), ClaimChance::Now);

    // The head backs off for 1 s: the lane waits for it; the unordered claim takes p1 first.
    h.ok(mark_failed(&head, "later", retry_1s()));
    let t = h.clock();
    let due = h.row(head.row_id).next_attempt_at;
    assert!(due > t);
    assert_eq!(lane(&h, "a", t), ClaimChance::At(due));
    assert_eq!(ready(&h, t), ClaimChance::Now);
    let taken = h.claim_ready(Stage::Outbound, 5, "w", 10_000);
    assert_eq!(taken.len(), 1);
    assert_ne!(taken[0].row_id, head.row_id);
    assert_eq!(ready(&h, t), ClaimChance::At(due));
    // At `due` both claims can take it.
    assert_eq!(ready(&h, due), ClaimChance::Now);
    h.advance(due - h.now);
    assert_eq!(h.claim_ready(Stage::Outbound, 5, "w", 10_000).len(), 1);
}

#[test]
fn a_ready_claims_chance_that_cannot_be_told_cheaply_is_unknown() {
    let mut h = Harness::new();
    for i in 0..3 {
        h.enqueue_message("orders", &[("d", &format!("p{i}"))]);
    }
    let t = h.clock();
    let r = h.sm.read();
    // Three due rows, none of the filtered destination's: past a budget of two, only the
    // claim can tell.
    assert_eq!(
        r.ready_claim_chance(Stage::Outbound, t, None, Some("elsewhere"), 2)
            .expect("read"),
        ClaimChance::Unknown
    );
    assert_eq!(
        r.ready_claim_chance(Stage::Outbound, t, None, Some("elsewhere"), 10)
            .expect("read"),
        ClaimChance::OnChange
    );
}
