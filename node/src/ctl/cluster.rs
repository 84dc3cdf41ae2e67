//! `ctl status`, `ctl member` and `ctl leader`: the cluster as each node sees it, membership
//! changes (`POST /v1/cluster/learners`, `POST /v1/cluster/membership`, docs/SPEC.md §9.10)
//! and leadership transfers (`POST /v1/cluster/leader`).

use super::output::{self, opt, Table};
use super::{Conn, CtlError};
use clap::Subcommand;
use raftlane_client::contract::{
    ClusterStatus, LeaderTransferRequest, LearnerRequest, LogFormatRequest, Member,
    MembershipRequest,
};
use serde::Serialize;
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Subcommand, Debug)]
pub enum MemberCommand {
    /// Add node ID at ADDR as a learner; answers once it caught up (the leader removes it again
    /// if it does not within its bound).
    Add {
        id: u64,
        /// Its API address as every node will dial it (host:port, optionally with a scheme).
        addr: String,
    },
    /// Make learner ID a voter (the new voter set: the current voters and ID).
    Promote { id: u64 },
    /// Remove voter ID from the voter set (one voter per change).
    Remove { id: u64 },
}

#[derive(Subcommand, Debug)]
pub enum LeaderCommand {
    /// Hand leadership to another voter (before maintenance of the leader's host): the leader
    /// holds new writes until the voter has its whole log, then the voter is elected.
    Transfer {
        /// The voter to lead; without it, the voter whose log reaches furthest.
        #[arg(long)]
        to: Option<u64>,
    },
}

#[derive(Subcommand, Debug)]
pub enum LogFormatCommand {
    /// Write log format FORMAT from now on. Refused, naming the node, while any member runs a
    /// build that does not read it; a format never goes back.
    Raise { format: u32 },
}

/// What one endpoint answered.
#[derive(Debug, Serialize)]
pub struct NodeView {
    pub endpoint: String,
    /// `GET /v1/cluster` as this node answered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterStatus>,
    /// `GET /readyz`: 200 or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_reason: Option<String>,
    /// The node's clock minus this host's, from the answer's `Date` header (whole seconds:
    /// ±1 s), in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_offset_ms: Option<i64>,
    /// Why this node did not answer `GET /v1/cluster`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The API's status when it refused (401, 403, ...).
    #[serde(skip)]
    pub refused: Option<u16>,
}

/// Ask every endpoint, at once (one after another would add up the timeouts of dead nodes),
/// for its view of the cluster and its readiness.
pub async fn views(conn: &Conn) -> Vec<NodeView> {
    join_all(conn.endpoints.iter().map(|e| view(conn, e))).await
}

/// Run `futures` concurrently on this task and collect their outputs in order.
async fn join_all<F: std::future::Future<Output = NodeView>>(
    futures: impl Iterator<Item = F>,
) -> Vec<NodeView> {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut done: Vec<Option<NodeView>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, fut) in done.iter_mut().zip(pinned.iter_mut()) {
            if slot.is_none() {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

async fn view(conn: &Conn, endpoint: &str) -> NodeView {
    let mut v = NodeView {
        endpoint: endpoint.to_string(),
        cluster: None,
        ready: None,
        ready_reason: None,
        clock_offset_ms: None,
        error: None,
        refused: None,
    };
    let sent = now_ms();
    match conn.probe(endpoint, "/v1/cluster", true).await {
        Ok((status, headers, body)) if status.is_success() => {
            let received = now_ms();
            v.clock_offset_ms = headers
                .get("date")
                .and_then(|d| d.to_str().ok())
                .and_then(parse_http_date)
                .map(|server_s| offset_ms(server_s, sent, received));
            match serde_json::from_value::<ClusterStatus>(body) {
                Ok(c) => v.cluster = Some(c),
                Err(e) => v.error = Some(format!("unexpected answer: {e}")),
            }
        }
        Ok((status, _, body)) => {
            v.refused = Some(status.as_u16());
            let code = output::cell(body.pointer("/error/code"));
            let message = output::cell(body.pointer("/error/message"));
            v.error = Some(format!("{} {code}: {message}", status.as_u16()));
        }
        Err(e) => v.error = Some(e),
    }
    if let Ok((status, _, body)) = conn.probe(endpoint, "/readyz", false).await {
        v.ready = Some(status.is_success());
        v.ready_reason = body
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    v
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

/// The server's clock minus ours: its `Date` (whole seconds, so the middle of that second)
/// against the middle of our request's round trip.
fn offset_ms(server_s: u64, sent_ms: u64, received_ms: u64) -> i64 {
    let server = server_s as i64 * 1000 + 500;
    let ours = (sent_ms as i64 + received_ms as i64) / 2;
    server - ours
}

/// An HTTP `Date` (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) as seconds since the epoch.
pub fn parse_http_date(text: &str) -> Option<u64> {
    let mut parts = text.split_whitespace();
    let _weekday = parts.next()?;
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if parts.next()? != "GMT" || year < 1970 || !(1..=31).contains(&day) || h > 23 || m > 59 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a civil date (the inverse of `output::time_ms`'s arithmetic).
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The view to trust for membership: the leader's own (the node that names itself leader),
/// else the one of the highest term and log.
pub fn best_view(views: &[NodeView]) -> Option<&ClusterStatus> {
    let answered = || views.iter().filter_map(|v| v.cluster.as_ref());
    answered()
        .find(|c| c.leader_id == Some(c.node_id))
        .or_else(|| answered().max_by_key(|c| (c.term, c.last_log_index)))
}

/// No view at all: unreachable (3) unless every node that answered refused the token (4).
fn no_view(views: &[NodeView]) -> CtlError {
    if let Some(v) = views.iter().find(|v| matches!(v.refused, Some(401 | 403))) {
        let status = v.refused.unwrap_or(401);
        return CtlError::Api {
            status,
            code: if status == 401 {
                "unauthorized"
            } else {
                "forbidden"
            }
            .into(),
            message: format!(
                "{} refused GET /v1/cluster: {}",
                v.endpoint,
                v.error.as_deref().unwrap_or("")
            ),
        };
    }
    let why: Vec<String> = views
        .iter()
        .map(|v| {
            format!(
                "{}: {}",
                v.endpoint,
                v.error.as_deref().unwrap_or("no answer")
            )
        })
        .collect();
    CtlError::Unreachable(why.join("; "))
}

/// One line of `status`: a member (or a node that answered but is not one), with what its
/// own endpoint said.
#[derive(Debug, Serialize)]
pub struct MemberLine {
    pub id: u64,
    pub addr: String,
    /// leader, follower, learner, or `unknown` (answered but not a member).
    pub role: String,
    pub term: Option<u64>,
    pub last_log_index: Option<u64>,
    pub last_applied: Option<u64>,
    /// The leader's last log index minus this node's applied index.
    pub lag: Option<u64>,
    pub ready: Option<bool>,
    pub ready_reason: Option<String>,
    pub clock_offset_ms: Option<i64>,
    pub endpoint: Option<String>,
}

/// The members of `best`, each with the view of the endpoint that answered as it.
pub fn member_lines(best: &ClusterStatus, views: &[NodeView]) -> Vec<MemberLine> {
    let own = |id: u64| {
        views
            .iter()
            .find(|v| v.cluster.as_ref().is_some_and(|c| c.node_id == id))
    };
    let leader_log = best
        .leader_id
        .and_then(own)
        .and_then(|v| v.cluster.as_ref())
        .map(|c| c.last_log_index);
    let line = |m: &Member| {
        let v = own(m.id);
        let c = v.and_then(|v| v.cluster.as_ref());
        MemberLine {
            id: m.id,
            addr: m.addr.clone(),
            role: if best.leader_id == Some(m.id) {
                "leader"
            } else if m.voter {
                "follower"
            } else {
                "learner"
            }
            .to_string(),
            term: c.map(|c| c.term),
            last_log_index: c.map(|c| c.last_log_index),
            last_applied: c.map(|c| c.last_applied),
            lag: leader_log
                .zip(c)
                .map(|(l, c)| l.saturating_sub(c.last_applied)),
            ready: v.and_then(|v| v.ready),
            ready_reason: v.and_then(|v| v.ready_reason.clone()),
            clock_offset_ms: v.and_then(|v| v.clock_offset_ms),
            endpoint: v.map(|v| v.endpoint.clone()),
        }
    };
    let mut lines: Vec<MemberLine> = best.membership.iter().map(line).collect();
    for v in views {
        if let Some(c) = &v.cluster {
            if !best.membership.iter().any(|m| m.id == c.node_id) {
                let mut l = line(&Member {
                    addr: "-".into(),
                    id: c.node_id,
                    voter: false,
                });
                l.role = "not a member".into();
                lines.push(l);
            }
        }
    }
    lines
}

/// `ctl status`.
pub async fn status(conn: &Conn) -> Result<(), CtlError> {
    let views = views(conn).await;
    let best = best_view(&views).ok_or_else(|| no_view(&views))?;
    let lines = member_lines(best, &views);
    if conn.json {
        output::print_json(&json!({
            "leader_id": best.leader_id,
            "term": best.term,
            "members": lines,
            "removed_learners": best.removed_learners,
            "endpoints": views,
        }));
        return Ok(());
    }
    let voters = best.membership.iter().filter(|m| m.voter).count();
    outln!(
        "leader {}, term {}, {voters} voters, {} learners",
        opt(best.leader_id),
        best.term,
        best.membership.len() - voters
    );
    let mut table = Table::new([
        "ID", "ADDRESS", "ROLE", "TERM", "LOG", "APPLIED", "LAG", "READY", "CLOCK",
    ]);
    for l in &lines {
        let ready = match (l.ready, &l.ready_reason) {
            (Some(true), _) => "yes".to_string(),
            (Some(false), Some(why)) => format!("no ({why})"),
            (Some(false), None) => "no".to_string(),
            (None, _) => "-".to_string(),
        };
        table.row([
            l.id.to_string(),
            l.addr.clone(),
            l.role.clone(),
            opt(l.term),
            opt(l.last_log_index),
            opt(l.last_applied),
            opt(l.lag),
            ready,
            opt(l.clock_offset_ms.map(clock)),
        ]);
    }
    table.print();
    for v in views.iter().filter(|v| v.cluster.is_none()) {
        outln!(
            "{}: {}",
            v.endpoint,
            v.error.as_deref().unwrap_or("no answer")
        );
    }
    for r in &best.removed_learners {
        outln!(
            "removed learner {} at {} ({}): {}",
            r.id,
            r.addr,
            output::time_ms(r.removed_at_ms),
            r.reason
        );
    }
    Ok(())
}

/// A clock offset as whole seconds with a sign (the `Date` header's resolution).
fn clock(ms: i64) -> String {
    let s = (ms as f64 / 1000.0).round() as i64;
    format!("{s:+}s")
}

/// `ctl member ...`.
pub async fn member(conn: &Conn, command: MemberCommand) -> Result<(), CtlError> {
    let answer = match command {
        MemberCommand::Add { id, addr } => {
            let body = serde_json::to_value(LearnerRequest {
                id,
                addr: addr.clone(),
            })
            .map_err(|e| CtlError::Usage(e.to_string()))?;
            // A learner is answered once it caught up, which may take the leader's whole bound
            // (60 s by default).
            let client = conn.client(Some(Duration::from_secs(120)));
            let v = client
                .request(hyper::Method::POST, "/v1/cluster/learners", Some(body))
                .await?;
            if !conn.json {
                outln!("node {id} at {addr} is a learner and caught up");
            }
            v
        }
        MemberCommand::Promote { id } | MemberCommand::Remove { id } => {
            let promote = matches!(command, MemberCommand::Promote { .. });
            let views = views(conn).await;
            let best = best_view(&views).ok_or_else(|| no_view(&views))?;
            let voters = new_voters(&best.membership, id, promote)?;
            let body = serde_json::to_value(MembershipRequest {
                voters: voters.clone(),
            })
            .map_err(|e| CtlError::Usage(e.to_string()))?;
            let v = conn.post("/v1/cluster/membership", body).await?;
            if !conn.json {
                let what = if promote { "promoted" } else { "removed" };
                let list: Vec<String> = voters.iter().map(u64::to_string).collect();
                outln!("node {id} {what}; voters now {}", list.join(", "));
            }
            v
        }
    };
    if conn.json {
        output::print_json(&answer);
    }
    Ok(())
}

pub async fn leader(conn: &Conn, command: LeaderCommand) -> Result<(), CtlError> {
    let LeaderCommand::Transfer { to } = command;
    let body = serde_json::to_value(LeaderTransferRequest { to })
        .map_err(|e| CtlError::Usage(e.to_string()))?;
    // The leader waits for the voter to catch up and be elected: seconds, not the default 10.
    let client = conn.client(Some(Duration::from_secs(30)));
    let v = client
        .request(hyper::Method::POST, "/v1/cluster/leader", Some(body))
        .await?;
    if conn.json {
        output::print_json(&v);
    } else {
        match v["leader_id"].as_u64() {
            Some(id) => outln!("node {id} leads"),
            None => {
                outln!("leadership handed over; no leader seen yet (see `raftlane ctl status`)")
            }
        }
    }
    Ok(())
}

/// `ctl log-format`: the cluster's format (and what the answering node reads), or raise it.
pub async fn log_format(conn: &Conn, action: Option<LogFormatCommand>) -> Result<(), CtlError> {
    let client = conn.client(Some(Duration::from_secs(30)));
    let v = match action {
        None => {
            client
                .request(hyper::Method::GET, "/v1/cluster/log-format", None)
                .await?
        }
        Some(LogFormatCommand::Raise { format }) => {
            let body = serde_json::to_value(LogFormatRequest { format })
                .map_err(|e| CtlError::Usage(e.to_string()))?;
            client
                .request(hyper::Method::POST, "/v1/cluster/log-format", Some(body))
                .await?
        }
    };
    if conn.json {
        output::print_json(&v);
    } else {
        outln!(
            "log format {} (node {} reads {})",
            v["log_format"],
            v["node_id"],
            v["reads"]
        );
    }
    Ok(())
}

/// The voter set after promoting (or removing) `id`, from the members as they are.
pub fn new_voters(members: &[Member], id: u64, promote: bool) -> Result<Vec<u64>, CtlError> {
    let member = members.iter().find(|m| m.id == id);
    let mut voters: Vec<u64> = members.iter().filter(|m| m.voter).map(|m| m.id).collect();
    match (member, promote) {
        (None, true) => Err(CtlError::Failed(format!(
            "node {id} is not a member: add it as a learner first (ctl member add {id} ADDR)"
        ))),
        (None, false) => Err(CtlError::Failed(format!("node {id} is not a member"))),
        (Some(m), true) if m.voter => {
            Err(CtlError::Failed(format!("node {id} is already a voter")))
        }
        (Some(m), false) if !m.voter => Err(CtlError::Failed(format!(
            "node {id} is a learner: the API changes the voter set only, and has no route \
             that removes a learner (the leader removes one that does not catch up)"
        ))),
        (Some(_), true) => {
            voters.push(id);
            voters.sort_unstable();
            Ok(voters)
        }
        (Some(_), false) => {
            voters.retain(|v| *v != id);
            Ok(voters)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, voter: bool) -> Member {
        Member {
            addr: format!("n{id}:7001"),
            id,
            voter,
        }
    }

    #[test]
    fn http_dates_parse_to_epoch_seconds() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 12:34:56 GMT"),
            Some(951_827_696)
        );
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 PST"), None);
        assert_eq!(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"), None);
        assert_eq!(parse_http_date("garbage"), None);
        // The server's second is taken at its middle, against the middle of the round trip.
        assert_eq!(offset_ms(100, 100_000, 100_200), 400);
        assert_eq!(clock(-2_600), "-3s");
        assert_eq!(clock(400), "+0s");
    }

    #[test]
    fn promote_adds_a_learner_and_remove_drops_a_voter() {
        let members = [member(1, true), member(2, true), member(3, false)];
        assert_eq!(new_voters(&members, 3, true).unwrap(), [1, 2, 3]);
        assert_eq!(new_voters(&members, 2, false).unwrap(), [1]);
        assert!(new_voters(&members, 1, true).is_err(), "already a voter");
        assert!(new_voters(&members, 3, false).is_err(), "a learner");
        assert!(new_voters(&members, 9, true).is_err(), "not a member");
        assert!(new_voters(&members, 9, false).is_err(), "not a member");
    }

    fn status_of(
        node: u64,
        leader: Option<u64>,
        term: u64,
        log: u64,
        applied: u64,
    ) -> ClusterStatus {
        ClusterStatus {
            last_applied: applied,
            last_log_index: log,
            leader_id: leader,
            membership: vec![member(1, true), member(2, true), member(3, false)],
            node_id: node,
            term,
            removed_learners: Vec::new(),
        }
    }

    fn answered(endpoint: &str, c: ClusterStatus) -> NodeView {
        NodeView {
            endpoint: endpoint.into(),
            cluster: Some(c),
            ready: Some(true),
            ready_reason: None,
            clock_offset_ms: Some(0),
            error: None,
            refused: None,
        }
    }

    #[test]
    fn the_leaders_own_view_is_trusted_and_lag_is_counted_from_its_log() {
        let views = vec![
            answered("http://a", status_of(2, Some(1), 4, 50, 47)),
            answered("http://b", status_of(1, Some(1), 4, 52, 52)),
            NodeView {
                error: Some("refused".into()),
                ..answered("http://c", status_of(3, None, 0, 0, 0))
            },
        ];
        let mut views = views;
        views[2].cluster = None;
        let best = best_view(&views).unwrap();
        assert_eq!(best.node_id, 1);
        let lines = member_lines(best, &views);
        let roles: Vec<&str> = lines.iter().map(|l| l.role.as_str()).collect();
        assert_eq!(roles, ["leader", "follower", "learner"]);
        assert_eq!(lines[0].lag, Some(0));
        assert_eq!(lines[1].lag, Some(5));
        assert_eq!(lines[2].lag, None, "node 3 did not answer");
        assert_eq!(lines[1].endpoint.as_deref(), Some("http://a"));
    }

    #[test]
    fn without_views_a_refused_token_is_unauthorized_and_silence_unreachable() {
        let silent = NodeView {
            endpoint: "http://a".into(),
            cluster: None,
            ready: None,
            ready_reason: None,
            clock_offset_ms: None,
            error: Some("connection refused".into()),
            refused: None,
        };
        assert_eq!(no_view(std::slice::from_ref(&silent)).exit_status(), 3);
        let refused = NodeView {
            refused: Some(401),
            ..silent
        };
        assert_eq!(no_view(&[refused]).exit_status(), 4);
    }
}
