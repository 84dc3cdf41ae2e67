//! `ctl tokens`, `ctl config`, `ctl approvals`, `ctl audit`: the admin routes (docs/SPEC.md
//! §9.1, §6, §9.5, §7).

use super::output::{self, field, opt, time_field, Table};
use super::{query, Conn, CtlError};
use clap::Subcommand;
use raftlane_client::contract::path::encode_segment;
use raftlane_client::contract::ConfigDoc;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Every principal (never a token).
    List,
    /// Create or rotate a principal's token; the token is printed once.
    Create {
        name: String,
        /// viewer, worker, engine, operator or admin.
        #[arg(long)]
        role: String,
        /// Limit it to these channels (repeat, or comma-separated); default every channel.
        #[arg(long = "channel", value_delimiter = ',')]
        channels: Vec<String>,
        /// Limit its audit reads and writes to these orgs.
        #[arg(long = "org", value_delimiter = ',')]
        orgs: Vec<String>,
    },
    /// Revoke a principal.
    Revoke { name: String },
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the current configuration document (its version on stderr).
    Get {
        /// A past version instead of the current one.
        #[arg(long)]
        version: Option<u64>,
    },
    /// Replace the configuration with FILE (JSON: the document, or a `config get --json`
    /// answer), compare-and-set against the version it was based on.
    Put {
        file: PathBuf,
        /// The version FILE was edited from. Default: the `version` in FILE (a `config get
        /// --json` answer), else the current version (then a concurrent change is overwritten).
        #[arg(long)]
        if_version: Option<u64>,
    },
    /// What FILE would change in the current configuration.
    Diff { file: PathBuf },
}

#[derive(Subcommand, Debug)]
pub enum ApprovalCommand {
    /// Approvals pending and unexpired, newest first.
    List {
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Approve or reject approval ID (as a principal other than its requester).
    Decide {
        id: u64,
        #[arg(value_enum)]
        decision: Decision,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Decision {
    Approve,
    Reject,
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Verify ORG's chain (exit 1 when it does not verify).
    Verify { org: String },
    /// ORG's last rows, oldest first.
    Tail {
        org: String,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: u64,
    },
}

/// `ctl tokens ...`.
pub async fn tokens(conn: &Conn, command: TokenCommand) -> Result<(), CtlError> {
    match command {
        TokenCommand::List => {
            let answer = conn.get("/v1/tokens").await?;
            if conn.json {
                output::print_json(&answer);
                return Ok(());
            }
            let mut table = Table::new(["NAME", "ROLE", "CHANNELS", "CREATED"]);
            for t in answer["tokens"].as_array().into_iter().flatten() {
                let channels = match t.get("channels").and_then(Value::as_array) {
                    Some(list) => list
                        .iter()
                        .map(|c| output::cell(Some(c)))
                        .collect::<Vec<_>>()
                        .join(","),
                    None => "*".to_string(),
                };
                table.row([
                    field(t, "name"),
                    field(t, "role"),
                    channels,
                    time_field(t, "created_at"),
                ]);
            }
            if table.is_empty() {
                outln!("no principals (only the bootstrap admin token)");
            } else {
                table.print();
            }
        }
        TokenCommand::Create {
            name,
            role,
            channels,
            orgs,
        } => {
            let mut body = json!({"name": name, "role": role});
            if !channels.is_empty() {
                body["channels"] = json!(channels);
            }
            if !orgs.is_empty() {
                body["orgs"] = json!(orgs);
            }
            let answer = conn.post("/v1/tokens", body).await?;
            if conn.json {
                output::print_json(&answer);
            } else {
                eprintln!(
                    "token of {} (role {}), shown once:",
                    field(&answer, "name"),
                    field(&answer, "role")
                );
                outln!("{}", field(&answer, "token"));
            }
        }
        TokenCommand::Revoke { name } => {
            let answer = conn
                .delete(&format!("/v1/tokens/{}", encode_segment(&name)))
                .await?;
            if conn.json {
                output::print_json(&answer);
            } else if answer["revoked"] == json!(true) {
                outln!("revoked {name}");
            } else {
                outln!("{name} was not a principal");
            }
        }
    }
    Ok(())
}

/// The document in `file` (JSON: a configuration document, or a `GET /v1/config` answer with
/// its `version`), checked against the document's shape, and that version.
pub fn read_config_file(path: &Path) -> Result<(ConfigDoc, Option<u64>), CtlError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CtlError::Usage(format!("cannot read {}: {e}", path.display())))?;
    parse_config(&text).map_err(|e| CtlError::Usage(format!("{}: {e}", path.display())))
}

/// See [`read_config_file`].
pub fn parse_config(text: &str) -> Result<(ConfigDoc, Option<u64>), String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let (doc, version) = match (value.get("config"), value.get("version")) {
        (Some(doc), Some(v)) if value.get("set_by").is_some() => (doc.clone(), v.as_u64()),
        _ => (value, None),
    };
    let doc: ConfigDoc =
        serde_json::from_value(doc).map_err(|e| format!("not a configuration document: {e}"))?;
    Ok((doc, version))
}

/// Each difference between two JSON values, as `path: old -> new` lines (`+ path: new` for an
/// added member, `- path: old` for a removed one); objects are compared member by member,
/// anything else whole.
pub fn diff(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(&p, x, y, out),
                    (Some(x), None) => out.push(format!("- {p}: {x}")),
                    (None, Some(y)) => out.push(format!("+ {p}: {y}")),
                    (None, None) => {}
                }
            }
        }
        (a, b) if a != b => out.push(format!("~ {path}: {a} -> {b}")),
        _ => {}
    }
}

/// `ctl config ...`.
pub async fn config(conn: &Conn, command: ConfigCommand) -> Result<(), CtlError> {
    match command {
        ConfigCommand::Get { version } => {
            let path = match version {
                Some(v) => format!("/v1/config/versions/{v}"),
                None => "/v1/config".to_string(),
            };
            let answer = conn.get(&path).await?;
            if conn.json {
                output::print_json(&answer);
            } else {
                match answer["set_at"].as_u64() {
                    Some(at) if at > 0 => eprintln!(
                        "version {}, set by {} at {}",
                        field(&answer, "version"),
                        field(&answer, "set_by"),
                        output::time_ms(at)
                    ),
                    _ => eprintln!("version {} (never set)", field(&answer, "version")),
                }
                output::print_json(&answer["config"]);
            }
        }
        ConfigCommand::Put { file, if_version } => {
            let (doc, file_version) = read_config_file(&file)?;
            let expected = match if_version.or(file_version) {
                Some(v) => v,
                None => current_version(conn).await?,
            };
            let client = conn.client(None);
            match client.put_config(expected, &doc).await {
                Ok(version) => {
                    if conn.json {
                        output::print_json(&json!({"version": version}));
                    } else {
                        outln!("configuration version {version} (was {expected})");
                    }
                }
                Err(e) if e.status() == Some(412) => {
                    return Err(CtlError::Failed(format!(
                        "the configuration changed: it is at version {} and {} was based on \
                         version {expected}; read it again (ctl config get) and reapply",
                        opt(e.current_version()),
                        file.display()
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        }
        ConfigCommand::Diff { file } => {
            let (doc, _) = read_config_file(&file)?;
            let answer = conn.get("/v1/config").await?;
            let current: ConfigDoc = serde_json::from_value(answer["config"].clone())
                .map_err(|e| CtlError::Failed(format!("unexpected answer: {e}")))?;
            // Both through the document's type, so a member left out of the file and one at
            // its default in the answer compare equal.
            let as_json = |d: &ConfigDoc| serde_json::to_value(d).unwrap_or(Value::Null);
            let mut changes = Vec::new();
            diff("", &as_json(&current), &as_json(&doc), &mut changes);
            if conn.json {
                output::print_json(&json!({
                    "version": answer["version"],
                    "same": changes.is_empty(),
                    "changes": changes,
                }));
            } else if changes.is_empty() {
                outln!("no change from version {}", field(&answer, "version"));
            } else {
                outln!("changes from version {}:", field(&answer, "version"));
                for c in &changes {
                    outln!("{c}");
                }
            }
        }
    }
    Ok(())
}

async fn current_version(conn: &Conn) -> Result<u64, CtlError> {
    conn.get("/v1/config")
        .await?
        .get("version")
        .and_then(Value::as_u64)
        .ok_or_else(|| CtlError::Failed("unexpected answer: no version".into()))
}

/// `ctl approvals ...`.
pub async fn approvals(conn: &Conn, command: ApprovalCommand) -> Result<(), CtlError> {
    match command {
        ApprovalCommand::List { limit } => {
            let q = query(&[
                ("status", Some("pending".to_string())),
                ("limit", Some(limit.to_string())),
            ]);
            let answer = conn.get(&format!("/v1/approvals{q}")).await?;
            if conn.json {
                output::print_json(&answer);
                return Ok(());
            }
            let mut table = Table::new([
                "ID",
                "OPERATION",
                "REQUESTER",
                "REQUESTED",
                "EXPIRES",
                "PARAMS",
            ]);
            for a in answer["approvals"].as_array().into_iter().flatten() {
                table.row([
                    field(a, "id"),
                    field(a, "operation"),
                    field(a, "requester"),
                    time_field(a, "requested_at"),
                    time_field(a, "expires_at"),
                    super::messages::one_line(&field(a, "params")),
                ]);
            }
            if table.is_empty() {
                outln!("no pending approvals");
            } else {
                table.print();
            }
        }
        ApprovalCommand::Decide { id, decision } => {
            let approve = matches!(decision, Decision::Approve);
            let answer = conn
                .post(
                    &format!("/v1/approvals/{id}/decide"),
                    json!({ "approve": approve }),
                )
                .await?;
            if conn.json {
                output::print_json(&answer);
            } else {
                let what = if approve { "approved" } else { "rejected" };
                outln!("approval {id} {what}");
            }
        }
    }
    Ok(())
}

/// `ctl audit ...`.
pub async fn audit(conn: &Conn, command: AuditCommand) -> Result<(), CtlError> {
    match command {
        AuditCommand::Verify { org } => {
            let q = query(&[("org", Some(org.clone()))]);
            let answer = conn.get(&format!("/v1/audit/verify{q}")).await?;
            let ok = answer["ok"] == json!(true);
            if conn.json {
                output::print_json(&answer);
            } else if ok {
                outln!(
                    "{org}: chain verified, {} rows in {} eras, head {}",
                    field(&answer, "count"),
                    field(&answer, "eras"),
                    field(&answer, "head_hash")
                );
            }
            if !ok {
                return Err(CtlError::Failed(format!(
                    "{org}: chain does not verify: first bad row {}: {}",
                    field(&answer, "first_bad_seq"),
                    field(&answer, "reason")
                )));
            }
        }
        AuditCommand::Tail { org, lines } => {
            let anchor = conn
                .get(&format!(
                    "/v1/audit/anchor{}",
                    query(&[("org", Some(org.clone()))])
                ))
                .await?;
            let count = anchor["count"].as_u64().unwrap_or(0);
            let q = query(&[
                ("org", Some(org)),
                ("from", Some(count.saturating_sub(lines).to_string())),
                ("limit", Some(lines.max(1).to_string())),
            ]);
            let answer = conn.get(&format!("/v1/audit{q}")).await?;
            if conn.json {
                output::print_json(&answer);
                return Ok(());
            }
            let mut table = Table::new([
                "SEQ",
                "AT",
                "ACTION",
                "PRINCIPAL",
                "ACTOR",
                "CHANNEL",
                "DETAIL",
            ]);
            for r in answer["rows"].as_array().into_iter().flatten() {
                table.row([
                    field(r, "seq"),
                    time_field(r, "ts"),
                    field(r, "action"),
                    field(r, "principal"),
                    field(r, "actor"),
                    field(r, "channel"),
                    super::messages::one_line(&field(r, "detail")),
                ]);
            }
            if table.is_empty() {
                outln!("no audit rows");
            } else {
                table.print();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_file_is_a_document_or_a_get_answer_with_its_version() {
        let (doc, v) = parse_config(r#"{"channels": {"adt": {}}}"#).unwrap();
        assert!(doc.channels.contains_key("adt"));
        assert_eq!(v, None);
        let answer = r#"{"version": 7, "set_by": "admin", "set_at": 1,
                         "config": {"destinations": {"emr": {"url": "mllp://emr"}}}}"#;
        let (doc, v) = parse_config(answer).unwrap();
        assert!(doc.destinations.contains_key("emr"));
        assert_eq!(v, Some(7));
        assert!(parse_config(r#"{"chanels": {}}"#)
            .unwrap_err()
            .contains("unknown field"));
        assert!(parse_config("not json").is_err());
    }

    #[test]
    fn diff_names_each_changed_added_and_removed_member() {
        let old = json!({"channels": {"adt": {"description": "a"}, "old": {}}, "n": 1});
        let new = json!({"channels": {"adt": {"description": "b"}, "lab": {}}, "n": 1});
        let mut out = Vec::new();
        diff("", &old, &new, &mut out);
        assert_eq!(
            out,
            [
                "~ channels.adt.description: \"a\" -> \"b\"",
                "+ channels.lab: {}",
                "- channels.old: {}",
            ]
        );
        let mut none = Vec::new();
        diff("", &old, &old, &mut none);
        assert!(none.is_empty());
    }
}
