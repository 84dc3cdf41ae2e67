//! `ctl messages` and `ctl dead-letters`: reading messages, and the dead-letter routes
//! (`/v1/dead-letters...`; purge is `POST /v1/retention/purge` of kind `dead_letters`).

use super::output::{self, field, time_field, Table};
use super::{parse_duration, query, Conn, CtlError};
use clap::Subcommand;
use raftlane_client::contract::path::encode_segment;
use serde_json::{json, Value};

#[derive(Subcommand, Debug)]
pub enum DeadLetterCommand {
    /// Dead rows with their messages' fields, of every stage unless --stage says one.
    List {
        /// ingress, routed, outbound, response or all.
        #[arg(long, default_value = "all")]
        stage: String,
        #[arg(long)]
        channel: Option<String>,
        #[arg(long)]
        destination: Option<String>,
        /// At most this many (1-1000).
        #[arg(long, default_value_t = 100)]
        limit: u32,
        /// Newest dead first (default: row-id order).
        #[arg(long)]
        newest: bool,
    },
    /// How many dead rows there are, of every stage unless --stage says one.
    Count {
        /// ingress, routed, outbound, response or all.
        #[arg(long, default_value = "all")]
        stage: String,
        #[arg(long)]
        channel: Option<String>,
        #[arg(long)]
        destination: Option<String>,
    },
    /// Requeue dead outbound rows (all, or a channel's or destination's).
    Replay {
        #[arg(long)]
        channel: Option<String>,
        #[arg(long)]
        destination: Option<String>,
    },
    /// Delete dead letters older than an age (e.g. 7d, 12h).
    Purge {
        #[arg(long, value_name = "AGE", value_parser = parse_duration)]
        older_than: u64,
    },
}

#[derive(Subcommand, Debug)]
pub enum MessageCommand {
    /// A message with its events and rows (by id, or a re-ingested child's key).
    Show {
        id: String,
        /// Also the bodies (needs role worker or above; recorded as a view unless
        /// --no-record-view).
        #[arg(long)]
        body: bool,
        /// With --body: read for processing, without a `viewed` event.
        #[arg(long, requires = "body")]
        no_record_view: bool,
    },
    /// Messages, newest first, by channel, status, type or control id.
    Search {
        #[arg(long)]
        channel: Option<String>,
        #[arg(long)]
        status: Option<String>,
        #[arg(long = "type", value_name = "MESSAGE_TYPE")]
        message_type: Option<String>,
        #[arg(long)]
        control_id: Option<String>,
        /// At most this many (1-1000).
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Count the matches instead of listing them.
        #[arg(long)]
        count: bool,
    },
}

/// `ctl dead-letters ...`.
pub async fn dead_letters(conn: &Conn, command: DeadLetterCommand) -> Result<(), CtlError> {
    match command {
        DeadLetterCommand::List {
            stage,
            channel,
            destination,
            limit,
            newest,
        } => {
            let q = query(&[
                ("stage", Some(stage)),
                ("channel", channel),
                ("destination", destination),
                ("limit", Some(limit.to_string())),
                ("order", newest.then(|| "newest_failed".to_string())),
            ]);
            let answer = conn.get(&format!("/v1/dead-letters{q}")).await?;
            if conn.json {
                output::print_json(&answer);
                return Ok(());
            }
            let mut table = Table::new([
                "ROW",
                "STAGE",
                "MESSAGE",
                "CHANNEL",
                "DESTINATION",
                "ATTEMPTS",
                "DEAD AT",
                "CONTROL ID",
                "ERROR",
            ]);
            for d in rows(&answer, "dead_letters") {
                table.row([
                    field(d, "id"),
                    field(d, "stage"),
                    field(d, "message_id"),
                    field(d, "channel_id"),
                    field(d, "destination_name"),
                    field(d, "attempts"),
                    time_field(d, "updated_at"),
                    field(d, "control_id"),
                    one_line(&field(d, "last_error")),
                ]);
            }
            print_table(&table, "no dead letters");
        }
        DeadLetterCommand::Count {
            stage,
            channel,
            destination,
        } => {
            let q = query(&[
                ("stage", Some(stage)),
                ("channel", channel),
                ("destination", destination),
            ]);
            let answer = conn.get(&format!("/v1/dead-letters/count{q}")).await?;
            print_count(conn, &answer);
        }
        DeadLetterCommand::Replay {
            channel,
            destination,
        } => {
            let mut body = json!({});
            if let Some(c) = channel {
                body["channel"] = json!(c);
            }
            if let Some(d) = destination {
                body["destination"] = json!(d);
            }
            let answer = conn.post("/v1/dead-letters/replay", body).await?;
            if conn.json {
                output::print_json(&answer);
            } else {
                outln!("requeued {}", field(&answer, "requeued"));
            }
        }
        DeadLetterCommand::Purge { older_than } => {
            let body = json!({"kind": "dead_letters", "older_than_ms": older_than});
            let answer = conn.post("/v1/retention/purge", body).await?;
            if conn.json {
                output::print_json(&answer);
            } else {
                outln!(
                    "purged {} dead letters older than {}",
                    field(&answer, "purged"),
                    output::age_ms(older_than)
                );
            }
        }
    }
    Ok(())
}

/// `ctl messages ...`.
pub async fn messages(conn: &Conn, command: MessageCommand) -> Result<(), CtlError> {
    match command {
        MessageCommand::Show {
            id,
            body,
            no_record_view,
        } => {
            let q = query(&[
                ("body", body.then(|| "true".to_string())),
                ("record_view", no_record_view.then(|| "false".to_string())),
            ]);
            let answer = conn
                .get(&format!("/v1/messages/{}{q}", encode_segment(&id)))
                .await?;
            if conn.json {
                output::print_json(&answer);
            } else {
                show_message(&answer);
            }
        }
        MessageCommand::Search {
            channel,
            status,
            message_type,
            control_id,
            limit,
            count,
        } => {
            let mut filters = vec![
                ("channel", channel),
                ("status", status),
                ("message_type", message_type),
                ("control_id", control_id),
            ];
            if count {
                let answer = conn
                    .get(&format!("/v1/messages/count{}", query(&filters)))
                    .await?;
                print_count(conn, &answer);
                return Ok(());
            }
            filters.push(("limit", Some(limit.to_string())));
            let answer = conn
                .get(&format!("/v1/messages{}", query(&filters)))
                .await?;
            if conn.json {
                output::print_json(&answer);
                return Ok(());
            }
            let mut table = Table::new([
                "ID",
                "CHANNEL",
                "STATUS",
                "RECEIVED",
                "TYPE",
                "CONTROL ID",
                "SUMMARY",
            ]);
            for m in rows(&answer, "messages") {
                table.row([
                    field(m, "id"),
                    field(m, "channel_id"),
                    field(m, "status"),
                    time_field(m, "received_at"),
                    field(m, "message_type"),
                    field(m, "control_id"),
                    one_line(&field(m, "summary")),
                ]);
            }
            print_table(&table, "no messages");
            if let Some(next) = answer.get("next_cursor").filter(|c| !c.is_null()) {
                outln!("more: older messages start below id {next}");
            }
        }
    }
    Ok(())
}

/// A message's fields, then its rows and events as tables, then its body if it came.
fn show_message(answer: &Value) {
    let m = &answer["message"];
    let mut head = Table::new(["FIELD", "VALUE"]);
    for key in [
        "id",
        "channel_id",
        "status",
        "received_at",
        "message_type",
        "control_id",
        "source_type",
        "summary",
        "error",
    ] {
        let value = if key == "received_at" {
            time_field(m, key)
        } else {
            field(m, key)
        };
        head.row([key.to_string(), one_line(&value)]);
    }
    head.print();
    let mut table = Table::new([
        "ROW",
        "STAGE",
        "DESTINATION",
        "HANDLER",
        "STATUS",
        "ATTEMPTS",
        "UPDATED",
        "ERROR",
    ]);
    for r in rows(answer, "rows") {
        table.row([
            field(r, "id"),
            field(r, "stage"),
            field(r, "destination_name"),
            field(r, "handler_name"),
            field(r, "status"),
            field(r, "attempts"),
            time_field(r, "updated_at"),
            one_line(&field(r, "last_error")),
        ]);
    }
    outln!();
    print_table(&table, "no rows");
    let mut events = Table::new(["AT", "EVENT", "DESTINATION", "DETAIL"]);
    for e in rows(answer, "events") {
        events.row([
            time_field(e, "ts"),
            field(e, "event"),
            field(e, "destination"),
            one_line(&field(e, "detail")),
        ]);
    }
    outln!();
    print_table(&events, "no events");
    if let Some(raw) = m.get("raw").and_then(Value::as_str) {
        outln!("\n{raw}");
    }
}

/// The array under `key`, empty when absent.
fn rows<'a>(answer: &'a Value, key: &str) -> &'a [Value] {
    answer
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn print_count(conn: &Conn, answer: &Value) {
    if conn.json {
        output::print_json(answer);
    } else {
        outln!("{}", field(answer, "count"));
    }
}

fn print_table(table: &Table, none: &str) {
    if table.is_empty() {
        outln!("{none}");
    } else {
        table.print();
    }
}

/// A text on one line, at most 80 characters, so a multi-line error or summary keeps the
/// table's shape.
pub fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() > 80 {
        let cut: String = flat.chars().take(79).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_or_multi_line_texts_become_one_short_line() {
        assert_eq!(one_line("a\nb\rc"), "a b c");
        let long = "x".repeat(100);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), 80);
        assert!(cut.ends_with('…'));
    }
}
