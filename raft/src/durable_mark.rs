//! The log's durable mark: a small file, fsynced apart from the log's RocksDB, that says how far
//! the log reached (its last log id) and which vote it held. Opening the log compares what
//! RocksDB recovered against it, so a log that came back shorter is caught before the node
//! votes or acknowledges anything ([`LogDamage`]).
//!
//! Why a separate file: the log's RocksDB recovers its WAL point-in-time (the only recovery
//! mode that works with recycled WAL files, which the log needs for fast fsyncs, see
//! `log_store.rs`). After a damaged WAL tail it opens silently at the last good record, without
//! the fsynced, acknowledged entries behind the damage (up to ~3,650 entries in a
//! reproduction, noticed only in RocksDB's own LOG). A Raft node that lost acknowledged entries, or
//! its vote, may count towards a quorum for something the cluster no longer has: it must not
//! rejoin as a voter. Nothing inside the damaged database can tell; a file beside it can.
//!
//! What the mark promises is a lower bound: "the log reached at least this". Appends raise it
//! in the background at most every [`RAISE_EVERY`] (an fsync per append would double the log's
//! cost); votes raise it at once (elections are rare, and a forgotten vote is the worst loss);
//! a truncation lowers it **before** the entries go, so a crash between the two leaves the mark
//! below the log, never above it. A damage that loses only the last [`RAISE_EVERY`] of appends
//! may therefore go unseen; one that loses more (or a vote) cannot.

use crate::types::{LogId, Vote};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The mark's file name, inside the log's directory (RocksDB ignores files it does not name).
pub const MARK_FILE: &str = "RAFTLANE-DURABLE-MARK.json";
/// How often appends may raise the mark: the most of a damaged tail that can go unseen.
pub const RAISE_EVERY: Duration = Duration::from_millis(200);

/// What the log had durably: its last log id and its vote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    pub last_log: Option<LogId>,
    pub vote: Option<Vote>,
}

/// The log recovered shorter than its mark: entries (or the vote) this node had fsynced, and
/// may have acknowledged, are gone.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the raft log lost {lost} fsynced entries: it reached {marked} (last log id before the \
     restart) but opened at {found}; lost range: indexes {first_lost}..={last_lost}{vote}. \
     This node may have acknowledged those entries, so it must not rejoin as a voter: remove it \
     from the voters (POST /v1/cluster/membership without it), empty its data directory, \
     start it again and add it back as a learner (POST /v1/cluster/learners), then as a voter"
)]
pub struct LogDamage {
    /// The last log id the mark recorded (`term-node-index`).
    pub marked: String,
    /// The last log id found after opening (`none` for an empty log).
    pub found: String,
    /// Entries lost, at least.
    pub lost: u64,
    pub first_lost: u64,
    pub last_lost: u64,
    /// `""`, or a sentence about a vote that went back.
    vote: String,
}

impl Mark {
    /// Compare what the log recovered (`found`) with this mark; `Err` when it lost something.
    pub fn check(&self, found: &Mark) -> Result<(), LogDamage> {
        let marked_index = self.last_log.map(|l| l.index);
        let found_index = found.last_log.map(|l| l.index);
        let log_lost = match (marked_index, found_index) {
            (Some(m), None) => Some((0, m)),
            (Some(m), Some(f)) if f < m => Some((f + 1, m)),
            _ => None,
        };
        // Votes only ever grow (openraft's partial order); one that is not at least the marked
        // one went back.
        let vote_lost = match (&self.vote, &found.vote) {
            (Some(m), Some(f)) => !matches!(
                f.partial_cmp(m),
                Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
            ),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if log_lost.is_none() && !vote_lost {
            return Ok(());
        }
        let (first_lost, last_lost) = log_lost.unwrap_or((0, 0));
        let lost = if log_lost.is_some() {
            last_lost - first_lost + 1
        } else {
            0
        };
        let vote = if vote_lost {
            format!(
                "; the vote went back from {} to {}",
                show(self.vote.as_ref()),
                show(found.vote.as_ref())
            )
        } else {
            String::new()
        };
        Err(LogDamage {
            marked: show(self.last_log.as_ref()),
            found: show(found.last_log.as_ref()),
            lost,
            first_lost,
            last_lost,
            vote,
        })
    }
}

fn show<T: std::fmt::Display>(v: Option<&T>) -> String {
    v.map_or_else(|| "none".to_string(), ToString::to_string)
}

#[derive(Debug)]
struct State {
    /// What the file says.
    written: Mark,
    /// What it should say next (raised by appends, written by [`DurableMark::raise_soon`]).
    pending: Mark,
    last_write: Option<Instant>,
}

/// The mark file of one log, shared by the log store and its background writes.
#[derive(Debug)]
pub struct DurableMark {
    path: PathBuf,
    /// Held while the file is written, so a lowering never races a raising.
    state: Mutex<State>,
    /// A background write is queued or running.
    queued: AtomicBool,
}

impl DurableMark {
    /// The mark of the log in `dir`, and what its file says (`None`: no file yet, a new log or
    /// one written before the mark existed).
    pub fn load(dir: &Path) -> std::io::Result<(Arc<Self>, Option<Mark>)> {
        let path = dir.join(MARK_FILE);
        let on_disk = match std::fs::read(&path) {
            Ok(bytes) => Some(serde_json::from_slice::<Mark>(&bytes).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} is not a durable mark: {e}", path.display()),
                )
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let written = on_disk.unwrap_or_default();
        let mark = Arc::new(Self {
            path,
            state: Mutex::new(State {
                written,
                pending: written,
                last_write: None,
            }),
            queued: AtomicBool::new(false),
        });
        Ok((mark, on_disk))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Write `mark` now (fsynced), whatever it is: at open, after a truncation, after a vote.
    pub fn set_now(&self, update: impl FnOnce(&mut Mark)) -> std::io::Result<()> {
        let mut state = self.lock();
        update(&mut state.pending);
        let mark = state.pending;
        write_file(&self.path, &mark)?;
        state.written = mark;
        state.last_write = Some(Instant::now());
        Ok(())
    }

    /// After an append was fsynced: raise the mark's last log id to `last`, written in the
    /// background unless it was written less than [`RAISE_EVERY`] ago (the next append or
    /// [`Self::flush`] writes it then).
    pub fn raise_soon(self: &Arc<Self>, last: LogId) {
        let due = {
            let mut state = self.lock();
            if state.pending.last_log.is_none_or(|l| l < last) {
                state.pending.last_log = Some(last);
            }
            state.pending != state.written
                && state.last_write.is_none_or(|t| t.elapsed() >= RAISE_EVERY)
        };
        if due && !self.queued.swap(true, Ordering::AcqRel) {
            let mark = self.clone();
            // Off the async executor; the log does not wait for it.
            tokio::task::spawn_blocking(move || {
                mark.queued.store(false, Ordering::Release);
                if let Err(e) = mark.flush() {
                    tracing::warn!(path = %mark.path.display(), error = %e, "cannot write the log's durable mark");
                }
            });
        }
    }

    /// Write the pending mark if the file is behind it (at close, and from background raises).
    pub fn flush(&self) -> std::io::Result<()> {
        let mut state = self.lock();
        if state.pending == state.written {
            return Ok(());
        }
        let mark = state.pending;
        write_file(&self.path, &mark)?;
        state.written = mark;
        state.last_write = Some(Instant::now());
        Ok(())
    }
}

/// Replace the file atomically: write a temporary file, fsync it, rename it over the mark,
/// fsync the directory (so the rename itself survives a power loss).
fn write_file(path: &Path, mark: &Mark) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(mark).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    fn id(term: u64, index: u64) -> Option<LogId> {
        Some(LogId::new(CommittedLeaderId::new(term, 1), index))
    }

    #[test]
    fn a_log_at_or_past_its_mark_is_whole() {
        let mark = Mark {
            last_log: id(2, 10),
            vote: Some(Vote::new(2, 1)),
        };
        assert_eq!(mark.check(&mark), Ok(()));
        let longer = Mark {
            last_log: id(3, 12),
            vote: Some(Vote::new(3, 2)),
        };
        assert_eq!(mark.check(&longer), Ok(()));
        assert_eq!(Mark::default().check(&Mark::default()), Ok(()));
    }

    #[test]
    fn a_shorter_log_or_an_older_vote_is_damage_naming_the_lost_range() {
        let mark = Mark {
            last_log: id(2, 10),
            vote: Some(Vote::new(2, 1)),
        };
        let shorter = Mark {
            last_log: id(2, 6),
            vote: Some(Vote::new(2, 1)),
        };
        let e = mark.check(&shorter).unwrap_err();
        assert_eq!((e.lost, e.first_lost, e.last_lost), (4, 7, 10));
        assert!(e.to_string().contains("indexes 7..=10"), "{e}");
        let empty = Mark::default();
        let e = mark.check(&empty).unwrap_err();
        assert_eq!((e.lost, e.first_lost, e.last_lost), (11, 0, 10));
        let older_vote = Mark {
            last_log: id(2, 10),
            vote: Some(Vote::new(1, 1)),
        };
        let e = mark.check(&older_vote).unwrap_err();
        assert_eq!(e.lost, 0);
        assert!(e.to_string().contains("the vote went back"), "{e}");
    }
}
