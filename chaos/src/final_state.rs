//! The cluster's state after healing and quiescence, reduced to what the checkers need.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FinalRow {
    /// Also the row's global `seq`.
    pub id: u64,
    pub message: u64,
    pub stage: String,
    /// `"{stage}:{name}"`: the destination for outbound rows, the channel otherwise.
    pub lane: String,
    pub status: String,
    pub created_at: u64,
    pub last_fence: Option<u64>,
    pub attempts: u64,
}

impl FinalRow {
    pub fn is_live(&self) -> bool {
        self.status == "pending" || self.status == "inflight"
    }
    pub fn is_terminal(&self) -> bool {
        !self.is_live()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FinalEvent {
    pub kind: String,
    pub destination: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FinalMessage {
    pub id: u64,
    pub channel: String,
    pub status: String,
    pub idempotency_key: Option<String>,
    pub received_at: u64,
    pub events: Vec<FinalEvent>,
    pub rows: Vec<FinalRow>,
}

/// One node's digest answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DigestSample {
    pub node: u64,
    pub last_applied: u64,
    pub digest: String,
}

/// One node's verification of one org's audit chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditView {
    pub node: u64,
    pub org: String,
    pub ok: bool,
    pub count: u64,
    pub head: String,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditRow {
    pub seq: u64,
    pub hash: String,
    pub detail: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FinalState {
    pub messages: Vec<FinalMessage>,
    /// Pending + inflight rows across all stages, from the stats.
    pub live_rows: u64,
    /// Rounds of digest answers, one entry per node (None: no answer).
    pub digest_rounds: Vec<Vec<Option<DigestSample>>>,
    /// A node that answered two different digests for one applied index (the endpoint's index
    /// and digest came from different states).
    pub digest_inconsistencies: Vec<String>,
    pub audit: Vec<AuditView>,
    pub audit_rows: BTreeMap<String, Vec<AuditRow>>,
    /// Config version → the register value it holds.
    pub config_versions: BTreeMap<u64, Option<String>>,
    /// Reads that failed while collecting (each makes the dependent checks inconclusive).
    pub fetch_errors: Vec<String>,
}

/// Parse `GET /v1/messages/{id}`.
pub fn parse_message(v: &Value) -> Option<FinalMessage> {
    let m = &v["message"];
    let id = m["id"].as_u64()?;
    let events = v["events"]
        .as_array()
        .map(|evs| {
            evs.iter()
                .map(|e| FinalEvent {
                    kind: e["event"].as_str().unwrap_or("").to_string(),
                    destination: e["destination"].as_str().map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default();
    let rows = v["rows"]
        .as_array()
        .map(|rs| rs.iter().filter_map(parse_row).collect())
        .unwrap_or_default();
    Some(FinalMessage {
        id,
        channel: m["channel_id"].as_str().unwrap_or("").to_string(),
        status: m["status"].as_str().unwrap_or("").to_string(),
        idempotency_key: m["idempotency_key"].as_str().map(str::to_string),
        received_at: m["received_at"].as_u64().unwrap_or(0),
        events,
        rows,
    })
}

fn parse_row(r: &Value) -> Option<FinalRow> {
    let stage = r["stage"].as_str()?.to_string();
    let name = if stage == "outbound" {
        r["destination_name"].as_str().unwrap_or("")
    } else {
        r["channel_id"].as_str().unwrap_or("")
    };
    Some(FinalRow {
        id: r["id"].as_u64()?,
        message: r["message_id"].as_u64().unwrap_or(0),
        lane: format!("{stage}:{name}"),
        stage,
        status: r["status"].as_str().unwrap_or("").to_string(),
        created_at: r["created_at"].as_u64().unwrap_or(0),
        last_fence: r["last_fence"].as_u64(),
        attempts: r["attempts"].as_u64().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_a_message_view() {
        let v = json!({
            "message": {"id": 7, "channel_id": "c0", "status": "processed", "idempotency_key": "k7", "received_at": 5},
            "events": [{"ts": 1, "event": "received", "destination": null, "detail": null},
                       {"ts": 2, "event": "delivered", "destination": "d1", "detail": "attempt 1"}],
            "rows": [{"id": 12, "message_id": 7, "stage": "outbound", "channel_id": "c0", "destination_name": "d1",
                      "status": "done", "created_at": 3, "last_fence": 40, "attempts": 1}],
            "responses": []
        });
        let m = parse_message(&v).unwrap();
        assert_eq!(m.id, 7);
        assert_eq!(m.idempotency_key.as_deref(), Some("k7"));
        assert_eq!(m.events[1].destination.as_deref(), Some("d1"));
        assert_eq!(m.rows[0].lane, "outbound:d1");
        assert_eq!(m.rows[0].last_fence, Some(40));
        assert!(m.rows[0].is_terminal());
    }
}
