//! openraft's `RaftStateMachine` (storage v2) over raftlane's `StateMachine<RocksStore>`.
//!
//! - **Apply**: committed entries are applied in batches through `StateMachine::apply_batch`,
//!   which writes the effects of every command, the state machine's counters, openraft's
//!   `last_applied` log id and (when the batch holds one) the new membership in one atomic
//!   RocksDB write. After a crash the state therefore always describes exactly the entries up to
//!   its recorded `last_applied`, and openraft replays the rest from the log.
//! - **Snapshots** are files in `<data_dir>/snapshots` (format in [`crate::snapshot`]). Building
//!   one takes a RocksDB checkpoint of the state (hard links, a consistent point in time) under a
//!   short read lock, then streams the checkpoint's `export()` into a file while applying goes on.
//! - **Installing** a received snapshot verifies its checksum first, keeps it as the new current
//!   snapshot, then replaces the state with `StateMachine::install`. That replacement is not
//!   atomic on disk (the store drops its tables and refills them), so an *install marker* file is
//!   written before and removed after: a node that crashes part-way re-installs from the kept
//!   snapshot file when it opens. For the same reason, a state found behind the current snapshot
//!   at startup (e.g. unsynced writes lost to a power cut after the log was purged) is restored
//!   from that snapshot.
//!
//! Everything that touches RocksDB or files runs on tokio's blocking pool, never on the async
//! executor threads (a 2-core box has only two of those).

use crate::snapshot::{self, SnapshotFileError, SnapshotReader, SnapshotWriter};
use crate::types::{
    Entry, EntryPayload, LogId, Snapshot, SnapshotMeta, StorageError, StoredMembership, TypeConfig,
};
use crate::util::{sync_dir, ReleaseProbe};
use openraft::storage::RaftStateMachine;
use openraft::{OptionalSend, RaftSnapshotBuilder, StorageIOError};
use raftlane_statemachine::machine::{BatchItem, StateMachine};
use raftlane_statemachine::rocks::{Mirroring, RocksStore};
use raftlane_statemachine::storage::verify::{self, Damage};
use raftlane_statemachine::storage::StoreError;
use raftlane_statemachine::wire::LogFormat;
use raftlane_statemachine::{Outcome, Response};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `external` key of openraft's last applied log id (JSON `LogId`).
pub const EXT_LAST_APPLIED: &[u8] = b"raft.last_applied";
/// `external` key of the last applied membership (JSON `StoredMembership`).
pub const EXT_MEMBERSHIP: &[u8] = b"raft.membership";
/// Largest number of entries applied in one atomic write batch.
const APPLY_CHUNK: usize = 1024;
const INSTALL_MARKER: &str = "sm.installing";

/// Errors of the state-machine side.
#[derive(Debug, thiserror::Error)]
pub enum SmError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotFileError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("corrupt raft metadata in the state: {0}")]
    Meta(String),
    #[error("state machine lock poisoned (a previous apply panicked)")]
    Poisoned,
    #[error("snapshot does not match its metadata: {0}")]
    Mismatch(String),
    #[error("background task failed: {0}")]
    Task(String),
    /// The state's RocksDB failed a checksum at open ([`verify`]): the node must not start on
    /// it (`StartError::StateDamaged`).
    #[error("the state store is damaged: {0}")]
    Damaged(#[from] Damage),
}

/// How long the checksum scan at open may read the state: beyond it the node starts with the
/// rest unverified (and says so), rather than keep a large state's node down for minutes.
pub const VERIFY_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

/// Open the state's RocksDB and read all of it once with checksums verified ([`verify`]).
fn open_verified(dir: &Path) -> Result<RocksStore, SmError> {
    let store = RocksStore::open(dir).map_err(|e| match Damage::at_open(&e.to_string()) {
        Some(damage) => SmError::Damaged(damage),
        None => SmError::Store(e),
    })?;
    let verified = verify::verify_checksums(&store, VERIFY_BUDGET)?;
    if verified.complete {
        tracing::info!(
            entries = verified.entries,
            bytes = verified.bytes,
            ms = verified.elapsed.as_millis() as u64,
            "state store checksums verified"
        );
    } else {
        tracing::warn!(
            tables = verified.tables,
            entries = verified.entries,
            bytes = verified.bytes,
            budget_s = VERIFY_BUDGET.as_secs(),
            "state store checksums verified only partly: the scan ran out of its time budget; \
             the rest is checked when it is read"
        );
    }
    Ok(store)
}

/// Counters of the state-machine side (tests and metrics read them).
#[derive(Debug, Default)]
pub struct SmStats {
    /// Snapshots built locally.
    pub snapshots_built: AtomicU64,
    /// Snapshots received from a leader and installed (including re-installs at startup).
    pub snapshots_installed: AtomicU64,
    /// `apply_batch` calls.
    pub apply_batches: AtomicU64,
    /// Entries applied.
    pub applied_entries: AtomicU64,
    /// Microseconds spent applying them (`apply_batch` of the state machine, storage writes
    /// included): over `applied_entries`, what one entry costs each replica.
    pub apply_micros: AtomicU64,
}

/// Where the state machine keeps its files under a node's data directory.
#[derive(Debug, Clone)]
pub struct SmPaths {
    /// `<data_dir>/sm`: the state's RocksDB.
    pub sm_dir: PathBuf,
    /// `<data_dir>/snapshots`: snapshot files, checkpoints and temporary files.
    pub snapshot_dir: PathBuf,
    /// `<data_dir>/sm.installing`: present while a snapshot install is in progress.
    pub install_marker: PathBuf,
}

impl SmPaths {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            sm_dir: data_dir.join("sm"),
            snapshot_dir: data_dir.join("snapshots"),
            install_marker: data_dir.join(INSTALL_MARKER),
        }
    }
}

#[derive(Debug, Clone)]
struct CurrentSnapshot {
    meta: SnapshotMeta,
    path: PathBuf,
}

/// State shared by the adapter, its snapshot builders and the node's read handle.
pub(crate) struct SmShared {
    sm: RwLock<StateMachine<RocksStore>>,
    paths: SmPaths,
    current: Mutex<Option<CurrentSnapshot>>,
    stats: Arc<SmStats>,
    seq: AtomicU64,
    /// The cluster's log format as the state last said (docs/SPEC.md §2.8): what this node
    /// writes when it leads. Kept here so a proposal does not read the state for it.
    log_format: AtomicU32,
}

fn meta_err(e: impl std::fmt::Display) -> SmError {
    SmError::Meta(e.to_string())
}

/// openraft's view of what the state contains: last applied log id and membership.
fn applied_state(
    sm: &StateMachine<RocksStore>,
) -> Result<(Option<LogId>, StoredMembership), SmError> {
    let last = match sm.external(EXT_LAST_APPLIED)? {
        Some(bytes) => Some(serde_json::from_slice::<LogId>(&bytes).map_err(meta_err)?),
        None => None,
    };
    let membership = match sm.external(EXT_MEMBERSHIP)? {
        Some(bytes) => serde_json::from_slice::<StoredMembership>(&bytes).map_err(meta_err)?,
        None => StoredMembership::default(),
    };
    Ok((last, membership))
}

/// `(key, value or delete)` pairs written through `apply_batch`'s `external`.
type Externals = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Whether the entry at `index` is past the state's `last_applied` (0 = nothing applied yet:
/// openraft's first membership entry sits at index 0).
fn is_new(index: u64, last_applied: u64) -> bool {
    index > last_applied || last_applied == 0
}

fn externals(
    last: &Option<LogId>,
    membership: Option<&StoredMembership>,
) -> Result<Externals, SmError> {
    let mut ext = Vec::with_capacity(2);
    if let Some(last) = last {
        ext.push((
            EXT_LAST_APPLIED.to_vec(),
            Some(serde_json::to_vec(last).map_err(meta_err)?),
        ));
    }
    if let Some(m) = membership {
        ext.push((
            EXT_MEMBERSHIP.to_vec(),
            Some(serde_json::to_vec(m).map_err(meta_err)?),
        ));
    }
    Ok(ext)
}

pub(crate) fn snapshot_file_name(meta: &SnapshotMeta, unique: u64) -> String {
    let index = meta.last_log_id.map(|l| l.index).unwrap_or(0);
    format!("snap-{index:020}-{unique:016x}.snap")
}

/// Write `contents` to `path` so that after a crash it is either absent or complete.
fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp)?;
        std::io::Write::write_all(&mut f, contents)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    sync_dir(dir)
}

impl SmShared {
    fn read_sm(&self) -> Result<RwLockReadGuard<'_, StateMachine<RocksStore>>, SmError> {
        self.sm.read().map_err(|_| SmError::Poisoned)
    }

    fn write_sm(&self) -> Result<RwLockWriteGuard<'_, StateMachine<RocksStore>>, SmError> {
        self.sm.write().map_err(|_| SmError::Poisoned)
    }

    /// Take the cluster's log format from `sm` (after it opened, applied or installed).
    fn note_log_format(&self, sm: &StateMachine<RocksStore>) -> Result<(), SmError> {
        let format = sm.read().log_format()?;
        self.log_format.store(format, Ordering::Relaxed);
        Ok(())
    }

    /// A number unique within this process run and, with the time mixed in, across restarts
    /// (for temporary and snapshot file names and snapshot ids).
    fn unique(&self) -> u64 {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        (crate::util::now_ms() << 16) ^ n
    }

    fn current(&self) -> Option<CurrentSnapshot> {
        self.current
            .lock()
            .map(|c| c.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Make `(meta, path)` the current snapshot unless a newer one already is; delete whichever
    /// file loses. Open handles to a deleted file (a transfer in progress) stay readable.
    fn set_current(&self, meta: SnapshotMeta, path: PathBuf) {
        let mut cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let loser = match cur.as_ref() {
            Some(c) if c.meta.last_log_id > meta.last_log_id => Some(path),
            _ => cur
                .replace(CurrentSnapshot { meta, path })
                .map(|old| old.path),
        };
        if let Some(loser) = loser {
            if cur.as_ref().map(|c| &c.path) != Some(&loser) {
                if let Err(e) = fs::remove_file(&loser) {
                    tracing::warn!(path = %loser.display(), error = %e, "cannot remove old snapshot");
                }
            }
        }
    }

    fn apply_entries(&self, entries: &[Entry]) -> Result<Vec<Response>, SmError> {
        let mut out = Vec::with_capacity(entries.len());
        let mut sm = self.write_sm()?;
        for chunk in entries.chunks(APPLY_CHUNK) {
            let mut items = Vec::with_capacity(chunk.len());
            let mut membership = None;
            for entry in chunk {
                let index = entry.log_id.index;
                match &entry.payload {
                    EntryPayload::Blank => items.push(BatchItem::Noop { index }),
                    EntryPayload::Normal(envelope) => {
                        items.push(BatchItem::Command { index, envelope })
                    }
                    EntryPayload::Membership(m) => {
                        items.push(BatchItem::Noop { index });
                        if is_new(index, sm.last_applied()) {
                            membership = Some(StoredMembership::new(Some(entry.log_id), m.clone()));
                        }
                    }
                }
            }
            // Entries re-delivered at or below `last_applied` are skipped by the state machine;
            // the recorded log id and membership must not move back either.
            let last = chunk
                .last()
                .map(|e| e.log_id)
                .filter(|l| is_new(l.index, sm.last_applied()));
            let ext = externals(&last, membership.as_ref())?;
            let started = std::time::Instant::now();
            let responses = sm.apply_batch(&items, &ext)?;
            self.stats
                .apply_micros
                .fetch_add(crate::util::micros_since(started), Ordering::Relaxed);
            // openraft wants one response per entry; blank and membership entries (and entries
            // skipped as already applied, which only happens on replay) answer `Done`.
            out.extend(
                responses
                    .into_iter()
                    .map(|r| r.unwrap_or(Ok(Outcome::Done))),
            );
            self.stats.apply_batches.fetch_add(1, Ordering::Relaxed);
            self.stats
                .applied_entries
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        let format_changes = entries.iter().any(|e| match &e.payload {
            EntryPayload::Normal(envelope) => envelope.command.sets_log_format(),
            _ => false,
        });
        if format_changes {
            self.note_log_format(&sm)?;
        }
        Ok(out)
    }

    /// Build a snapshot from a checkpoint of the current state; returns it with an open handle
    /// (opened before it becomes current, since a newer snapshot may replace and unlink it at
    /// any moment; the handle stays valid).
    fn build_snapshot(&self) -> Result<(SnapshotMeta, File), SmError> {
        let unique = self.unique();
        let dir = &self.paths.snapshot_dir;
        let cp_dir = dir.join(format!("cp-{unique:016x}"));
        {
            let sm = self.read_sm()?;
            sm.store().checkpoint(&cp_dir)?;
        }
        let result = (|| {
            // Read once, start to end: no point loading the in-memory indexes first.
            let cp = StateMachine::open(RocksStore::open_with(&cp_dir, Mirroring::Off)?)?;
            let (last_log_id, last_membership) = applied_state(&cp)?;
            let snapshot_id = match &last_log_id {
                Some(l) => format!("{}-{}-{unique:x}", l.leader_id, l.index),
                None => format!("none-{unique:x}"),
            };
            let meta = SnapshotMeta {
                last_log_id,
                last_membership,
                snapshot_id,
            };
            let tmp = dir.join(format!("build-{unique:016x}.tmp"));
            let mut writer = SnapshotWriter::create(&tmp, &meta)?;
            for item in cp.export() {
                let (table, key, value) = item?;
                writer.push(table, &key, &value)?;
            }
            let summary = writer.finish()?;
            let path = dir.join(snapshot_file_name(&meta, unique));
            fs::rename(&tmp, &path)?;
            sync_dir(dir)?;
            tracing::info!(snapshot = %meta, records = summary.records, bytes = summary.bytes, "built snapshot");
            let file = File::open(&path)?;
            Ok::<_, SmError>((CurrentSnapshot { meta, path }, file))
        })();
        if let Err(e) = fs::remove_dir_all(&cp_dir) {
            tracing::warn!(dir = %cp_dir.display(), error = %e, "cannot remove checkpoint");
        }
        let (built, file) = result?;
        self.stats.snapshots_built.fetch_add(1, Ordering::Relaxed);
        self.set_current(built.meta.clone(), built.path);
        Ok((built.meta, file))
    }

    /// Copy a received snapshot into a file of our own, verify it, make it current and install it.
    fn install_received(&self, meta: &SnapshotMeta, mut received: File) -> Result<(), SmError> {
        let unique = self.unique();
        let dir = &self.paths.snapshot_dir;
        let tmp = dir.join(format!("inst-{unique:016x}.tmp"));
        let copy = (|| {
            std::io::Seek::seek(&mut received, std::io::SeekFrom::Start(0))?;
            let mut out = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            std::io::copy(&mut received, &mut out)?;
            out.sync_all()?;
            let (file_meta, records) = snapshot::verify_file(File::open(&tmp)?)?;
            if file_meta.last_log_id != meta.last_log_id
                || file_meta.last_membership != meta.last_membership
            {
                return Err(SmError::Mismatch(format!(
                    "file holds {file_meta}, expected {meta}"
                )));
            }
            let path = dir.join(snapshot_file_name(meta, unique));
            fs::rename(&tmp, &path)?;
            sync_dir(dir)?;
            Ok::<_, SmError>((path, records))
        })();
        let (path, records) = match copy {
            Ok(x) => x,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        };
        tracing::info!(snapshot = %meta, records, "received snapshot verified; installing");
        self.install_file(meta, &path)?;
        self.set_current(meta.clone(), path);
        Ok(())
    }

    /// Replace the state with the (verified) snapshot file at `path`, crash-safely.
    fn install_file(&self, meta: &SnapshotMeta, path: &Path) -> Result<(), SmError> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| SmError::Mismatch(format!("bad snapshot path {}", path.display())))?;
        write_atomic(&self.paths.install_marker, name.as_bytes())?;

        let mut sm = self.write_sm()?;
        let mut reader = SnapshotReader::open(path)?;
        let mut failure: Option<SnapshotFileError> = None;
        let records = std::iter::from_fn(|| match reader.next_record() {
            Ok(r) => r,
            Err(e) => {
                failure = Some(e);
                None
            }
        });
        sm.install(records)?;
        self.note_log_format(&sm)?;
        if let Some(e) = failure {
            // The state is now partial; the marker stays so the next start installs again.
            return Err(e.into());
        }
        // The file's own metadata is what the data describes; make openraft's keys say exactly
        // what `meta` says (they should already).
        let (last, membership) = applied_state(&sm)?;
        if last != meta.last_log_id || membership != meta.last_membership {
            tracing::warn!(%meta, ?last, "installed state's raft metadata differs from the snapshot meta; fixing");
            let ext = externals(&meta.last_log_id, Some(&meta.last_membership))?;
            sm.apply_batch(&[], &ext)?;
        }
        sm.store().sync()?;
        drop(sm);
        fs::remove_file(&self.paths.install_marker)?;
        sync_dir(self.paths.install_marker.parent().unwrap_or(Path::new(".")))?;
        self.stats
            .snapshots_installed
            .fetch_add(1, Ordering::Relaxed);
        tracing::info!(snapshot = %meta, "snapshot installed");
        Ok(())
    }
}

/// Read access to the replicated state, shared with the node (digest, queries).
#[derive(Clone)]
pub struct StateHandle {
    shared: Arc<SmShared>,
}

impl StateHandle {
    /// Run `f` on the state under a read lock. The read is local: see `RaftNode::read_linearizable`
    /// for reads that must observe every write acknowledged before they started.
    pub fn read<T>(&self, f: impl FnOnce(&StateMachine<RocksStore>) -> T) -> Result<T, SmError> {
        let sm = self.shared.read_sm()?;
        Ok(f(&sm))
    }

    /// SHA-256 of the logical state and the log id it reflects, both taken under one read
    /// lock so no batch can be applied between them (walks the whole state, on the blocking
    /// pool). Replicas are compared on this pair: equal digests at equal indexes.
    pub async fn digest(&self) -> Result<(Option<LogId>, [u8; 32]), SmError> {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || {
            let sm = shared.read_sm()?;
            let digest = sm.digest()?;
            Ok((applied_state(&sm)?.0, digest))
        })
        .await
        .map_err(|e| SmError::Task(e.to_string()))?
    }

    /// openraft's last applied log id and membership as recorded in the state.
    pub fn applied_state(&self) -> Result<(Option<LogId>, StoredMembership), SmError> {
        applied_state(&*self.shared.read_sm()?)
    }

    pub fn stats(&self) -> Arc<SmStats> {
        self.shared.stats.clone()
    }

    /// Metadata of the current snapshot, if any.
    pub fn current_snapshot(&self) -> Option<SnapshotMeta> {
        self.shared.current().map(|c| c.meta)
    }

    /// The current snapshot with an open handle on its file (what a backup streams out). A
    /// newer snapshot may replace and unlink the file between reading its path and opening it;
    /// then the newer one is taken. The handle stays readable whatever happens to the file next.
    pub fn open_current_snapshot(&self) -> Result<Option<(SnapshotMeta, File)>, SmError> {
        for _ in 0..8 {
            let Some(cur) = self.shared.current() else {
                return Ok(None);
            };
            match File::open(&cur.path) {
                Ok(file) => return Ok(Some((cur.meta, file))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(SmError::Mismatch(
            "the current snapshot kept being replaced while it was opened".into(),
        ))
    }

    pub(crate) fn release_probe(&self) -> ReleaseProbe {
        ReleaseProbe::of(&self.shared)
    }

    /// The log format this node writes when it leads: the cluster's, as last applied here
    /// (docs/SPEC.md §2.8). A number this build does not know cannot have been applied (the
    /// state machine refuses it), so it reads as the newest this build writes.
    pub fn log_format(&self) -> LogFormat {
        LogFormat::from_number(self.shared.log_format.load(Ordering::Relaxed))
            .unwrap_or(LogFormat::NEWEST)
    }
}

/// The `RaftStateMachine` handed to openraft.
pub struct SmAdapter {
    shared: Arc<SmShared>,
}

fn to_storage(e: SmError, write: bool) -> StorageError {
    let any = openraft::AnyError::new(&e);
    if write {
        StorageIOError::write_state_machine(any).into()
    } else {
        StorageIOError::read_state_machine(any).into()
    }
}

fn join_err(e: tokio::task::JoinError) -> SmError {
    SmError::Task(e.to_string())
}

impl SmAdapter {
    /// Open the state under `data_dir` (`sm/`, `snapshots/`), finishing an interrupted snapshot
    /// install and restoring a state that is behind its own current snapshot.
    pub fn open(data_dir: &Path) -> Result<Self, SmError> {
        let paths = SmPaths::new(data_dir);
        fs::create_dir_all(&paths.snapshot_dir)?;
        let current = load_snapshots(&paths.snapshot_dir)?;
        let sm = StateMachine::open(open_verified(&paths.sm_dir)?)?;
        let shared = Arc::new(SmShared {
            sm: RwLock::new(sm),
            paths,
            current: Mutex::new(current.clone()),
            stats: Arc::new(SmStats::default()),
            seq: AtomicU64::new(0),
            log_format: AtomicU32::new(1),
        });

        if shared.paths.install_marker.exists() {
            let name = fs::read_to_string(&shared.paths.install_marker)?;
            match current.as_ref().filter(|c| c.path.file_name().and_then(|n| n.to_str()) == Some(name.trim())) {
                Some(c) => {
                    tracing::warn!(snapshot = %c.meta, "previous snapshot install was interrupted; installing again");
                    shared.install_file(&c.meta, &c.path)?;
                }
                None => {
                    return Err(SmError::Mismatch(format!(
                        "an interrupted snapshot install left the state partial and its snapshot {name} is gone; \
                         wipe {} and let the node catch up from the cluster",
                        shared.paths.sm_dir.display()
                    )))
                }
            }
        } else if let Some(c) = current.as_ref() {
            let (last, _) = applied_state(&*shared.read_sm()?)?;
            if c.meta.last_log_id > last {
                tracing::warn!(snapshot = %c.meta, ?last, "state is behind its own snapshot; restoring it");
                shared.install_file(&c.meta, &c.path)?;
            }
        }
        shared.note_log_format(&*shared.read_sm()?)?;
        Ok(Self { shared })
    }

    /// A read handle on the state (clone it freely).
    pub fn handle(&self) -> StateHandle {
        StateHandle {
            shared: self.shared.clone(),
        }
    }
}

/// Remove temporary leftovers and find the newest valid snapshot file; older ones are deleted.
fn load_snapshots(dir: &Path) -> Result<Option<CurrentSnapshot>, SmError> {
    let mut found: Vec<CurrentSnapshot> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("cp-") {
            let _ = fs::remove_dir_all(&path);
        } else if name.ends_with(".tmp") {
            let _ = fs::remove_file(&path);
        } else if name.ends_with(".snap") {
            match snapshot::read_meta(&path) {
                Ok(meta) => found.push(CurrentSnapshot { meta, path }),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "removing unreadable snapshot file");
                    let _ = fs::remove_file(&path);
                }
            }
        }
    }
    found.sort_by(|a, b| (a.meta.last_log_id, &a.path).cmp(&(b.meta.last_log_id, &b.path)));
    let best = found.pop();
    for old in found {
        let _ = fs::remove_file(&old.path);
    }
    Ok(best)
}

impl RaftStateMachine<TypeConfig> for SmAdapter {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || applied_state(&*shared.read_sm()?))
            .await
            .map_err(join_err)
            .and_then(|r| r)
            .map_err(|e| to_storage(e, false))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let last = entries.last().map(|e| e.log_id);
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || shared.apply_entries(&entries))
            .await
            .map_err(join_err)
            .and_then(|r| r)
            .map_err(|e| match last {
                Some(l) => StorageIOError::apply(l, openraft::AnyError::new(&e)).into(),
                None => to_storage(e, true),
            })
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            shared: self.shared.clone(),
        }
    }

    /// An anonymous temporary file (unlinked at once) that openraft fills with the chunks; it
    /// disappears by itself if the transfer is abandoned.
    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError> {
        let dir = self.shared.paths.snapshot_dir.clone();
        let unique = self.shared.unique();
        let file = tokio::task::spawn_blocking(move || {
            let path = dir.join(format!("recv-{unique:016x}.tmp"));
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
            fs::remove_file(&path)?;
            Ok::<_, std::io::Error>(f)
        })
        .await
        .map_err(join_err)
        .and_then(|r| r.map_err(SmError::from))
        .map_err(|e| {
            StorageError::from(StorageIOError::write_snapshot(
                None,
                openraft::AnyError::new(&e),
            ))
        })?;
        Ok(Box::new(tokio::fs::File::from_std(file)))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError> {
        let file = snapshot.into_std().await;
        let shared = self.shared.clone();
        let meta_owned = meta.clone();
        tokio::task::spawn_blocking(move || shared.install_received(&meta_owned, file))
            .await
            .map_err(join_err)
            .and_then(|r| r)
            .map_err(|e| {
                StorageIOError::write_snapshot(Some(meta.signature()), openraft::AnyError::new(&e))
                    .into()
            })
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, StorageError> {
        let Some(cur) = self.shared.current() else {
            return Ok(None);
        };
        let sig = cur.meta.signature();
        let file = tokio::fs::File::open(&cur.path)
            .await
            .map_err(|e| StorageError::from(StorageIOError::read_snapshot(Some(sig), &e)))?;
        Ok(Some(Snapshot {
            meta: cur.meta,
            snapshot: Box::new(file),
        }))
    }
}

/// Builds a snapshot on the blocking pool while the state machine keeps applying.
pub struct SnapshotBuilder {
    shared: Arc<SmShared>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot, StorageError> {
        let shared = self.shared.clone();
        let built = tokio::task::spawn_blocking(move || shared.build_snapshot())
            .await
            .map_err(join_err)
            .and_then(|r| r)
            .map_err(|e| {
                StorageError::from(StorageIOError::write_snapshot(
                    None,
                    openraft::AnyError::new(&e),
                ))
            })?;
        Ok(Snapshot {
            meta: built.0,
            snapshot: Box::new(tokio::fs::File::from_std(built.1)),
        })
    }
}
