//! Every message reaches exactly one terminal status and nothing is left in flight after
//! quiescence.
//!
//! Per message: its status is terminal; no row is pending or inflight; the status is the one the
//! finalizer's precedence gives for its rows (any dead row ⇒ `error`, else any outbound row ⇒
//! `processed`); it was received once (one `received` event, or a message recorded already
//! filtered or failed opens with that `filtered`/`error` event instead, as messagefoundry's
//! `record_received` writes it) and routed/filtered/unrouted at most once; and each
//! destination's `delivered` events match its done rows one for one (nothing delivered twice,
//! nothing done without a delivery).

use super::Verdict;
use crate::final_state::FinalMessage;
use std::collections::BTreeMap;

const TERMINAL: [&str; 4] = ["unrouted", "filtered", "processed", "error"];

pub fn check(messages: &[FinalMessage], live_rows: u64) -> Verdict {
    let mut v = Verdict::new("terminal-status");
    if live_rows > 0 {
        v.fail(format!(
            "{live_rows} rows still pending or inflight after quiescence"
        ));
    }
    let mut by_status: BTreeMap<&str, u64> = BTreeMap::new();
    for m in messages {
        v.checked += 1;
        *by_status.entry(m.status.as_str()).or_default() += 1;
        if !TERMINAL.contains(&m.status.as_str()) {
            v.fail(format!("message {} ended {}", m.id, m.status));
        }
        let live: Vec<u64> = m
            .rows
            .iter()
            .filter(|r| r.is_live())
            .map(|r| r.id)
            .collect();
        if !live.is_empty() {
            v.fail(format!("message {} still has live rows {live:?}", m.id));
        }
        let any_dead = m.rows.iter().any(|r| r.status == "dead");
        let any_outbound = m.rows.iter().any(|r| r.stage == "outbound");
        let expected = if any_dead {
            Some("error")
        } else if any_outbound {
            Some("processed")
        } else {
            None
        };
        if let Some(e) = expected {
            if live.is_empty() && m.status != e {
                v.fail(format!(
                    "message {} is {} but its rows say {e}",
                    m.id, m.status
                ));
            }
        }
        let count = |kind: &str| m.events.iter().filter(|e| e.kind == kind).count();
        let born_terminal = count("received") == 0
            && m.events
                .first()
                .is_some_and(|e| e.kind == "filtered" || e.kind == "error");
        if count("received") != 1 && !born_terminal {
            v.fail(format!(
                "message {} has {} received events",
                m.id,
                count("received")
            ));
        }
        let decisions = count("routed") + count("filtered") + count("unrouted");
        if decisions > 1 {
            v.fail(format!(
                "message {} was routed/filtered {decisions} times",
                m.id
            ));
        }
        let mut delivered: BTreeMap<&str, i64> = BTreeMap::new();
        for e in m.events.iter().filter(|e| e.kind == "delivered") {
            *delivered
                .entry(e.destination.as_deref().unwrap_or(""))
                .or_default() += 1;
        }
        for r in m
            .rows
            .iter()
            .filter(|r| r.stage == "outbound" && r.status == "done")
        {
            let dest = r.lane.strip_prefix("outbound:").unwrap_or("");
            *delivered.entry(dest).or_default() -= 1;
        }
        for (dest, diff) in delivered {
            if diff != 0 {
                v.fail(format!(
                    "message {}: {dest}: delivered events and done rows differ by {diff}",
                    m.id
                ));
            }
        }
    }
    let summary: Vec<String> = by_status.iter().map(|(s, n)| format!("{s} {n}")).collect();
    v.notes.push(format!("statuses: {}", summary.join(", ")));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::final_state::{FinalEvent, FinalRow};

    fn ev(kind: &str, dest: Option<&str>) -> FinalEvent {
        FinalEvent {
            kind: kind.into(),
            destination: dest.map(str::to_string),
        }
    }

    fn out_row(id: u64, dest: &str, status: &str) -> FinalRow {
        FinalRow {
            id,
            message: 1,
            stage: "outbound".into(),
            lane: format!("outbound:{dest}"),
            status: status.into(),
            created_at: 0,
            last_fence: Some(id * 10),
            attempts: 1,
        }
    }

    fn processed() -> FinalMessage {
        FinalMessage {
            id: 1,
            channel: "c0".into(),
            status: "processed".into(),
            idempotency_key: None,
            received_at: 0,
            events: vec![
                ev("received", None),
                ev("routed", None),
                ev("delivered", Some("d0")),
                ev("delivered", Some("d1")),
            ],
            rows: vec![out_row(2, "d0", "done"), out_row(3, "d1", "done")],
        }
    }

    fn filtered() -> FinalMessage {
        FinalMessage {
            id: 2,
            status: "filtered".into(),
            events: vec![ev("received", None), ev("filtered", None)],
            rows: vec![],
            ..processed()
        }
    }

    /// RecordReceived: one event, the disposition itself.
    fn recorded(kind: &str) -> FinalMessage {
        FinalMessage {
            id: 3,
            status: kind.into(),
            events: vec![ev(kind, None)],
            rows: vec![],
            ..processed()
        }
    }

    #[test]
    fn good_messages_pass() {
        let all = [
            processed(),
            filtered(),
            recorded("filtered"),
            recorded("error"),
        ];
        let v = check(&all, 0);
        assert!(v.ok(), "{:?}", v.violations);
        assert_eq!(v.checked, 4);
    }

    #[test]
    fn a_message_never_received_fires() {
        let mut m = processed();
        m.events.remove(0);
        assert!(!check(&[m], 0).ok());
        let mut m = recorded("error");
        m.events.insert(0, ev("delivered", Some("d0")));
        assert!(!check(&[m], 0).ok());
        let mut m = filtered();
        m.events.insert(0, ev("received", None));
        assert!(!check(&[m], 0).ok());
    }

    #[test]
    fn a_message_left_in_flight_fires() {
        let mut m = processed();
        m.status = "routed".into();
        m.rows[1].status = "pending".into();
        m.events.retain(|e| e.destination.as_deref() != Some("d1"));
        let v = check(&[m], 1);
        assert_eq!(v.violations.len(), 3, "{:?}", v.violations);
    }

    #[test]
    fn a_double_delivery_fires() {
        let mut m = processed();
        m.events.push(ev("delivered", Some("d0")));
        let v = check(&[m], 0);
        assert!(
            v.violations.iter().any(|s| s.contains("differ by 1")),
            "{:?}",
            v.violations
        );
    }

    #[test]
    fn a_wrong_final_status_fires() {
        let mut m = processed();
        m.rows[0].status = "dead".into();
        m.events.retain(|e| e.destination.as_deref() != Some("d0"));
        let v = check(&[m], 0);
        assert!(
            v.violations.iter().any(|s| s.contains("rows say error")),
            "{:?}",
            v.violations
        );
    }

    #[test]
    fn a_double_routing_fires() {
        let mut m = filtered();
        m.events.push(ev("routed", None));
        assert!(!check(&[m], 0).ok());
    }
}
