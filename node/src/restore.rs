//! `raftlane restore`: lay down one node of a new cluster from a backup written by
//! `raftlane ctl snapshot save` (like `etcdutl snapshot restore`). The work is
//! `raftlane_raft::restore`; this module is its command line and its exit statuses.
//!
//! Restore the same file once per node of the new cluster (same `--peers`, each its own
//! `--id` and `--data-dir`), then start the nodes with those flags and without `--bootstrap`:
//! the membership is in the restored state. A node left out can start empty instead; the
//! leader sends it the snapshot.

use clap::Args;
use raftlane_raft::restore::{restore, RestoreError};
use std::path::PathBuf;

/// `raftlane restore` flags.
#[derive(Args, Debug)]
#[command(after_help = "\
Exit status:
  0   restored: start the node with the same --id, --peers and --data-dir, without --bootstrap
  65  the backup is damaged or not a backup (its checksum or structure does not verify)
  73  the data directory already holds a node (a restore never overwrites one), or cannot be written
  78  the flags are wrong (--peers does not name --id, an unreadable --from)")]
pub struct RestoreArgs {
    /// The backup (`raftlane ctl snapshot save FILE`).
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,
    /// This node's data directory: missing or empty.
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
    /// This node's id in the new cluster.
    #[arg(long)]
    pub id: u64,
    /// The new cluster's voters, `id=host:port,...` (as `raftlane node --peers`).
    #[arg(long, value_name = "PEERS")]
    pub peers: String,
}

/// EX_DATAERR: the backup does not verify.
const EXIT_DAMAGED: i32 = 65;
/// EX_CANTCREAT: the data directory holds a node or cannot be written.
const EXIT_CANNOT_CREATE: i32 = 73;
/// EX_CONFIG: the flags.
const EXIT_CONFIG: i32 = 78;

impl RestoreArgs {
    /// Restore; the process's exit status (the outcome is printed).
    pub async fn run(self) -> i32 {
        let peers = match crate::config::parse_peers(&self.peers) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: --peers: {e}");
                return EXIT_CONFIG;
            }
        };
        if let Err(e) = crate::data_dir::secure(&self.data_dir) {
            eprintln!("error: {e}");
            return EXIT_CANNOT_CREATE;
        }
        match restore(&self.from, &self.data_dir, self.id, &peers).await {
            Ok(done) => {
                let voters: Vec<String> = done.voters.iter().map(u64::to_string).collect();
                println!(
                    "restored {} into {} as node {} of voters {}: index {} (term {}), {} records, \
                     state digest {}",
                    self.from.display(),
                    self.data_dir.display(),
                    self.id,
                    voters.join(","),
                    done.last_log_id.index,
                    done.last_log_id.leader_id.term,
                    done.records,
                    hex::encode(done.digest),
                );
                println!(
                    "next: restore the same file for every other voter, then start each node with \
                     `raftlane node --id N --peers {} --data-dir DIR` and no --bootstrap",
                    self.peers
                );
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                match e {
                    RestoreError::Damaged { .. } | RestoreError::Empty { .. } => EXIT_DAMAGED,
                    RestoreError::Open { .. } | RestoreError::NotInPeers { .. } => EXIT_CONFIG,
                    _ => EXIT_CANNOT_CREATE,
                }
            }
        }
    }
}
