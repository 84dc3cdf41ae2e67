//! `ctl channels`, `ctl destinations`, `ctl lanes`: the pipeline's shape. Channels and
//! destinations join what the configuration names (`GET /v1/config`) with what has traffic
//! (`GET /v1/metrics/connections`), since a channel takes messages whether configured or not.

use super::output::{self, age_ms, field, time_field, Table};
use super::{Conn, CtlError};
use clap::Subcommand;
use raftlane_client::contract::path::encode_segment;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The configuration's section `section` (`channels`, `destinations`) and the traffic figures.
async fn config_and_traffic(
    conn: &Conn,
    section: &str,
) -> Result<(Map<String, Value>, Value), CtlError> {
    let config = conn.get("/v1/config").await?;
    let traffic = conn.get("/v1/metrics/connections").await?;
    let configured = config
        .pointer(&format!("/config/{section}"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Ok((configured, traffic))
}

/// Each channel, configured or with traffic, in name order: its configuration (or `null`)
/// and its inbound figures (or `null`).
pub fn join_channels(configured: &Map<String, Value>, traffic: &Value) -> Vec<Value> {
    let mut by_name: BTreeMap<String, (Value, Value)> = configured
        .iter()
        .map(|(name, c)| (name.clone(), (c.clone(), Value::Null)))
        .collect();
    for t in traffic
        .get("inbound")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = t.get("channel").and_then(Value::as_str) {
            by_name
                .entry(name.to_string())
                .or_insert((Value::Null, Value::Null))
                .1 = t.clone();
        }
    }
    by_name
        .into_iter()
        .map(|(name, (config, inbound))| json!({"channel": name, "config": config, "inbound": inbound}))
        .collect()
}

/// Each destination, configured or with rows, in name order: its configuration (or `null`) and
/// its figures summed over the channels that feed it, with those per channel.
pub fn join_destinations(configured: &Map<String, Value>, traffic: &Value) -> Vec<Value> {
    let mut by_name: BTreeMap<String, (Value, Vec<Value>)> = configured
        .iter()
        .map(|(name, c)| (name.clone(), (c.clone(), Vec::new())))
        .collect();
    for t in traffic
        .get("destinations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = t.get("destination").and_then(Value::as_str) {
            by_name
                .entry(name.to_string())
                .or_insert((Value::Null, Vec::new()))
                .1
                .push(t.clone());
        }
    }
    by_name
        .into_iter()
        .map(|(name, (config, per_channel))| {
            let sum = |key: &str| -> u64 {
                per_channel
                    .iter()
                    .filter_map(|t| t.get(key).and_then(Value::as_u64))
                    .sum()
            };
            let oldest = per_channel
                .iter()
                .filter_map(|t| t.get("oldest_pending_at").and_then(Value::as_u64))
                .filter(|at| *at > 0)
                .min();
            json!({
                "destination": name,
                "config": config,
                "queue_depth": sum("queue_depth"),
                "written": sum("written"),
                "dead": sum("dead"),
                "oldest_pending_at": oldest,
                "per_channel": per_channel,
            })
        })
        .collect()
}

/// `ctl channels`.
pub async fn channels(conn: &Conn) -> Result<(), CtlError> {
    let (configured, traffic) = config_and_traffic(conn, "channels").await?;
    let channels = join_channels(&configured, &traffic);
    if conn.json {
        output::print_json(&json!({ "channels": channels }));
        return Ok(());
    }
    let mut table = Table::new([
        "CHANNEL",
        "CONFIGURED",
        "READ",
        "ERRORED",
        "LAST MESSAGE",
        "DESCRIPTION",
    ]);
    for c in &channels {
        let inbound = &c["inbound"];
        table.row([
            field(c, "channel"),
            if c["config"].is_null() { "no" } else { "yes" }.to_string(),
            num(inbound, "read"),
            num(inbound, "errored"),
            time_field(inbound, "last_at"),
            c.pointer("/config/description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        ]);
    }
    print_or_none(&table, "no channels");
    Ok(())
}

/// `ctl destinations pause|resume` (without one: the listing).
#[derive(Subcommand, Debug)]
pub enum DestinationCommand {
    /// Stop handing out the destination's rows (they stay, in order) until it is resumed; rows
    /// already out finish. Replicated and audited.
    Pause {
        destination: String,
        /// Why, for the next person to look (kept with the pause and in the audit row).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Hand the destination's rows out again, its lanes' heads first.
    Resume { destination: String },
}

/// `ctl destinations [pause|resume]`.
pub async fn destinations(conn: &Conn, action: Option<DestinationCommand>) -> Result<(), CtlError> {
    let (path, body, verb) = match action {
        None => return list_destinations(conn).await,
        Some(DestinationCommand::Pause {
            destination,
            reason,
        }) => (
            format!("/v1/destinations/{}/pause", encode_segment(&destination)),
            json!({ "reason": reason }),
            "paused",
        ),
        Some(DestinationCommand::Resume { destination }) => (
            format!("/v1/destinations/{}/resume", encode_segment(&destination)),
            json!({}),
            "resumed",
        ),
    };
    let answer = conn.post(&path, body).await?;
    if conn.json {
        output::print_json(&answer);
    } else if answer["changed"].as_bool() == Some(true) {
        outln!("{} {verb}", field(&answer, "destination"));
    } else {
        outln!("{} was already {verb}", field(&answer, "destination"));
    }
    Ok(())
}

/// The listing: each destination joined with its pause, if any (a destination paused ahead of
/// its first row is listed too).
async fn list_destinations(conn: &Conn) -> Result<(), CtlError> {
    let (configured, traffic) = config_and_traffic(conn, "destinations").await?;
    let paused = conn.get("/v1/destinations/paused").await?;
    let mut destinations = join_destinations(&configured, &traffic);
    mark_paused(&mut destinations, &paused);
    if conn.json {
        output::print_json(&json!({ "destinations": destinations }));
        return Ok(());
    }
    let mut table = Table::new([
        "DESTINATION",
        "CONFIGURED",
        "DEPTH",
        "WRITTEN",
        "DEAD",
        "OLDEST PENDING",
        "PAUSED",
        "URL",
    ]);
    for d in &destinations {
        let pause = d.get("paused").filter(|p| !p.is_null());
        table.row([
            field(d, "destination"),
            if d["config"].is_null() { "no" } else { "yes" }.to_string(),
            field(d, "queue_depth"),
            field(d, "written"),
            field(d, "dead"),
            time_field(d, "oldest_pending_at"),
            pause.map_or_else(
                || "no".to_string(),
                |p| {
                    format!(
                        "by {} {}",
                        field(p, "paused_by"),
                        time_field(p, "paused_at")
                    )
                },
            ),
            d.pointer("/config/url")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        ]);
    }
    print_or_none(&table, "no destinations");
    Ok(())
}

/// Set each destination's `paused` member from `GET /v1/destinations/paused` (`null`: running),
/// adding the paused destinations that have neither configuration nor rows, in name order.
pub fn mark_paused(destinations: &mut Vec<Value>, paused: &Value) {
    for d in destinations.iter_mut() {
        d["paused"] = Value::Null;
    }
    for p in paused
        .get("destinations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = p.get("destination").and_then(Value::as_str) else {
            continue;
        };
        match destinations.iter_mut().find(|d| d["destination"] == name) {
            Some(d) => d["paused"] = p.clone(),
            None => destinations.push(json!({
                "destination": name, "config": null, "queue_depth": 0, "written": 0, "dead": 0,
                "oldest_pending_at": null, "per_channel": [], "paused": p,
            })),
        }
    }
    destinations.sort_by(|a, b| {
        a["destination"]
            .as_str()
            .unwrap_or("")
            .cmp(b["destination"].as_str().unwrap_or(""))
    });
}

/// How many lanes `ctl lanes` lists at most (pages of [`LANE_PAGE`]).
const MAX_LANES: usize = 10_000;
const LANE_PAGE: usize = 500;

/// `ctl lanes`: every lane with its depth, the age of its oldest row and its holder, read from
/// `GET /v1/lanes` page by page (at most [`MAX_LANES`]; the rest is said, not hidden).
pub async fn lanes(conn: &Conn) -> Result<(), CtlError> {
    let mut lanes: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    let more = loop {
        let path = format!(
            "/v1/lanes{}",
            super::query(&[
                ("limit", Some(LANE_PAGE.to_string())),
                ("cursor", cursor.clone()),
            ])
        );
        let page = conn.get(&path).await?;
        if let Some(items) = page.get("lanes").and_then(Value::as_array) {
            lanes.extend(items.iter().cloned());
        }
        cursor = page
            .get("next_cursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        if cursor.is_none() || lanes.len() >= MAX_LANES {
            break cursor.is_some();
        }
    };
    if conn.json {
        output::print_json(&json!({ "lanes": lanes, "next_cursor": cursor }));
        return Ok(());
    }
    let mut table = Table::new([
        "STAGE",
        "LANE",
        "DEPTH",
        "INFLIGHT",
        "OLDEST AGE",
        "HOLDER",
        "LEASE EXPIRES",
    ]);
    for l in &lanes {
        let holder = l.get("holder").filter(|h| !h.is_null());
        table.row([
            field(l, "stage"),
            field(l, "name"),
            num(l, "depth"),
            num(l, "inflight"),
            l.get("oldest_age_ms")
                .and_then(Value::as_u64)
                .map_or_else(|| "-".to_string(), age_ms),
            holder.map_or_else(|| "-".to_string(), |h| field(h, "owner")),
            holder.map_or_else(|| "-".to_string(), |h| time_field(h, "expires_at")),
        ]);
    }
    print_or_none(&table, "no lanes");
    if more {
        println!("(the first {} lanes; more follow)", lanes.len());
    }
    Ok(())
}

/// A count member, `0` when the entity has no figures.
fn num(object: &Value, key: &str) -> String {
    object
        .get(key)
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .to_string()
}

fn print_or_none(table: &Table, none: &str) {
    if table.is_empty() {
        outln!("{none}");
    } else {
        table.print();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_join_configuration_and_traffic_by_name() {
        let configured = json!({"adt": {"description": "admissions"}, "quiet": {}});
        let traffic = json!({"inbound": [
            {"channel": "adt", "read": 3, "errored": 1, "last_at": 10},
            {"channel": "lab", "read": 2, "errored": 0, "last_at": 20},
        ], "destinations": []});
        let joined = join_channels(configured.as_object().unwrap(), &traffic);
        let names: Vec<&str> = joined
            .iter()
            .map(|c| c["channel"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["adt", "lab", "quiet"]);
        assert_eq!(joined[0]["inbound"]["read"], 3);
        assert!(joined[1]["config"].is_null(), "lab has traffic only");
        assert!(joined[2]["inbound"].is_null(), "quiet is configured only");
    }

    #[test]
    fn destinations_sum_their_channels_and_keep_the_oldest_pending() {
        let configured = json!({"emr": {"url": "mllp://emr:2575"}});
        let traffic = json!({"inbound": [], "destinations": [
            {"channel": "adt", "destination": "emr", "queue_depth": 2, "written": 5, "dead": 1, "oldest_pending_at": 300},
            {"channel": "lab", "destination": "emr", "queue_depth": 1, "written": 4, "dead": 0, "oldest_pending_at": 200},
            {"channel": "lab", "destination": "billing", "queue_depth": 0, "written": 9, "dead": 2, "oldest_pending_at": null},
        ]});
        let joined = join_destinations(configured.as_object().unwrap(), &traffic);
        assert_eq!(joined[0]["destination"], "billing");
        assert!(joined[0]["oldest_pending_at"].is_null());
        let emr = &joined[1];
        assert_eq!(
            (
                emr["queue_depth"].as_u64(),
                emr["written"].as_u64(),
                emr["dead"].as_u64()
            ),
            (Some(3), Some(9), Some(1))
        );
        assert_eq!(emr["oldest_pending_at"], 200);
        assert_eq!(emr["config"]["url"], "mllp://emr:2575");
    }

    #[test]
    fn paused_destinations_are_marked_and_listed_even_without_rows() {
        let mut listed = vec![json!({"destination": "emr"}), json!({"destination": "lab"})];
        let paused = json!({"destinations": [
            {"destination": "billing", "paused_by": "ops", "paused_at": 5},
            {"destination": "emr", "paused_by": "ops", "paused_at": 7, "reason": "upgrade"},
        ]});
        mark_paused(&mut listed, &paused);
        let names: Vec<&str> = listed
            .iter()
            .map(|d| d["destination"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["billing", "emr", "lab"]);
        assert_eq!(listed[1]["paused"]["reason"], "upgrade");
        assert!(listed[2]["paused"].is_null());
        assert_eq!(listed[0]["queue_depth"], 0);
    }
}
