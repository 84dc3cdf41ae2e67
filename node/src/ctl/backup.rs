//! `ctl snapshot save FILE` and `ctl snapshot take`: an online backup of the cluster, like
//! `etcdctl snapshot save`, and a snapshot on demand (docs/SPEC.md §11.3, docs/OPERATIONS.md
//! "Back up and restore").
//!
//! `save` streams `GET /v1/cluster/snapshot` from the leader (another node if the leader does
//! not answer: each catches up with the leader's commit before it snapshots) into `FILE.part`,
//! checks the file end to end (structure and SHA-256, as `raftlane restore` will), and only
//! then renames it to `FILE`: a `FILE` that exists is always a whole, verified backup.

use super::cluster::views;
use super::{Conn, CtlError};
use clap::Subcommand;
use raftlane_client::contract::{SNAPSHOT_INDEX_HEADER, SNAPSHOT_NODE_HEADER};
use serde_json::json;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub enum SnapshotCommand {
    /// Stream a consistent backup of the cluster into FILE (from the leader), verified; it
    /// holds every write acknowledged before the command started.
    Save { file: PathBuf },
    /// Have each endpoint build a snapshot covering everything it applied (its log before it
    /// can then be compacted).
    Take,
}

pub async fn snapshot(conn: &Conn, command: SnapshotCommand) -> Result<(), CtlError> {
    match command {
        SnapshotCommand::Save { file } => save(conn, &file).await,
        SnapshotCommand::Take => take(conn).await,
    }
}

/// The endpoints to ask, the leader's first (as the nodes answering report it).
async fn leader_first(conn: &Conn) -> Vec<String> {
    let seen = views(conn).await;
    let mut order: Vec<String> = seen
        .iter()
        .filter(|v| {
            v.cluster
                .as_ref()
                .is_some_and(|c| c.leader_id == Some(c.node_id))
        })
        .map(|v| v.endpoint.clone())
        .collect();
    for e in &conn.endpoints {
        if !order.contains(e) {
            order.push(e.clone());
        }
    }
    order
}

async fn save(conn: &Conn, file: &Path) -> Result<(), CtlError> {
    let part = part_path(file);
    let mut last = String::from("no endpoint given");
    for endpoint in leader_first(conn).await {
        let mut out = create_private(&part)?;
        let url = format!("{endpoint}/v1/cluster/snapshot");
        let (status, headers, body, written) = match conn.download(&url, &mut out).await {
            Ok(a) => a,
            Err(e) => {
                last = format!("{endpoint}: {e}");
                continue;
            }
        };
        if !status.is_success() {
            let _ = std::fs::remove_file(&part);
            let error = super::api_error(status.as_u16(), &body);
            // Refusals that another node would repeat end the command; a node that cannot
            // serve now (no leader, stopping) lets the next one try.
            if status.as_u16() != 503 {
                return Err(error);
            }
            last = format!("{endpoint}: {error}");
            continue;
        }
        out.sync_all()
            .map_err(|e| CtlError::Usage(format!("cannot write {}: {e}", part.display())))?;
        drop(out);
        let verified = raftlane_raft::restore::verify_backup(&part);
        let (meta, records) = match verified {
            Ok(v) => v,
            Err(e) => {
                let _ = std::fs::remove_file(&part);
                return Err(CtlError::Failed(format!(
                    "the backup received from {endpoint} does not verify: {e}"
                )));
            }
        };
        let checksum = trailer_checksum(&part)
            .map_err(|e| CtlError::Usage(format!("cannot read {}: {e}", part.display())))?;
        std::fs::rename(&part, file).map_err(|e| {
            CtlError::Usage(format!("cannot move the backup to {}: {e}", file.display()))
        })?;
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        let index = meta.last_log_id.map_or(0, |l| l.index);
        if conn.json {
            outln!(
                "{}",
                json!({
                    "file": file.display().to_string(),
                    "index": index,
                    "node_id": header(SNAPSHOT_NODE_HEADER).parse::<u64>().ok(),
                    "records": records,
                    "bytes": written,
                    "sha256": checksum,
                })
            );
        } else {
            outln!(
                "saved {}: index {} (header {}) from node {} at {endpoint}, {records} records, \
                 {written} bytes, sha256 {checksum}",
                file.display(),
                index,
                header(SNAPSHOT_INDEX_HEADER),
                header(SNAPSHOT_NODE_HEADER),
            );
        }
        return Ok(());
    }
    let _ = std::fs::remove_file(&part);
    Err(CtlError::Unreachable(last))
}

async fn take(conn: &Conn) -> Result<(), CtlError> {
    let mut rows = Vec::new();
    for endpoint in &conn.endpoints {
        let url = format!("{endpoint}/v1/cluster/snapshot");
        let taken = conn.post_to(&url).await?;
        rows.push(taken);
    }
    if conn.json {
        outln!("{}", serde_json::Value::Array(rows));
    } else {
        for (endpoint, row) in conn.endpoints.iter().zip(&rows) {
            outln!(
                "{endpoint}: node {} snapshot at index {}",
                row["node_id"],
                row["index"]
            );
        }
    }
    Ok(())
}

/// `FILE.part` beside `FILE`.
fn part_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    file.with_file_name(name)
}

/// Create `path` readable by its owner only (a backup holds every message): a `.part` left
/// by an earlier attempt is removed first, so the mode is always set on creation.
fn create_private(path: &Path) -> Result<std::fs::File, CtlError> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(CtlError::Usage(format!(
                "cannot replace {}: {e}",
                path.display()
            )))
        }
    }
    crate::secret_file::open_private(path)
        .map_err(|e| CtlError::Usage(format!("cannot create {}: {e}", path.display())))
}

/// The SHA-256 the snapshot file ends with (over every byte before it), in hex.
fn trailer_checksum(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::End(-32))?;
    let mut hash = [0u8; 32];
    f.read_exact(&mut hash)?;
    Ok(hex::encode(hash))
}
