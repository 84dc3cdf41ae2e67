//! Per-lane FIFO on the outbound lanes.
//!
//! A lane's order is `(created_at, row id)` (the row id is the global insertion seq). Apply
//! order of claims is their fence decoded by [`op_order`] (log index, position in a batch);
//! a completion's answer carries only its entry's log index, so two operations in one entry
//! whose positions are not both known are not ordered against each other. Checked:
//! 1. *final claims in order*: a row is claimed for the last time (the claim that completed it)
//!    only after every older row of its lane was, so the rows' `last_fence` (the log index of
//!    their last claim) increase along the lane;
//! 2. *completions in order*: acknowledged `done`s of a lane, sorted by their log index, follow
//!    the lane order;
//! 3. *no overtaking*: no row was claimed (any acknowledged claim) while an older row of its lane
//!    was unfinished — every older row's completion index (or, when its `done` went unanswered,
//!    its last claim) precedes the claim.

use super::Verdict;
use crate::final_state::{FinalMessage, FinalRow};
use crate::history::{op_order, ClaimRec, Completion, CompletionRec};
use std::collections::{BTreeMap, HashMap};

fn lanes(messages: &[FinalMessage]) -> BTreeMap<&str, Vec<&FinalRow>> {
    let mut lanes: BTreeMap<&str, Vec<&FinalRow>> = BTreeMap::new();
    for m in messages {
        for r in &m.rows {
            if r.stage == "outbound" {
                lanes.entry(r.lane.as_str()).or_default().push(r);
            }
        }
    }
    for rows in lanes.values_mut() {
        rows.sort_by_key(|r| (r.created_at, r.id));
    }
    lanes
}

/// Log index of each acknowledged `done`, by row.
fn done_index(completions: &[CompletionRec]) -> HashMap<u64, u64> {
    completions
        .iter()
        .filter(|c| c.action == "done")
        .filter_map(|c| match c.result {
            Completion::Accepted { index: Some(i) } => Some((c.row, i)),
            _ => None,
        })
        .collect()
}

/// What the records say about a row, for violation messages.
fn describe(row: &FinalRow, claims: &[&ClaimRec], completions: &[CompletionRec]) -> String {
    let cl: Vec<String> = claims
        .iter()
        .filter(|c| c.row == row.id)
        .map(|c| format!("{:?} by {} via node {}", op_order(c.fence), c.owner, c.node))
        .collect();
    let co: Vec<String> = completions
        .iter()
        .filter(|c| c.row == row.id)
        .map(|c| format!("{} {:?} with {:?}", c.action, c.result, op_order(c.fence)))
        .collect();
    format!(
        "row {}: {} attempts, {} acknowledged claims [{}], completions [{}]",
        row.id,
        row.attempts,
        cl.len(),
        cl.join("; "),
        co.join("; ")
    )
}

/// When an older row finished, as far as the records tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finish {
    /// Its `done` was applied in the entry at this log index.
    Done(u64),
    /// Its `done` went unanswered: it was last claimed at this (index, position).
    Claimed((u64, u64)),
    /// Never claimed.
    Never,
}

impl Finish {
    fn key(&self) -> (u64, u64) {
        match self {
            Finish::Done(i) => (*i, u64::MAX),
            Finish::Claimed(o) => *o,
            Finish::Never => (u64::MAX, u64::MAX),
        }
    }
}

pub fn check(
    messages: &[FinalMessage],
    claims: &[ClaimRec],
    completions: &[CompletionRec],
) -> Verdict {
    let mut v = Verdict::new("lane-fifo");
    let lanes = lanes(messages);
    let done = done_index(completions);
    let mut claims_by_lane: BTreeMap<&str, Vec<&ClaimRec>> = BTreeMap::new();
    for c in claims.iter().filter(|c| c.lane.starts_with("outbound:")) {
        claims_by_lane.entry(c.lane.as_str()).or_default().push(c);
    }
    for (lane, rows) in &lanes {
        v.checked += rows.len() as u64;
        // 1. last claims in lane order.
        let mut newest: Option<((u64, u64), u64)> = None; // (order, row) of the latest last claim so far
        for r in rows {
            let Some(f) = r.last_fence.map(op_order) else {
                continue;
            };
            if let Some((nf, nr)) = newest {
                if f < nf {
                    v.fail(format!("{lane}: row {nr} was last claimed at {nf:?}, after the newer row {} ({f:?})", r.id));
                }
            }
            if newest.is_none_or(|(nf, _)| f > nf) {
                newest = Some((f, r.id));
            }
        }
        // 2. acknowledged completions in lane order.
        let mut by_index: Vec<(u64, usize, u64)> = rows
            .iter()
            .enumerate()
            .filter_map(|(pos, r)| done.get(&r.id).map(|i| (*i, pos, r.id)))
            .collect();
        by_index.sort();
        for w in by_index.windows(2) {
            if w[1].1 < w[0].1 && w[1].0 > w[0].0 {
                v.fail(format!(
                    "{lane}: row {} was completed (index {}) after the newer row {} (index {})",
                    w[1].2, w[1].0, w[0].2, w[0].0
                ));
            }
        }
        // 3. no claim past an unfinished older row.
        let position: HashMap<u64, usize> =
            rows.iter().enumerate().map(|(p, r)| (r.id, p)).collect();
        // prefix[p] = the latest finishing point among rows older than position p, that row.
        // A known `done` index finishes a row at (index, unknown position): it only orders
        // against a claim in another entry. Otherwise the row's last claim bounds it.
        let mut prefix: Vec<Option<(Finish, u64)>> = Vec::with_capacity(rows.len());
        let mut acc: Option<(Finish, u64)> = None;
        for r in rows {
            prefix.push(acc);
            let finished = match (done.get(&r.id), r.last_fence) {
                (Some(i), _) => Finish::Done(*i),
                (None, Some(f)) => Finish::Claimed(op_order(f)),
                (None, None) => Finish::Never,
            };
            if acc.is_none_or(|(a, _)| finished.key() > a.key()) {
                acc = Some((finished, r.id));
            }
        }
        for c in claims_by_lane.get(lane).map(Vec::as_slice).unwrap_or(&[]) {
            let Some(p) = position.get(&c.row) else {
                v.fail(format!(
                    "{lane}: claimed row {} does not exist after healing",
                    c.row
                ));
                continue;
            };
            if let Some(Some((finished, older))) = prefix.get(*p) {
                let claimed = op_order(c.fence);
                let overtaken = match finished {
                    Finish::Done(i) => *i > claimed.0,
                    Finish::Claimed(o) => *o > claimed,
                    Finish::Never => true,
                };
                if overtaken {
                    let lane_claims = claims_by_lane.get(lane).map(Vec::as_slice).unwrap_or(&[]);
                    let detail = [*older, c.row]
                        .iter()
                        .filter_map(|id| position.get(id).and_then(|p| rows.get(*p)))
                        .map(|r| describe(r, lane_claims, completions))
                        .collect::<Vec<_>>()
                        .join(" | ");
                    v.fail(format!(
                        "{lane}: row {} was claimed at {claimed:?} while the older row {older} was unfinished (finished {finished:?}) -- {detail}",
                        c.row
                    ));
                }
            }
        }
    }
    v.notes.push(format!(
        "{} outbound lanes, {} acknowledged dones with an index",
        lanes.len(),
        done.len()
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u64, created_at: u64, last_fence: Option<u64>) -> FinalRow {
        FinalRow {
            id,
            message: id,
            stage: "outbound".into(),
            lane: "outbound:d0".into(),
            status: "done".into(),
            created_at,
            last_fence,
            attempts: 1,
        }
    }

    fn message(rows: Vec<FinalRow>) -> FinalMessage {
        FinalMessage {
            id: 1,
            channel: "c0".into(),
            status: "processed".into(),
            idempotency_key: None,
            received_at: 0,
            events: vec![],
            rows,
        }
    }

    fn claim(row: u64, fence: u64) -> ClaimRec {
        ClaimRec {
            row,
            message: row,
            lane: "outbound:d0".into(),
            owner: "w".into(),
            fence,
            invoke: 0,
            at: 0,
            ttl_ms: 2_500,
            node: 1,
        }
    }

    fn done(row: u64, fence: u64, index: u64) -> CompletionRec {
        CompletionRec {
            row,
            fence,
            action: "done".into(),
            lane: "outbound:d0".into(),
            after_stall: false,
            invoke: 0,
            complete: 0,
            result: Completion::Accepted { index: Some(index) },
            node: 1,
        }
    }

    /// Rows 10, 11, 12 claimed at 100, 110, 120 and done at 105, 115, 125.
    fn good() -> (Vec<FinalMessage>, Vec<ClaimRec>, Vec<CompletionRec>) {
        let msgs = vec![message(vec![
            row(10, 1, Some(100)),
            row(11, 1, Some(110)),
            row(12, 2, Some(120)),
        ])];
        let claims = vec![claim(10, 100), claim(11, 110), claim(12, 120)];
        let dones = vec![done(10, 100, 105), done(11, 110, 115), done(12, 120, 125)];
        (msgs, claims, dones)
    }

    #[test]
    fn in_order_lane_passes() {
        let (m, c, d) = good();
        let v = check(&m, &c, &d);
        assert!(v.ok(), "{:?}", v.violations);
        assert_eq!(v.checked, 3);
    }

    #[test]
    fn a_re_claim_after_lease_expiry_is_fine() {
        // Row 10 claimed at 100, lease lost, re-claimed at 104 and done at 105.
        let (m, mut c, d) = good();
        let mut m = m;
        m[0].rows[0].last_fence = Some(104);
        c.push(claim(10, 104));
        let d: Vec<_> = d
            .into_iter()
            .map(|x| if x.row == 10 { done(10, 104, 105) } else { x })
            .collect();
        assert!(check(&m, &c, &d).ok());
    }

    #[test]
    fn out_of_order_last_claims_fire() {
        // Row 10 (older) finally claimed after row 11.
        let (mut m, c, _) = good();
        m[0].rows[0].last_fence = Some(112);
        let v = check(&m, &c, &[]);
        assert!(!v.ok());
        assert!(
            v.violations.iter().any(|s| s.contains("last claimed")),
            "{:?}",
            v.violations
        );
    }

    #[test]
    fn out_of_order_completions_fire() {
        let (m, c, _) = good();
        let d = vec![done(10, 100, 130), done(11, 110, 115), done(12, 120, 125)];
        let v = check(&m, &c, &d);
        assert!(
            v.violations.iter().any(|s| s.contains("was completed")),
            "{:?}",
            v.violations
        );
    }

    #[test]
    fn a_claim_overtaking_an_unfinished_head_fires() {
        // Row 11 claimed at 103 while row 10 (claimed at 100) was only done at 105.
        let (mut m, mut c, d) = good();
        m[0].rows[1].last_fence = Some(111);
        c.push(claim(11, 103));
        let v = check(&m, &c, &d);
        assert!(
            v.violations
                .iter()
                .any(|s| s.contains("while the older row 10")),
            "{:?}",
            v.violations
        );
    }

    #[test]
    fn batched_fences_order_by_entry_then_position() {
        let b = |index: u64, pos: usize| raftlane_statemachine::wire::command::op_id(index, pos);
        // Row 10 claimed inside the batch at index 90 (numerically the largest fence), row 11 by
        // the plain entry 100, row 12 inside the batch at 120.
        let msgs = vec![message(vec![
            row(10, 1, Some(b(90, 0))),
            row(11, 1, Some(100)),
            row(12, 2, Some(b(120, 2))),
        ])];
        let claims = vec![claim(10, b(90, 0)), claim(11, 100), claim(12, b(120, 2))];
        let dones = vec![
            done(10, b(90, 0), 95),
            done(11, 100, 110),
            done(12, b(120, 2), 125),
        ];
        let v = check(&msgs, &claims, &dones);
        assert!(v.ok(), "{:?}", v.violations);
        // Inside one batch the position decides.
        let msgs = vec![message(vec![
            row(10, 1, Some(b(120, 3))),
            row(11, 1, Some(b(120, 1))),
        ])];
        assert!(!check(&msgs, &[], &[]).ok());
        // A claim in the same entry as the older row's done cannot be ordered: not a violation;
        // a claim in an earlier entry is.
        let msgs = vec![message(vec![
            row(10, 1, Some(b(90, 0))),
            row(11, 1, Some(b(95, 4))),
        ])];
        assert!(check(&msgs, &[claim(11, b(95, 4))], &[done(10, b(90, 0), 95)]).ok());
        assert!(!check(&msgs, &[claim(11, b(94, 4))], &[done(10, b(90, 0), 95)]).ok());
    }

    #[test]
    fn created_at_orders_before_seq() {
        // Row 12 is older than row 11 by created_at: claiming 11 first is out of order.
        let msgs = vec![message(vec![row(11, 5, Some(110)), row(12, 2, Some(120))])];
        let v = check(&msgs, &[], &[]);
        assert!(!v.ok());
    }
}
