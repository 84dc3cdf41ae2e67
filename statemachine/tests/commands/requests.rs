//! Batches (group commit) and request ids: exactly-once retries of a request.

use crate::harness::*;

// ---------------------------------------------------------------------------------------------
// Group commit
// ---------------------------------------------------------------------------------------------

#[test]
fn a_batch_applies_each_envelope_alone_with_unique_fences() {
    use raftlane_statemachine::wire::command::op_id;
    use raftlane_statemachine::Envelope;
    let mut h = Harness::new();
    let e = |cmd: Command| Envelope::new(T0, "producer", cmd);
    let index = h.next_index();
    let out = h.ok(Command::Batch(Batch {
        commands: vec![
            e(enqueue_cmd("orders", "a", Some("k"))),
            e(enqueue_cmd("orders", "a again", Some("k"))),
            // Rejected on its own; the others still apply.
            e(Command::MarkDone(MarkDone {
                row_id: RowId(99),
                fence: Fence(1),
            })),
            e(claim_ready_cmd(Stage::Ingress, 1, "w", 10_000)),
            e(Command::Batch(Batch { commands: vec![] })),
        ],
    }));
    let Outcome::Batch(responses) = out else {
        panic!("a batch outcome, got {out:?}")
    };
    assert_eq!(responses.len(), 5);
    let (first, dup) = (
        enqueued(responses[0].clone().unwrap()),
        enqueued(responses[1].clone().unwrap()),
    );
    assert_eq!(first.0, dup.0);
    assert!(dup.1, "the second enqueue is a duplicate of the first");
    assert_eq!(responses[2], Err(Rejection::UnknownRow(RowId(99))));
    match &responses[3] {
        Ok(Outcome::Claimed(rows)) => {
            assert_eq!(rows.len(), 1);
            // The claim's fence is its operation id, not the bare log index.
            assert_eq!(rows[0].fence, Fence(op_id(index, 3)));
            // And it completes like any other claim, by the principal that claimed it.
            let done = Command::MarkDone(MarkDone {
                row_id: rows[0].row_id,
                fence: rows[0].fence,
            });
            assert_eq!(h.run_as("producer", done), Ok(Outcome::Done));
        }
        other => panic!("a claim, got {other:?}"),
    }
    assert!(
        matches!(responses[4], Err(Rejection::Invalid { .. })),
        "no nested batches"
    );
}

#[test]
fn op_ids_never_collide_with_log_indexes_and_stay_exact_in_json() {
    use raftlane_statemachine::wire::command::{op_id, BATCH_OP_BASE, MAX_BATCH};
    assert!(op_id(1, 0) > 1 << 40);
    assert!(op_id(1 << 39, MAX_BATCH - 1) < (1u64 << 53));
    assert_eq!(op_id(7, 1) - op_id(7, 0), 1);
    assert!(op_id(8, 0) > op_id(7, MAX_BATCH - 1));
    assert_eq!(op_id(0, 0), BATCH_OP_BASE);
}

// ---------------------------------------------------------------------------------------------
// Request ids: exactly-once retries
// ---------------------------------------------------------------------------------------------

#[test]
fn a_retried_request_gets_its_first_answer_and_changes_nothing() {
    let mut h = Harness::new();
    h.enqueue_message("orders", &[("d", "p0"), ("d", "p1")]);
    let first_index = h.next_index();
    let first = h.run_request("w", "r-1", fifo_cmd(Stage::Outbound, "d", "w", 1_000));
    let Ok(Outcome::FifoClaimed(Ok(claimed))) = &first else {
        panic!("claim: {first:?}");
    };
    assert_eq!(claimed.row_id, RowId(0));
    h.advance(10);
    let before = h.digest();
    let again = h.run_request("w", "r-1", fifo_cmd(Stage::Outbound, "d", "w", 1_000));
    assert_eq!(
        again,
        Ok(Outcome::Repeated {
            index: first_index,
            response: Box::new(first.clone()),
        })
    );
    assert_eq!(h.digest(), before, "a repeat changes nothing");
    // A new request id is a new claim (here: the same owner gets its own row back).
    let other = h.run_request("w", "r-2", fifo_cmd(Stage::Outbound, "d", "w", 1_000));
    assert!(matches!(other, Ok(Outcome::FifoClaimed(Ok(ref c))) if c.row_id == RowId(0)));
}

#[test]
fn a_rejection_is_not_remembered_and_ids_are_per_actor() {
    let mut h = Harness::new();
    let before = h.digest();
    let first = h.run_request("a", "r", enqueue_cmd("", "x", None));
    assert!(first.is_err());
    assert_eq!(
        h.digest(),
        before,
        "bad input changes nothing, not even a record"
    );
    // Its retry (here with the input fixed) is judged again.
    let again = h.run_request("a", "r", enqueue_cmd("c", "x", None));
    assert!(matches!(again, Ok(Outcome::Enqueued { .. })), "{again:?}");
    // The same id under another principal is another request.
    let theirs = h.run_request("b", "r", enqueue_cmd("c", "x", None));
    assert!(matches!(theirs, Ok(Outcome::Enqueued { .. })));
    let ours = h.run_request("a", "r", enqueue_cmd("c", "x", None));
    assert!(matches!(ours, Ok(Outcome::Repeated { .. })));
}

#[test]
fn remembered_answers_expire_with_expire_records() {
    use raftlane_statemachine::apply::request::REQUEST_TTL_MS;
    let mut h = Harness::new();
    h.run_request("a", "r", enqueue_cmd("c", "x", None))
        .expect("enqueued");
    h.advance(REQUEST_TTL_MS);
    assert_eq!(
        h.ok(Command::ExpireRecords),
        Outcome::Count(0),
        "still inside the window"
    );
    h.advance(1);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(1));
    let after = h.run_request("a", "r", enqueue_cmd("c", "x", None));
    assert!(
        matches!(after, Ok(Outcome::Enqueued { .. })),
        "applied anew: {after:?}"
    );
}

#[test]
fn an_invalid_request_id_is_rejected_and_changes_nothing() {
    let mut h = Harness::new();
    let before = h.digest();
    for id in ["", "a b", &"x".repeat(65)] {
        let r = h.run_request("a", id, enqueue_cmd("c", "x", None));
        assert_eq!(
            r,
            Err(invalid(
                "request_id",
                "must be 1 to 64 visible ASCII characters"
            ))
        );
    }
    assert_eq!(h.digest(), before);
}

/// A batched write runs under its operation id (its fences), but a repeat of it reports the log
/// index of the entry that applied it: clients order completions by that index.
#[test]
fn a_repeat_of_a_batched_request_reports_the_entry_index() {
    use raftlane_statemachine::Envelope;
    let mut h = Harness::new();
    let index = h.next_index();
    let batched = Envelope::new(T0, "p", enqueue_cmd("orders", "a", None)).with_request_id("r");
    let out = h.ok(Command::Batch(Batch {
        commands: vec![batched.clone()],
    }));
    let Outcome::Batch(responses) = out else {
        panic!("a batch outcome, got {out:?}")
    };
    let again = h.run_request("p", "r", enqueue_cmd("orders", "a", None));
    assert_eq!(
        again,
        Ok(Outcome::Repeated {
            index,
            response: Box::new(responses[0].clone()),
        })
    );
}

// ---------------------------------------------------------------------------------------------
// Request ids bound to their request (docs/SPEC.md §10.5)
// ---------------------------------------------------------------------------------------------

/// Before: a request id reused for another request was answered the first request's outcome
/// (the second message silently dropped, or another route's answer handed back).
#[test]
fn a_request_id_reused_for_another_request_is_refused_and_changes_nothing() {
    let mut h = Harness::new();
    let first_index = h.next_index();
    let first = h.run_request("p", "r-1/0", bound(1, enqueue_cmd("orders", "first", None)));
    assert!(matches!(first, Ok(Outcome::Enqueued { .. })), "{first:?}");
    let before = h.digest();

    // Another body (another fingerprint) under the same id: refused, the message not dropped
    // silently, and nothing changes.
    let reused = h.run_request(
        "p",
        "r-1/0",
        bound(2, enqueue_cmd("orders", "second", None)),
    );
    assert_eq!(
        reused,
        Err(Rejection::RequestIdReused {
            request_id: "r-1/0".into()
        })
    );
    assert_eq!(reused.clone().unwrap_err().code(), "request_id_reused");
    // Another command altogether (another route): refused too, never the first answer.
    let other_route = h.run_request("p", "r-1/0", bound(3, Command::ExpireRecords));
    assert_eq!(other_route, reused);
    // A proposer that sent no fingerprint does not get a bound answer either.
    let unbound = h.run_request("p", "r-1/0", enqueue_cmd("orders", "first", None));
    assert_eq!(unbound, reused);
    assert_eq!(h.digest(), before, "a refused reuse changes nothing");

    // The same request again (same fingerprint) still gets its first answer.
    let retry = h.run_request("p", "r-1/0", bound(1, enqueue_cmd("orders", "first", None)));
    assert_eq!(
        retry,
        Ok(Outcome::Repeated {
            index: first_index,
            response: Box::new(first),
        })
    );
    assert_eq!(h.digest(), before);
}

/// The fingerprint is the request's, not the command's: a retry whose command differs in what
/// the proposer stamps (time, a test client's time, sealed values) is the same request.
#[test]
fn a_retry_is_judged_by_its_fingerprint_also_under_a_client_time() {
    let mut h = Harness::new();
    let at = at_client_time;
    let first = h.run_request("p", "r", at(5_000, bound(7, enqueue_cmd("c", "x", None))));
    assert!(matches!(first, Ok(Outcome::Enqueued { .. })), "{first:?}");
    h.advance(50);
    let retry = h.run_request("p", "r", at(9_000, bound(7, enqueue_cmd("c", "x", None))));
    assert!(matches!(retry, Ok(Outcome::Repeated { .. })), "{retry:?}");
    let reused = h.run_request("p", "r", at(5_000, bound(8, enqueue_cmd("c", "x", None))));
    assert!(
        matches!(reused, Err(Rejection::RequestIdReused { .. })),
        "{reused:?}"
    );
}

#[test]
fn a_bound_answer_expires_with_its_fingerprint_and_the_id_is_free_again() {
    use raftlane_statemachine::apply::request::REQUEST_TTL_MS;
    use raftlane_statemachine::storage::store::Direction;
    let mut h = Harness::new();
    h.run_request("p", "r", bound(1, enqueue_cmd("c", "x", None)))
        .expect("enqueued");
    let fingerprints = |h: &Harness| {
        h.sm.store()
            .scan(Table::RequestFingerprints, &[], None, Direction::Forward)
            .expect("scan")
            .count()
    };
    assert_eq!(fingerprints(&h), 1);
    h.advance(REQUEST_TTL_MS + 1);
    assert_eq!(h.ok(Command::ExpireRecords), Outcome::Count(1));
    assert_eq!(fingerprints(&h), 0, "the fingerprint went with its record");
    let after = h.run_request("p", "r", bound(2, enqueue_cmd("c", "y", None)));
    assert!(matches!(after, Ok(Outcome::Enqueued { .. })), "{after:?}");
}

// ---------------------------------------------------------------------------------------------
// Random tokens (docs/SPEC.md §9.1)
// ---------------------------------------------------------------------------------------------

fn issue(name: &str, hash: &str, nonce: &str) -> Command {
    use raftlane_statemachine::wire::command::IssueToken;
    Command::IssueToken(IssueToken {
        principal: PutPrincipal {
            name: name.into(),
            token_hash: hash.into(),
            role: Role::Viewer,
            channels: None,
        },
        nonce: nonce.into(),
    })
}

/// The finding: re-creating a revoked principal with a reused Request-Id after the window gave
/// back the same token. A token issued anew stores the new request's hash, and a retry inside
/// the window is answered the first nonce (from which the API re-derives the first token).
#[test]
fn an_issued_token_answers_its_nonce_and_a_reuse_after_the_window_issues_anew() {
    use raftlane_statemachine::apply::request::REQUEST_TTL_MS;
    let mut h = Harness::new();
    let holder = |h: &Harness, hash: &str| {
        h.sm.read()
            .principal_by_token_hash(hash)
            .expect("read")
            .map(|p| p.name)
    };
    let first = h.run_request(
        "admin",
        "mint/0",
        bound(1, issue("alice", &token_hash('a'), "n1")),
    );
    assert_eq!(first, Ok(Outcome::TokenIssued { nonce: "n1".into() }));
    assert_eq!(holder(&h, &token_hash('a')).as_deref(), Some("alice"));
    // A retry (its proposer drew another nonce and hash) is answered the first nonce and
    // changes nothing: the stored token is still the first one.
    let retry = h.run_request(
        "admin",
        "mint/0",
        bound(1, issue("alice", &token_hash('b'), "n2")),
    );
    let Ok(Outcome::Repeated { response, .. }) = retry else {
        panic!("a repeat: {retry:?}")
    };
    assert_eq!(*response, first);
    assert_eq!(holder(&h, &token_hash('b')), None);

    // Revoked, then re-created with the same Request-Id after the window: a new token.
    h.ok_as(
        "admin",
        Command::RevokePrincipal(RevokePrincipal {
            name: "alice".into(),
        }),
    );
    h.advance(REQUEST_TTL_MS + 1);
    h.ok(Command::ExpireRecords);
    let again = h.run_request(
        "admin",
        "mint/0",
        bound(1, issue("alice", &token_hash('c'), "n3")),
    );
    assert_eq!(again, Ok(Outcome::TokenIssued { nonce: "n3".into() }));
    assert_eq!(
        holder(&h, &token_hash('a')),
        None,
        "the old token stays refused"
    );
    assert_eq!(holder(&h, &token_hash('c')).as_deref(), Some("alice"));
}

#[test]
fn an_issued_token_checks_its_nonce_and_principal() {
    let mut h = Harness::new();
    h.reject(
        issue("alice", &token_hash('a'), "not hex!"),
        invalid("nonce", "must be at most 64 ASCII letters or digits"),
    );
    h.reject(
        issue("alice", &token_hash('a'), &"a".repeat(65)),
        invalid("nonce", "must be at most 64 ASCII letters or digits"),
    );
    h.reject(
        issue("alice", "short", "n1"),
        invalid("token_hash", "must be 64 lowercase hex digits (SHA-256)"),
    );
}
