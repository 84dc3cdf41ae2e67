//! Leases by the wall clock: no row was handed to a second owner while the first owner's lease
//! could still have been running, measured with the chaos runner's own clock (the real time),
//! not with the cluster's.
//!
//! Why a separate checker: the other checkers judge leases by fences and the cluster's clock, so
//! a node whose clock runs fast and drags the cluster's clock ahead with it (before the leader
//! stamped the cluster's time, one forwarded write did) cut a 30 s lease to one second without
//! any of them noticing: the takeover was legal by the cluster's (wrong) clock.
//!
//! The rule. Owner A's claim of a row was sent at `invoke₁` (runner time) with lease `ttl`; the
//! cluster stamped the lease's start no earlier than that, so the lease cannot end before
//! `invoke₁ + ttl` in real time. A claim of the same row by another owner B (a later fence) that
//! was acknowledged at `at₂ < invoke₁ + ttl − tolerance` was granted while A's lease was running,
//! unless A's lease had ended another way first: a completion of A's claim (done, fail,
//! handoff) applied before B's claim. A completion whose outcome or index is unknown may have
//! been applied first, so such a pair is not judged. The tolerance covers how far an honest
//! cluster clock may trail or lead the runner's (the leader's estimate of its peers' clocks is
//! good to half a round trip; the latency fault delays one leg by up to 400 ms).

use super::Verdict;
use crate::history::{op_order, ClaimRec, Completion, CompletionRec};
use std::collections::{BTreeMap, HashMap};

/// How far an honest cluster clock may be from the runner's, in ms.
pub const TOLERANCE_MS: u64 = 1_000;

pub fn check(claims: &[ClaimRec], completions: &[CompletionRec]) -> Verdict {
    let mut v = Verdict::new("leases (wall clock)");
    // Per row, per fence: the owner, the earliest invoke and the latest acknowledgement (a
    // claim repeated under the same owner answers the same fence).
    let mut rows: HashMap<u64, BTreeMap<(u64, u64), Grant>> = HashMap::new();
    for c in claims {
        let g = rows
            .entry(c.row)
            .or_default()
            .entry(op_order(c.fence))
            .or_insert(Grant {
                fence: c.fence,
                owner: c.owner.clone(),
                invoke: c.invoke,
                acked: c.at,
                ttl_ms: c.ttl_ms,
            });
        g.invoke = g.invoke.min(c.invoke);
        g.acked = g.acked.max(c.at);
    }
    // Completions of each (row, fence): when each was applied, if known.
    let mut ended: HashMap<(u64, u64), Vec<Option<u64>>> = HashMap::new();
    for c in completions {
        let applied_at = match &c.result {
            Completion::Accepted { index } => *index,
            Completion::NoOp => None,
            Completion::Unknown(_) => None,
            // Refused: it changed nothing, the lease did not end with it.
            Completion::Refused(_) => continue,
        };
        ended.entry((c.row, c.fence)).or_default().push(applied_at);
    }
    let mut judged = 0u64;
    for (row, grants) in &rows {
        let grants: Vec<&Grant> = grants.values().collect();
        for pair in grants.windows(2) {
            let (first, second) = (pair[0], pair[1]);
            v.checked += 1;
            if first.owner == second.owner {
                continue;
            }
            // Did the first lease end by a completion before the second claim was applied?
            let second_index = op_order(second.fence).0;
            match ended.get(&(*row, first.fence)) {
                Some(ends) if ends.iter().any(|e| e.is_none_or(|i| i <= second_index)) => {
                    continue;
                }
                _ => {}
            }
            judged += 1;
            let lease_end_us = first
                .invoke
                .saturating_add(first.ttl_ms.saturating_mul(1000));
            let slack_us = TOLERANCE_MS * 1000;
            if second.acked.saturating_add(slack_us) < lease_end_us {
                v.fail(format!(
                    "row {row}: {} was granted fence {} (acknowledged at {:.3} s) while {}'s lease \
                     (fence {}, claimed at {:.3} s for {} ms) still had {} ms to run by the wall clock",
                    second.owner,
                    second.fence,
                    second.acked as f64 / 1e6,
                    first.owner,
                    first.fence,
                    first.invoke as f64 / 1e6,
                    first.ttl_ms,
                    (lease_end_us - second.acked) / 1000
                ));
            }
        }
    }
    v.notes.push(format!(
        "{judged} takeovers by another owner without a completion first, each after the lease \
         had run out by the wall clock (tolerance {TOLERANCE_MS} ms)"
    ));
    v
}

/// One fence of a row, as the workers saw it.
struct Grant {
    fence: u64,
    owner: String,
    invoke: u64,
    acked: u64,
    ttl_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(row: u64, fence: u64, owner: &str, invoke_ms: u64, at_ms: u64) -> ClaimRec {
        ClaimRec {
            row,
            message: row,
            lane: "outbound:d0".into(),
            owner: owner.into(),
            fence,
            invoke: invoke_ms * 1000,
            at: at_ms * 1000,
            ttl_ms: 30_000,
            node: 1,
        }
    }

    fn completion(row: u64, fence: u64, result: Completion) -> CompletionRec {
        CompletionRec {
            row,
            fence,
            action: "done".into(),
            lane: "outbound:d0".into(),
            after_stall: false,
            invoke: 0,
            complete: 0,
            result,
            node: 1,
        }
    }

    #[test]
    fn a_takeover_one_second_into_a_30_s_lease_is_caught() {
        // The reproduction: a follower 60 s fast moved the cluster's clock, and worker b took
        // the head 1 s into worker a's 30 s lease.
        let claims = [
            claim(7, 10, "a", 1_000, 1_010),
            claim(7, 20, "b", 2_000, 2_010),
        ];
        let v = check(&claims, &[]);
        assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
        assert!(v.violations[0].contains("row 7"), "{}", v.violations[0]);
    }

    #[test]
    fn a_takeover_after_the_lease_ran_out_is_fine() {
        let claims = [
            claim(7, 10, "a", 1_000, 1_010),
            claim(7, 20, "b", 31_500, 31_510),
        ];
        assert!(check(&claims, &[]).ok());
        // Within the tolerance of the lease's end: fine too.
        let claims = [
            claim(7, 10, "a", 1_000, 1_010),
            claim(7, 20, "b", 30_200, 30_300),
        ];
        assert!(check(&claims, &[]).ok());
    }

    #[test]
    fn a_lease_ended_by_a_completion_or_held_by_the_same_owner_is_fine() {
        let claims = [
            claim(7, 10, "a", 1_000, 1_010),
            claim(7, 20, "b", 2_000, 2_010),
        ];
        // a failed its row (applied at index 15, before b's claim at 20): a's lease ended.
        let fail = [completion(7, 10, Completion::Accepted { index: Some(15) })];
        assert!(check(&claims, &fail).ok());
        // An unanswered completion may have been applied first: not judged.
        let unknown = [completion(7, 10, Completion::Unknown("timeout".into()))];
        assert!(check(&claims, &unknown).ok());
        // A refused one ended nothing.
        let refused = [completion(7, 10, Completion::Refused("stale_fence".into()))];
        assert!(!check(&claims, &refused).ok());
        // A completion applied after b's claim did not end a's lease in time.
        let late = [completion(7, 10, Completion::Accepted { index: Some(25) })];
        assert!(!check(&claims, &late).ok());
        // The same owner claiming again is its own lease.
        let same = [
            claim(7, 10, "a", 1_000, 1_010),
            claim(7, 20, "a", 2_000, 2_010),
        ];
        assert!(check(&same, &[]).ok());
    }
}
