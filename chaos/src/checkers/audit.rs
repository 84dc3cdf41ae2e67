//! Audit chains: every org's chain verifies on every node, all nodes hold the same head, every
//! acknowledged append is in the chain at its sequence number with its hash, and no append was
//! applied twice.

use super::Verdict;
use crate::final_state::{AuditRow, AuditView};
use crate::history::{AuditOp, Seen};
use std::collections::BTreeMap;

pub fn check(
    views: &[AuditView],
    rows: &BTreeMap<String, Vec<AuditRow>>,
    ops: &[AuditOp],
) -> Verdict {
    let mut v = Verdict::new("audit-chains");
    let mut by_org: BTreeMap<&str, Vec<&AuditView>> = BTreeMap::new();
    for view in views {
        by_org.entry(view.org.as_str()).or_default().push(view);
    }
    for (org, vs) in &by_org {
        for view in vs {
            v.checked += 1;
            if !view.ok {
                v.fail(format!(
                    "org {org}: chain fails verification on node {}: {:?}",
                    view.node, view.reason
                ));
            }
        }
        if let Some(first) = vs.first() {
            for other in vs.iter().skip(1) {
                if (other.count, &other.head) != (first.count, &first.head) {
                    v.fail(format!(
                        "org {org}: node {} has {} rows / head {}, node {} has {} / {}",
                        first.node, first.count, first.head, other.node, other.count, other.head
                    ));
                }
            }
        }
    }
    for (org, chain) in rows {
        let by_seq: BTreeMap<u64, &AuditRow> = chain.iter().map(|r| (r.seq, r)).collect();
        let mut details: BTreeMap<&str, u64> = BTreeMap::new();
        for r in chain {
            if let Some(d) = &r.detail {
                *details.entry(d.as_str()).or_default() += 1;
            }
        }
        for op in ops.iter().filter(|o| &o.org == org) {
            v.checked += 1;
            let n = details.get(op.detail.as_str()).copied().unwrap_or(0);
            if n > 1 {
                v.fail(format!(
                    "org {org}: append {:?} is in the chain {n} times",
                    op.detail
                ));
            }
            match &op.result {
                Seen::Ok((seq, hash)) => match by_seq.get(seq) {
                    None => v.fail(format!("org {org}: acknowledged append {:?} (seq {seq}) is missing", op.detail)),
                    Some(r) if &r.hash != hash || r.detail.as_deref() != Some(op.detail.as_str()) => v.fail(format!(
                        "org {org}: seq {seq} holds {:?} / {}, the append of {:?} was acknowledged as {hash}",
                        r.detail, r.hash, op.detail
                    )),
                    Some(_) => {}
                },
                Seen::Refused(code) if n > 0 => v.fail(format!("org {org}: append {:?} was refused ({code}) but is in the chain", op.detail)),
                _ => {}
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(node: u64, count: u64, head: &str, ok: bool) -> AuditView {
        AuditView {
            node,
            org: "chaos".into(),
            ok,
            count,
            head: head.into(),
            reason: (!ok).then(|| "bad link".to_string()),
        }
    }

    fn row(seq: u64, hash: &str, detail: &str) -> AuditRow {
        AuditRow {
            seq,
            hash: hash.into(),
            detail: Some(detail.into()),
        }
    }

    fn op(detail: &str, result: Seen<(u64, String)>) -> AuditOp {
        AuditOp {
            org: "chaos".into(),
            detail: detail.into(),
            invoke: 0,
            complete: 0,
            result,
        }
    }

    fn good() -> (
        Vec<AuditView>,
        BTreeMap<String, Vec<AuditRow>>,
        Vec<AuditOp>,
    ) {
        let views = vec![
            view(1, 2, "h2", true),
            view(2, 2, "h2", true),
            view(3, 2, "h2", true),
        ];
        let rows = [(
            "chaos".to_string(),
            vec![row(1, "h1", "a-1"), row(2, "h2", "a-2")],
        )]
        .into();
        let ops = vec![
            op("a-1", Seen::Ok((1, "h1".into()))),
            op("a-2", Seen::Unknown("t".into())),
            op("a-3", Seen::Unknown("t".into())),
        ];
        (views, rows, ops)
    }

    #[test]
    fn consistent_chains_pass() {
        let (vs, rows, ops) = good();
        let v = check(&vs, &rows, &ops);
        assert!(v.ok(), "{:?}", v.violations);
    }

    #[test]
    fn a_failed_verification_or_a_forked_head_fires() {
        let (mut vs, rows, ops) = good();
        vs[1] = view(2, 2, "h2", false);
        vs[2] = view(3, 2, "zz", true);
        let v = check(&vs, &rows, &ops);
        assert_eq!(v.violations.len(), 2, "{:?}", v.violations);
    }

    #[test]
    fn a_lost_or_rewritten_append_fires() {
        let (vs, mut rows, mut ops) = good();
        ops.push(op("a-9", Seen::Ok((9, "h9".into()))));
        rows.get_mut("chaos").unwrap()[0].hash = "other".into();
        let v = check(&vs, &rows, &ops);
        assert_eq!(v.violations.len(), 2, "{:?}", v.violations);
    }

    #[test]
    fn a_duplicated_append_fires() {
        let (vs, mut rows, ops) = good();
        rows.get_mut("chaos").unwrap().push(row(3, "h3", "a-2"));
        let v = check(&vs, &rows, &ops);
        assert!(
            v.violations.iter().any(|s| s.contains("2 times")),
            "{:?}",
            v.violations
        );
    }
}
