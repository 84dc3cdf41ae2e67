//! No acknowledged enqueue is lost: every acknowledged message id exists after healing with the
//! producer's idempotency key, and there is exactly one message per idempotency key.

use super::Verdict;
use crate::final_state::FinalMessage;
use crate::history::{EnqueueOp, Seen};
use std::collections::BTreeMap;

pub fn check(enqueues: &[EnqueueOp], messages: &[FinalMessage]) -> Verdict {
    let mut v = Verdict::new("no-lost-acks");
    let by_id: BTreeMap<u64, &FinalMessage> = messages.iter().map(|m| (m.id, m)).collect();
    let mut by_key: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for m in messages {
        if let Some(k) = &m.idempotency_key {
            by_key.entry(k.as_str()).or_default().push(m.id);
        }
    }
    for (key, ids) in &by_key {
        if ids.len() > 1 {
            v.fail(format!(
                "idempotency key {key} has {} messages: {ids:?}",
                ids.len()
            ));
        }
    }
    let (mut acked, mut unknown, mut unknown_landed) = (0u64, 0u64, 0u64);
    for op in enqueues {
        v.checked += 1;
        match &op.result {
            Seen::Ok(id) => {
                acked += 1;
                match by_id.get(id) {
                    None => v.fail(format!(
                        "acknowledged message {id} (key {}) is missing",
                        op.key
                    )),
                    Some(m) if m.idempotency_key.as_deref() != Some(op.key.as_str()) => {
                        v.fail(format!(
                            "acknowledged message {id} carries key {:?}, the producer sent {}",
                            m.idempotency_key, op.key
                        ))
                    }
                    Some(m) if m.channel != op.channel => v.fail(format!(
                        "acknowledged message {id} is on channel {}, sent to {}",
                        m.channel, op.channel
                    )),
                    Some(_) => {}
                }
                if let Some(ids) = by_key.get(op.key.as_str()) {
                    if !ids.contains(id) {
                        v.fail(format!(
                            "key {} was acknowledged as {id} but holds {ids:?}",
                            op.key
                        ));
                    }
                }
            }
            Seen::Unknown(_) => {
                unknown += 1;
                if by_key.contains_key(op.key.as_str()) {
                    unknown_landed += 1;
                }
            }
            Seen::Refused(_) => {
                if let Some(ids) = by_key.get(op.key.as_str()) {
                    v.fail(format!(
                        "enqueue with key {} was refused but message(s) {ids:?} exist",
                        op.key
                    ));
                }
            }
        }
    }
    v.notes.push(format!(
        "{acked} acknowledged, {unknown} indeterminate ({unknown_landed} of them landed)"
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: u64, key: &str) -> FinalMessage {
        FinalMessage {
            id,
            channel: "c0".into(),
            status: "processed".into(),
            idempotency_key: Some(key.into()),
            received_at: 0,
            events: vec![],
            rows: vec![],
        }
    }

    fn op(key: &str, result: Seen<u64>) -> EnqueueOp {
        EnqueueOp {
            key: key.into(),
            channel: "c0".into(),
            invoke: 0,
            complete: 1,
            attempts: 1,
            result,
        }
    }

    #[test]
    fn good_history_passes() {
        let ops = vec![
            op("a", Seen::Ok(1)),
            op("b", Seen::Ok(2)),
            op("c", Seen::Unknown("t".into())),
            op("d", Seen::Unknown("t".into())),
        ];
        let msgs = vec![msg(1, "a"), msg(2, "b"), msg(3, "c")];
        let v = check(&ops, &msgs);
        assert!(v.ok(), "{:?}", v.violations);
        assert_eq!(v.checked, 4);
    }

    #[test]
    fn a_lost_ack_fires() {
        let ops = vec![op("a", Seen::Ok(1)), op("b", Seen::Ok(2))];
        let v = check(&ops, &[msg(1, "a")]);
        assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
        assert!(v.violations[0].contains("missing"));
    }

    #[test]
    fn a_duplicate_per_key_fires() {
        let ops = vec![op("a", Seen::Ok(1))];
        let v = check(&ops, &[msg(1, "a"), msg(2, "a")]);
        assert!(!v.ok());
        assert!(v.violations.iter().any(|s| s.contains("2 messages")));
    }

    #[test]
    fn a_wrong_key_or_a_refused_write_that_landed_fires() {
        let v = check(&[op("a", Seen::Ok(1))], &[msg(1, "zzz")]);
        assert!(!v.ok());
        let v = check(&[op("a", Seen::Refused("invalid".into()))], &[msg(1, "a")]);
        assert!(!v.ok());
    }
}
