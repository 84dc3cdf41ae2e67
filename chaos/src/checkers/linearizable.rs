//! Linearizability of the config compare-and-set register.
//!
//! The config document is used as a register `(version, value)`; clients read it and
//! compare-and-set it (`PUT /v1/config` with `If-Match: version`). [`check`] is a Wing–Gong
//! search with Lowe's memoisation (the algorithm behind Knossos and Porcupine): walk the
//! history's call/return events in real-time order, try to linearize each pending call against
//! the sequential model, backtrack when a return is reached whose call could not be placed,
//! and skip configurations `(set of linearized ops, model state)` already explored.
//!
//! Operations without a definite answer never return: they may take effect at any point after
//! their invocation, or never.
//!
//! [`check_versions`] cross-checks the history against the version log read after healing:
//! an acknowledged CAS must be the version it was told, a refused one must be nowhere.

use super::Verdict;
use crate::history::{RegCall, RegOp, RegReturn, RegState};
use std::collections::{BTreeMap, HashSet};

/// Search budget; beyond it the verdict is "inconclusive" (reported, not a violation).
pub const MAX_STEPS: u64 = 20_000_000;

/// The sequential specification: the state after `op`, or `None` if `op` cannot return what it
/// returned from `state`.
pub fn step(state: &RegState, op: &RegOp) -> Option<RegState> {
    match (&op.call, &op.ret) {
        (RegCall::Read, RegReturn::Read(seen)) => (seen == state).then(|| state.clone()),
        (RegCall::Read, RegReturn::Unknown) => Some(state.clone()),
        (RegCall::Cas { expected, value }, RegReturn::CasOk(new_version)) => {
            (state.version == *expected && *new_version == expected + 1).then(|| RegState {
                version: *new_version,
                value: Some(value.clone()),
            })
        }
        (RegCall::Cas { expected, .. }, RegReturn::CasFailed) => {
            (state.version != *expected).then(|| state.clone())
        }
        // An unanswered CAS is only worth placing where it succeeds; failing equals absent.
        (RegCall::Cas { expected, value }, RegReturn::Unknown) => (state.version == *expected)
            .then(|| RegState {
                version: expected + 1,
                value: Some(value.clone()),
            }),
        _ => None,
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Linearizability {
    Ok,
    /// No linearization; `op` is the operation the deepest attempt could not place.
    Violation {
        op: usize,
        linearized: usize,
    },
    Inconclusive {
        steps: u64,
    },
}

const NIL: usize = usize::MAX;

struct Entry {
    op: usize,
    is_call: bool,
}

/// Wing–Gong–Lowe search over `ops`, starting from `init`.
pub fn linearize(ops: &[RegOp], init: RegState) -> Linearizability {
    // Unanswered reads carry no information.
    let ops: Vec<(usize, &RegOp)> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !(o.call == RegCall::Read && o.ret == RegReturn::Unknown))
        .collect();
    let mut events: Vec<(u64, u8, usize, bool)> = Vec::new();
    for (k, (_, o)) in ops.iter().enumerate() {
        events.push((o.invoke, 0, k, true));
        if o.ret != RegReturn::Unknown {
            events.push((o.complete, 1, k, false));
        }
    }
    // Calls before returns at equal times: equal timestamps count as concurrent.
    events.sort();
    let entries: Vec<Entry> = events
        .iter()
        .map(|(_, _, op, is_call)| Entry {
            op: *op,
            is_call: *is_call,
        })
        .collect();
    let n = entries.len();
    let head = n; // sentinel
    let mut next: Vec<usize> = (1..=n).map(|i| if i == n { NIL } else { i }).collect();
    next.push(if n == 0 { NIL } else { 0 });
    let mut prev: Vec<usize> = (0..n).map(|i| if i == 0 { head } else { i - 1 }).collect();
    prev.push(NIL);
    let mut call_of = vec![NIL; ops.len()];
    let mut ret_of = vec![NIL; ops.len()];
    for (i, e) in entries.iter().enumerate() {
        if e.is_call {
            call_of[e.op] = i;
        } else {
            ret_of[e.op] = i;
        }
    }
    let required = ops
        .iter()
        .filter(|(_, o)| o.ret != RegReturn::Unknown)
        .count();
    let unlink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, e: usize| {
        let (p, nx) = (prev[e], next[e]);
        next[p] = nx;
        if nx != NIL {
            prev[nx] = p;
        }
    };
    let relink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, e: usize| {
        let (p, nx) = (prev[e], next[e]);
        next[p] = e;
        if nx != NIL {
            prev[nx] = e;
        }
    };

    let words = ops.len().div_ceil(64).max(1);
    let mut bits = vec![0u64; words];
    let mut cache: HashSet<(Vec<u64>, RegState)> = HashSet::new();
    let mut stack: Vec<(usize, RegState)> = Vec::new();
    let mut state = init;
    let mut done = 0usize;
    let mut cur = next[head];
    let mut steps = 0u64;
    let mut deepest = (0usize, NIL);
    loop {
        steps += 1;
        if steps > MAX_STEPS {
            return Linearizability::Inconclusive { steps };
        }
        if done == required {
            return Linearizability::Ok;
        }
        let backtrack = match cur {
            NIL => true,
            e if entries[e].is_call => {
                let k = entries[e].op;
                if let Some(next_state) = step(&state, ops[k].1) {
                    bits[k / 64] |= 1 << (k % 64);
                    if cache.insert((bits.clone(), next_state.clone())) {
                        stack.push((e, std::mem::replace(&mut state, next_state)));
                        unlink(&mut next, &mut prev, e);
                        if ret_of[k] != NIL {
                            unlink(&mut next, &mut prev, ret_of[k]);
                            done += 1;
                        }
                        cur = next[head];
                        continue;
                    }
                    bits[k / 64] &= !(1 << (k % 64));
                }
                cur = next[e];
                false
            }
            e => {
                if stack.len() >= deepest.0 {
                    deepest = (stack.len(), entries[e].op);
                }
                true
            }
        };
        if backtrack {
            let Some((e, before)) = stack.pop() else {
                let op = if deepest.1 == NIL {
                    0
                } else {
                    ops[deepest.1].0
                };
                return Linearizability::Violation {
                    op,
                    linearized: deepest.0,
                };
            };
            let k = entries[e].op;
            if ret_of[k] != NIL {
                relink(&mut next, &mut prev, ret_of[k]);
                done -= 1;
            }
            relink(&mut next, &mut prev, call_of[k]);
            bits[k / 64] &= !(1 << (k % 64));
            state = before;
            cur = next[e];
        }
    }
}

/// Linearizability of `ops` from the register state `init` (read before the first operation).
pub fn check(ops: &[RegOp], init: RegState) -> Verdict {
    let mut v = Verdict::new("config-linearizable");
    v.checked = ops.len() as u64;
    match linearize(ops, init) {
        Linearizability::Ok => {}
        Linearizability::Violation { op, linearized } => {
            let o = &ops[op];
            v.fail(format!(
                "not linearizable: after {linearized} operations, op #{op} (client {} via node {}, {:?} -> {:?}, invoked {} us, returned {} us) cannot be placed",
                o.client, o.node, o.call, o.ret, o.invoke, o.complete
            ));
        }
        Linearizability::Inconclusive { steps } => v
            .notes
            .push(format!("search gave up after {steps} steps: inconclusive")),
    }
    let unknown = ops.iter().filter(|o| o.ret == RegReturn::Unknown).count();
    v.notes.push(format!(
        "{} operations, {unknown} without a definite answer",
        ops.len()
    ));
    v
}

/// Every acknowledged CAS is the version it was told, no refused CAS took effect, each written
/// value is in at most one version, and each read saw what that version holds. Versions up to
/// `first_version` existed before the run and are not attributed to its clients.
pub fn check_versions(
    ops: &[RegOp],
    versions: &BTreeMap<u64, Option<String>>,
    first_version: u64,
) -> Verdict {
    let mut v = Verdict::new("config-versions");
    let mut where_is: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (ver, value) in versions.range(first_version + 1..) {
        if let Some(value) = value {
            where_is.entry(value.as_str()).or_default().push(*ver);
        }
    }
    for (value, vs) in &where_is {
        if vs.len() > 1 {
            v.fail(format!("value {value:?} was written as versions {vs:?}"));
        }
    }
    let mut writers: HashSet<&str> = HashSet::new();
    for (i, o) in ops.iter().enumerate() {
        v.checked += 1;
        match (&o.call, &o.ret) {
            (RegCall::Cas { value, .. }, RegReturn::CasOk(nv)) => {
                writers.insert(value.as_str());
                if versions.get(nv) != Some(&Some(value.clone())) {
                    v.fail(format!("op #{i}: CAS acknowledged as version {nv} with {value:?}, but version {nv} holds {:?}", versions.get(nv)));
                }
            }
            (RegCall::Cas { value, expected }, RegReturn::CasFailed) => {
                if let Some(vs) = where_is.get(value.as_str()) {
                    v.fail(format!(
                        "op #{i}: CAS from version {expected} with {value:?} sent to node {} was refused (412) yet took effect as version(s) {vs:?} (invoked {} us, answered {} us)",
                        o.node, o.invoke, o.complete
                    ));
                }
            }
            (RegCall::Cas { value, .. }, RegReturn::Unknown) => {
                writers.insert(value.as_str());
            }
            (RegCall::Read, RegReturn::Read(s)) => {
                let expect = if s.version == 0 {
                    Some(&None)
                } else {
                    versions.get(&s.version)
                };
                if s.version < first_version {
                    continue;
                }
                if expect != Some(&s.value) {
                    v.fail(format!(
                        "op #{i}: read version {} as {:?}, but that version holds {:?}",
                        s.version, s.value, expect
                    ));
                }
            }
            _ => {}
        }
    }
    for (value, vs) in &where_is {
        if !writers.contains(value)
            && !ops
                .iter()
                .any(|o| matches!(&o.call, RegCall::Cas { value: x, .. } if x == value))
        {
            v.fail(format!(
                "version(s) {vs:?} hold {value:?}, which no client wrote"
            ));
        }
    }
    v.notes
        .push(format!("{} versions after healing", versions.len()));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(version: u64, value: Option<&str>) -> RegState {
        RegState {
            version,
            value: value.map(str::to_string),
        }
    }

    fn read(client: usize, invoke: u64, complete: u64, version: u64, value: Option<&str>) -> RegOp {
        RegOp {
            client,
            node: 1,
            invoke,
            complete,
            call: RegCall::Read,
            ret: RegReturn::Read(st(version, value)),
        }
    }

    fn cas(
        client: usize,
        invoke: u64,
        complete: u64,
        expected: u64,
        value: &str,
        ret: RegReturn,
    ) -> RegOp {
        RegOp {
            client,
            node: 1,
            invoke,
            complete,
            call: RegCall::Cas {
                expected,
                value: value.into(),
            },
            ret,
        }
    }

    fn init() -> RegState {
        st(0, None)
    }

    #[test]
    fn sequential_history_is_linearizable() {
        let h = vec![
            read(0, 0, 1, 0, None),
            cas(0, 2, 3, 0, "a", RegReturn::CasOk(1)),
            read(1, 4, 5, 1, Some("a")),
            cas(1, 6, 7, 0, "b", RegReturn::CasFailed),
            cas(1, 8, 9, 1, "b", RegReturn::CasOk(2)),
        ];
        assert_eq!(linearize(&h, init()), Linearizability::Ok);
        assert!(check(&h, init()).ok());
    }

    #[test]
    fn concurrent_operations_may_reorder() {
        // Both CAS from 0 overlap; "b" wins though it was invoked second; the read overlapping
        // both may see either state.
        let h = vec![
            cas(0, 0, 10, 0, "a", RegReturn::CasFailed),
            cas(1, 1, 9, 0, "b", RegReturn::CasOk(1)),
            read(2, 2, 8, 0, None),
            read(2, 11, 12, 1, Some("b")),
        ];
        assert_eq!(linearize(&h, init()), Linearizability::Ok);
    }

    #[test]
    fn a_stale_read_is_not_linearizable() {
        // The CAS completed before the read started, yet the read sees the old state.
        let h = vec![
            cas(0, 0, 1, 0, "a", RegReturn::CasOk(1)),
            read(1, 2, 3, 0, None),
        ];
        assert!(matches!(
            linearize(&h, init()),
            Linearizability::Violation { .. }
        ));
        assert!(!check(&h, init()).ok());
    }

    #[test]
    fn two_winners_from_one_version_are_not_linearizable() {
        let h = vec![
            cas(0, 0, 5, 0, "a", RegReturn::CasOk(1)),
            cas(1, 0, 5, 0, "b", RegReturn::CasOk(1)),
        ];
        assert!(matches!(
            linearize(&h, init()),
            Linearizability::Violation { .. }
        ));
    }

    #[test]
    fn a_refused_cas_that_took_effect_is_not_linearizable() {
        // "a" was refused with 412, but a later read sees it.
        let h = vec![
            cas(0, 0, 1, 0, "a", RegReturn::CasFailed),
            read(1, 2, 3, 1, Some("a")),
        ];
        assert!(matches!(
            linearize(&h, init()),
            Linearizability::Violation { .. }
        ));
    }

    #[test]
    fn an_unanswered_cas_may_or_may_not_have_happened() {
        let took_effect = vec![
            cas(0, 0, 0, 0, "a", RegReturn::Unknown),
            read(1, 5, 6, 1, Some("a")),
        ];
        assert_eq!(linearize(&took_effect, init()), Linearizability::Ok);
        let did_not = vec![
            cas(0, 0, 0, 0, "a", RegReturn::Unknown),
            read(1, 5, 6, 0, None),
        ];
        assert_eq!(linearize(&did_not, init()), Linearizability::Ok);
        // ...but not before it was invoked.
        let too_early = vec![
            read(1, 0, 1, 1, Some("a")),
            cas(0, 2, 0, 0, "a", RegReturn::Unknown),
        ];
        assert!(matches!(
            linearize(&too_early, init()),
            Linearizability::Violation { .. }
        ));
    }

    #[test]
    fn a_lost_write_is_not_linearizable() {
        // Acknowledged version 1 = "a", then a read sees version 1 = "b".
        let h = vec![
            cas(0, 0, 1, 0, "a", RegReturn::CasOk(1)),
            read(1, 2, 3, 1, Some("b")),
        ];
        assert!(matches!(
            linearize(&h, init()),
            Linearizability::Violation { .. }
        ));
    }

    #[test]
    fn a_longer_random_sequential_history_is_linearizable_quickly() {
        let mut h = Vec::new();
        let mut version = 0;
        let mut value: Option<String> = None;
        for i in 0..400u64 {
            let t = i * 10;
            if i % 3 == 0 {
                h.push(read((i % 2) as usize, t, t + 5, version, value.as_deref()));
            } else if i % 7 == 0 {
                h.push(cas(0, t, t + 5, version + 5, "x", RegReturn::CasFailed));
            } else if i % 11 == 0 {
                h.push(cas(1, t, 0, version, &format!("u{i}"), RegReturn::Unknown));
                version += 1;
                value = Some(format!("u{i}"));
            } else {
                let v = format!("v{i}");
                h.push(cas(1, t, t + 5, version, &v, RegReturn::CasOk(version + 1)));
                version += 1;
                value = Some(v);
            }
        }
        assert_eq!(linearize(&h, init()), Linearizability::Ok);
    }

    #[test]
    fn history_starting_from_an_existing_version() {
        // The cluster already held version 7 = "old" when the run began.
        let h = vec![
            read(0, 0, 1, 7, Some("old")),
            cas(0, 2, 3, 7, "a", RegReturn::CasOk(8)),
        ];
        assert!(check(&h, st(7, Some("old"))).ok());
        assert!(!check(&h, init()).ok());
        let versions: BTreeMap<u64, Option<String>> =
            [(7, Some("old".to_string())), (8, Some("a".to_string()))].into();
        assert!(check_versions(&h, &versions, 7).ok());
    }

    #[test]
    fn versions_cross_check() {
        let versions: BTreeMap<u64, Option<String>> =
            [(1, Some("a".to_string())), (2, Some("c".to_string()))].into();
        let good = vec![
            cas(0, 0, 1, 0, "a", RegReturn::CasOk(1)),
            cas(1, 0, 1, 0, "b", RegReturn::CasFailed),
            cas(1, 2, 3, 1, "c", RegReturn::Unknown),
            read(0, 4, 5, 2, Some("c")),
        ];
        assert!(check_versions(&good, &versions, 0).ok());
        // A refused CAS whose value is in the log.
        let bad = vec![cas(0, 0, 1, 0, "a", RegReturn::CasFailed)];
        let v = check_versions(&bad, &versions, 0);
        assert!(
            v.violations.iter().any(|s| s.contains("refused")),
            "{:?}",
            v.violations
        );
        // An acknowledged version holding another value, and a read of a value that is not there.
        let bad = vec![
            cas(0, 0, 1, 0, "a", RegReturn::CasOk(1)),
            cas(1, 0, 1, 1, "c", RegReturn::Unknown),
            cas(0, 2, 3, 1, "zz", RegReturn::CasOk(2)),
            read(0, 4, 5, 1, Some("q")),
        ];
        assert_eq!(check_versions(&bad, &versions, 0).violations.len(), 2);
        // A version nobody wrote.
        let v = check_versions(&good[..2], &versions, 0);
        assert!(
            v.violations.iter().any(|s| s.contains("no client wrote")),
            "{:?}",
            v.violations
        );
    }
}
