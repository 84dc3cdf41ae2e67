//! What an isolated leader must do, watched while a partition cuts it off from both followers.
//!
//! Before check-quorum an old leader cut off for 60 s kept accepting writes and
//! answered none of them until the partition healed, `/readyz` stayed `200` and `/v1/cluster`
//! kept naming it leader. Now, within the bounds below, it must stop naming itself leader, fail
//! `/readyz` (`503` with a reason) and answer a write sent to it with a refusal or a `503`, never
//! an acknowledgement (it cannot commit anything while cut off).

use crate::conn::{Attempt, Conn};
use crate::workload::wall_ms;
use hyper::Method;
use std::time::{Duration, Instant};

/// How long an isolated leader may go on naming itself leader, or answering `/readyz` with
/// `200`: the nodes' check-quorum bound (two election timeouts, 4 s by default) plus a metrics
/// tick and a poll.
pub const GIVES_UP_WITHIN: Duration = Duration::from_millis(5_500);

/// How long a write sent to an isolated leader may wait for its answer: the write path's retry
/// window (8 s, docs/SPEC.md §11.2; check-quorum ends the first attempt after 4 s and the
/// node refuses the retries) plus 1.5 s for a busy machine.
pub const WRITE_ANSWERED_WITHIN: Duration = Duration::from_millis(9_500);

/// How a write sent to the isolated leader ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteProbe {
    /// Acknowledged: the isolated leader claimed a commit it could not have.
    Acknowledged { after: Duration },
    /// Refused or `503` (what `outcome` says), after `after`.
    Refused { after: Duration, outcome: String },
    /// No answer within the watch (the client gave up, or the partition healed first).
    Unanswered { after: Duration, outcome: String },
}

/// What was seen of the isolated leader while the partition held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watched {
    pub node: u64,
    /// When it stopped naming itself leader in `/v1/cluster` (after the cut), if it did.
    pub stopped_leading: Option<Duration>,
    /// When its `/readyz` first answered other than `200`, if it did.
    pub unready: Option<Duration>,
    pub write: WriteProbe,
}

impl Watched {
    /// One line for the report, and the violations (empty when the leader behaved) given how
    /// long the partition was held.
    pub fn judge(&self, hold: Duration) -> (String, Vec<String>) {
        let node = self.node;
        let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
        let seen = |at: Option<Duration>| at.map(secs).unwrap_or_else(|| "never".into());
        let write = match &self.write {
            WriteProbe::Acknowledged { after } => format!("acknowledged after {}", secs(*after)),
            WriteProbe::Refused { after, outcome } => {
                format!("refused after {} ({outcome})", secs(*after))
            }
            WriteProbe::Unanswered { after, outcome } => {
                format!("unanswered after {} ({outcome})", secs(*after))
            }
        };
        let line = format!(
            "isolated leader {node}: stopped naming itself leader after {}, /readyz failed \
             after {}, a write sent to it {write}",
            seen(self.stopped_leading),
            seen(self.unready)
        );
        let mut bad = Vec::new();
        // Late: it did so after the bound, or never while the partition outlasted the bound.
        let late = |at: Option<Duration>| match at {
            Some(after) => after > GIVES_UP_WITHIN,
            None => hold > GIVES_UP_WITHIN,
        };
        if late(self.stopped_leading) {
            bad.push(format!(
                "isolated leader {node} named itself leader for longer than {} (check-quorum)",
                secs(GIVES_UP_WITHIN)
            ));
        }
        if late(self.unready) {
            bad.push(format!(
                "isolated leader {node} answered /readyz 200 for longer than {}",
                secs(GIVES_UP_WITHIN)
            ));
        }
        match &self.write {
            WriteProbe::Acknowledged { after } => bad.push(format!(
                "isolated leader {node} acknowledged a write after {} that no majority could \
                 have committed",
                secs(*after)
            )),
            WriteProbe::Refused { after, .. } if *after > WRITE_ANSWERED_WITHIN => {
                bad.push(format!(
                    "isolated leader {node} refused a write only after {} (bound {})",
                    secs(*after),
                    secs(WRITE_ANSWERED_WITHIN)
                ))
            }
            WriteProbe::Unanswered { after, .. }
                if hold > WRITE_ANSWERED_WITHIN || *after > WRITE_ANSWERED_WITHIN =>
            {
                bad.push(format!(
                    "isolated leader {node} left a write unanswered for {} (bound {})",
                    secs(*after),
                    secs(WRITE_ANSWERED_WITHIN)
                ))
            }
            _ => {}
        }
        (line, bad)
    }
}

/// Watch `node`, the leader a partition cut off at `since`, until `until`: poll its
/// `/v1/cluster` and `/readyz`, and send it one write (an enqueue on the probe channel) and
/// time its answer.
pub async fn watch(conn: Conn, node: u64, since: Instant, until: Instant) -> Watched {
    let i = (node - 1) as usize;
    let write = {
        let conn = conn.clone();
        tokio::spawn(async move { probe_write(&conn, i, since, until).await })
    };
    let mut stopped_leading = None;
    let mut unready = None;
    while Instant::now() < until && (stopped_leading.is_none() || unready.is_none()) {
        if stopped_leading.is_none() {
            if let Attempt::Ok(status) = conn.once(i, |c| async move { c.cluster().await }).await {
                if status.leader_id != Some(node) {
                    stopped_leading = Some(since.elapsed());
                }
            }
        }
        if unready.is_none() {
            let ready = conn
                .once(i, |c| async move {
                    c.request(Method::GET, "/readyz", None).await
                })
                .await;
            if !matches!(ready, Attempt::Ok(_)) {
                unready = Some(since.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let write = match write.await {
        Ok(w) => w,
        Err(e) => WriteProbe::Unanswered {
            after: since.elapsed(),
            outcome: format!("the probe task failed: {e}"),
        },
    };
    Watched {
        node,
        stopped_leading,
        unready,
        write,
    }
}

/// One enqueue on node index `i`, bypassing the workload's client timeout: its own wait is
/// [`WRITE_ANSWERED_WITHIN`] plus a margin, cut short when the partition heals at `until`.
async fn probe_write(conn: &Conn, i: usize, since: Instant, until: Instant) -> WriteProbe {
    let Some(client) = conn.node(i).cloned() else {
        return WriteProbe::Unanswered {
            after: Duration::ZERO,
            outcome: "no such node".into(),
        };
    };
    let key = format!("isolation-probe-{}-{}", i + 1, wall_ms());
    let limit = (since + WRITE_ANSWERED_WITHIN + Duration::from_secs(3)).min(until);
    let sent = tokio::time::timeout_at(
        limit.into(),
        client.enqueue("probe", "isolated leader probe", Some(&key)),
    )
    .await;
    let after = since.elapsed();
    match sent {
        Err(_) => WriteProbe::Unanswered {
            after,
            outcome: "no answer".into(),
        },
        Ok(r) => match Attempt::from_result(r) {
            Attempt::Ok(_) => WriteProbe::Acknowledged { after },
            Attempt::Unknown(m) if m.contains("timed out") => {
                WriteProbe::Unanswered { after, outcome: m }
            }
            other => WriteProbe::Refused {
                after,
                outcome: short(&format!("{other:?}")),
            },
        },
    }
}

fn short(s: &str) -> String {
    s.chars().take(160).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watched(
        stopped: Option<u64>,
        unready: Option<u64>,
        write: WriteProbe,
    ) -> (String, Vec<String>) {
        Watched {
            node: 2,
            stopped_leading: stopped.map(Duration::from_millis),
            unready: unready.map(Duration::from_millis),
            write,
        }
        .judge(Duration::from_secs(12))
    }

    fn refused(ms: u64) -> WriteProbe {
        WriteProbe::Refused {
            after: Duration::from_millis(ms),
            outcome: "503".into(),
        }
    }

    #[test]
    fn a_leader_that_gives_up_in_time_passes() {
        let (line, bad) = watched(Some(4_300), Some(4_300), refused(8_100));
        assert!(bad.is_empty(), "{bad:?}");
        assert!(line.contains("refused after 8.1 s"), "{line}");
    }

    #[test]
    fn each_late_or_wrong_answer_is_a_violation() {
        // Still leading, still ready: both late.
        let (_, bad) = watched(None, None, refused(8_000));
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[1].contains("/readyz"), "{bad:?}");
        // A write acknowledged by a minority leader.
        let (_, bad) = watched(
            Some(4_000),
            Some(4_000),
            WriteProbe::Acknowledged {
                after: Duration::from_millis(100),
            },
        );
        assert!(bad[0].contains("acknowledged"), "{bad:?}");
        // A write answered only after the bound, or never within a long partition.
        let (_, bad) = watched(Some(4_000), Some(4_000), refused(11_000));
        assert!(bad[0].contains("only after 11.0 s"), "{bad:?}");
        let (_, bad) = watched(
            Some(4_000),
            Some(4_000),
            WriteProbe::Unanswered {
                after: Duration::from_millis(12_000),
                outcome: "no answer".into(),
            },
        );
        assert!(bad[0].contains("unanswered"), "{bad:?}");
    }

    #[test]
    fn a_partition_shorter_than_the_bounds_judges_only_what_it_could_see() {
        let short_hold = Watched {
            node: 1,
            stopped_leading: None,
            unready: None,
            write: WriteProbe::Unanswered {
                after: Duration::from_millis(3_000),
                outcome: "no answer".into(),
            },
        };
        let (_, bad) = short_hold.judge(Duration::from_secs(3));
        assert!(bad.is_empty(), "{bad:?}");
    }
}
