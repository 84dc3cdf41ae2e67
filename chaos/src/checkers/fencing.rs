//! Fencing: no completion carrying a superseded fence was ever accepted.
//!
//! A fence is the operation id of the claim that handed the row out (its log index, or its slot
//! in a group-commit batch: see [`op_order`]). A completion accepted in the entry at log index
//! `i` with fence `f` is stale if the row was claimed again by some `f'` applied after `f` in an
//! entry before `i`. Also, a row completed for good (`done`, `handoff`) keeps that claim's fence
//! as its last one: a final state whose `last_fence` differs from an accepted `done`'s fence
//! means either a stale completion or a claim after completion.

use super::Verdict;
use crate::final_state::FinalMessage;
use crate::history::{op_order, ClaimRec, Completion, CompletionRec};
use std::collections::HashMap;

pub fn check(
    claims: &[ClaimRec],
    completions: &[CompletionRec],
    messages: &[FinalMessage],
) -> Verdict {
    let mut v = Verdict::new("fencing");
    let mut fences: HashMap<u64, Vec<u64>> = HashMap::new();
    for c in claims {
        fences.entry(c.row).or_default().push(c.fence);
    }
    let rows: HashMap<u64, &crate::final_state::FinalRow> = messages
        .iter()
        .flat_map(|m| m.rows.iter())
        .map(|r| (r.id, r))
        .collect();
    let (mut stale_tries, mut stale_accepted, mut stale_refused) = (0u64, 0u64, 0u64);
    for c in completions {
        v.checked += 1;
        let accepted_index = match c.result {
            Completion::Accepted { index } => Some(index),
            _ => None,
        };
        if c.after_stall {
            stale_tries += 1;
            match &c.result {
                Completion::Accepted { .. } => stale_accepted += 1,
                Completion::Refused(_) | Completion::NoOp => stale_refused += 1,
                Completion::Unknown(_) => {}
            }
        }
        let Some(index) = accepted_index else {
            continue;
        };
        if let Some(i) = index {
            let mine = op_order(c.fence);
            let newer = fences.get(&c.row).and_then(|fs| {
                fs.iter()
                    .copied()
                    .map(op_order)
                    .filter(|o| *o > mine && o.0 < i)
                    .min()
            });
            if let Some(newer) = newer {
                v.fail(format!(
                    "row {}: {} with fence {} accepted at index {i}, but the row was re-claimed at {newer:?}",
                    c.row, c.action, c.fence
                ));
            }
        }
        if c.action == "done" {
            match rows.get(&c.row) {
                None => v.fail(format!("row {}: done accepted but the row is gone", c.row)),
                Some(r) if r.last_fence != Some(c.fence) => v.fail(format!(
                    "row {}: done with fence {} accepted, but the row's last claim is {:?} ({})",
                    c.row, c.fence, r.last_fence, r.status
                )),
                Some(r) if r.status != "done" => v.fail(format!(
                    "row {}: done with fence {} accepted, but the row is {}",
                    c.row, c.fence, r.status
                )),
                Some(_) => {}
            }
        }
    }
    v.notes.push(format!(
        "{stale_tries} completions after a stall past the lease: {stale_accepted} accepted (fence still current), {stale_refused} refused"
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::final_state::FinalRow;

    fn claim(row: u64, fence: u64) -> ClaimRec {
        ClaimRec {
            row,
            message: 1,
            lane: "outbound:d0".into(),
            owner: "w".into(),
            fence,
            invoke: 0,
            at: 0,
            ttl_ms: 2_500,
            node: 1,
        }
    }

    fn completion(row: u64, fence: u64, result: Completion, after_stall: bool) -> CompletionRec {
        CompletionRec {
            row,
            fence,
            action: "done".into(),
            lane: "outbound:d0".into(),
            after_stall,
            invoke: 0,
            complete: 0,
            result,
            node: 1,
        }
    }

    fn final_row(id: u64, last_fence: u64) -> Vec<FinalMessage> {
        vec![FinalMessage {
            id: 1,
            channel: "c0".into(),
            status: "processed".into(),
            idempotency_key: None,
            received_at: 0,
            events: vec![],
            rows: vec![FinalRow {
                id,
                message: 1,
                stage: "outbound".into(),
                lane: "outbound:d0".into(),
                status: "done".into(),
                created_at: 0,
                last_fence: Some(last_fence),
                attempts: 2,
            }],
        }]
    }

    #[test]
    fn a_stale_completion_refused_passes() {
        // Claimed at 10, stalled, re-claimed at 20 and done at 25; the stale done is refused.
        let claims = vec![claim(5, 10), claim(5, 20)];
        let comps = vec![
            completion(5, 20, Completion::Accepted { index: Some(25) }, false),
            completion(5, 10, Completion::Refused("stale_fence".into()), true),
        ];
        let v = check(&claims, &comps, &final_row(5, 20));
        assert!(v.ok(), "{:?}", v.violations);
        assert!(v.notes[0].contains("1 refused"));
    }

    #[test]
    fn a_stale_completion_accepted_fires() {
        let claims = vec![claim(5, 10), claim(5, 20)];
        let comps = vec![completion(
            5,
            10,
            Completion::Accepted { index: Some(30) },
            true,
        )];
        let v = check(&claims, &comps, &final_row(5, 20));
        assert!(
            v.violations
                .iter()
                .any(|s| s.contains("re-claimed at (20, 0)")),
            "{:?}",
            v.violations
        );
        assert!(
            v.violations.iter().any(|s| s.contains("last claim")),
            "{:?}",
            v.violations
        );
    }

    #[test]
    fn a_stale_completion_accepted_is_caught_from_final_state_alone() {
        // The re-claim's answer was lost (not in the history); the final row still tells.
        let comps = vec![completion(
            5,
            10,
            Completion::Accepted { index: None },
            true,
        )];
        let v = check(&[claim(5, 10)], &comps, &final_row(5, 20));
        assert!(!v.ok());
    }

    #[test]
    fn batched_re_claims_are_ordered_by_entry() {
        let b = |index: u64, pos: usize| raftlane_statemachine::wire::command::op_id(index, pos);
        // Claimed at (20, 1), re-claimed at (25, 0), the stale done accepted in entry 30.
        let claims = vec![claim(5, b(20, 0)), claim(5, b(25, 0))];
        let comps = vec![completion(
            5,
            b(20, 0),
            Completion::Accepted { index: Some(30) },
            true,
        )];
        let v = check(&claims, &comps, &final_row(5, b(25, 0)));
        assert!(
            v.violations
                .iter()
                .any(|s| s.contains("re-claimed at (25, 1)")),
            "{:?}",
            v.violations
        );
        // A plain fence numerically below the batch's ids but applied later still counts.
        let claims = vec![claim(5, b(20, 0)), claim(5, 22)];
        let comps = vec![completion(
            5,
            b(20, 0),
            Completion::Accepted { index: Some(30) },
            true,
        )];
        assert!(!check(&claims, &comps, &final_row(5, 22)).ok());
    }

    #[test]
    fn an_unsuperseded_late_completion_is_fine() {
        // Lease expired but nobody re-claimed: the old fence is still the current one.
        let comps = vec![completion(
            5,
            10,
            Completion::Accepted { index: Some(40) },
            true,
        )];
        let v = check(&[claim(5, 10)], &comps, &final_row(5, 10));
        assert!(v.ok(), "{:?}", v.violations);
    }
}
