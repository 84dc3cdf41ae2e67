//! Replica agreement: all nodes report the same state digest at the same applied index.
//!
//! The collector samples every node's `(last_applied, digest)` several times (the leader keeps
//! proposing housekeeping commands, so indexes move), each sample confirmed by two equal answers
//! in a row; a round where all nodes answered at the same index must show one digest, and at
//! least one such round must exist. Answers where one node gave two digests for one index
//! (the endpoint pairing a digest with an index it was not computed at) are reported as notes.

use super::Verdict;
use crate::final_state::DigestSample;

pub fn check(rounds: &[Vec<Option<DigestSample>>], endpoint_inconsistencies: &[String]) -> Verdict {
    let mut v = Verdict::new("replica-digests");
    for e in endpoint_inconsistencies {
        v.notes.push(format!("digest endpoint not atomic: {e}"));
    }
    let mut comparable = 0u64;
    for round in rounds {
        v.checked += 1;
        let answers: Vec<&DigestSample> = round.iter().flatten().collect();
        if answers.len() != round.len() || answers.is_empty() {
            continue;
        }
        let index = answers[0].last_applied;
        if answers.iter().any(|a| a.last_applied != index) {
            continue;
        }
        comparable += 1;
        let first = &answers[0].digest;
        if let Some(other) = answers.iter().find(|a| &a.digest != first) {
            v.fail(format!(
                "at applied index {index}: node {} has digest {}, node {} has {}",
                answers[0].node, first, other.node, other.digest
            ));
        }
    }
    if comparable == 0 {
        v.fail(format!(
            "no round out of {} saw every node at the same applied index",
            rounds.len()
        ));
    } else {
        v.notes.push(format!(
            "{comparable} rounds compared at equal applied indexes"
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(node: u64, index: u64, digest: &str) -> Option<DigestSample> {
        Some(DigestSample {
            node,
            last_applied: index,
            digest: digest.into(),
        })
    }

    #[test]
    fn equal_digests_at_equal_index_pass() {
        let rounds = vec![
            vec![s(1, 10, "aa"), s(2, 9, "bb"), s(3, 10, "aa")],
            vec![s(1, 11, "cc"), s(2, 11, "cc"), s(3, 11, "cc")],
        ];
        let v = check(&rounds, &[]);
        assert!(v.ok(), "{:?}", v.violations);
    }

    #[test]
    fn diverged_replicas_fire() {
        let rounds = vec![vec![s(1, 11, "cc"), s(2, 11, "cc"), s(3, 11, "dd")]];
        let v = check(&rounds, &[]);
        assert_eq!(v.violations.len(), 1);
        assert!(v.violations[0].contains("node 3"));
    }

    #[test]
    fn never_comparable_fires() {
        let rounds = vec![
            vec![s(1, 11, "cc"), None, s(3, 11, "cc")],
            vec![s(1, 12, "x"), s(2, 13, "y"), s(3, 12, "x")],
        ];
        assert!(!check(&rounds, &[]).ok());
    }
}
