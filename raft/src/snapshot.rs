//! The snapshot file format: the state machine's canonical `export()` stream, on disk.
//!
//! A snapshot is written record by record while the state is walked, and read back the same
//! way, so neither building, sending nor installing one holds the state in memory.
//!
//! ```text
//! header : magic "RLSNAP01" | u32 meta_len | meta (JSON SnapshotMeta)
//! record : 0x01 | u8 table tag | u32 key_len | key | u32 value_len | value      (repeated)
//! trailer: 0x00 | u64 record count | 32-byte SHA-256 of every byte before this hash
//! ```
//! Integers are big-endian. The checksum covers the header, so a snapshot whose metadata or data
//! was damaged in transit or on disk is refused before anything is installed; nothing may follow
//! the trailer. The metadata inside the file makes a snapshot self-describing, so the current
//! snapshot is found again after a restart by reading the files in the snapshot directory.

use crate::types::SnapshotMeta;
use raftlane_statemachine::codec::MAX_ENCODED_BYTES;
use raftlane_statemachine::storage::{StoreError, Table};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// First bytes of every snapshot file (format version 1).
pub const MAGIC: [u8; 8] = *b"RLSNAP01";
const KIND_RECORD: u8 = 1;
const KIND_END: u8 = 0;
/// Largest metadata blob accepted (membership configs are small).
const MAX_META_BYTES: u32 = 16 * 1024 * 1024;
const BUF_BYTES: usize = 256 * 1024;

/// A snapshot file could not be written or read, or is not a valid snapshot.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotFileError {
    #[error("snapshot I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("corrupt snapshot: {0}")]
    Corrupt(String),
    #[error("state store error while exporting: {0}")]
    Store(#[from] StoreError),
}

fn corrupt(msg: impl Into<String>) -> SnapshotFileError {
    SnapshotFileError::Corrupt(msg.into())
}

fn len_u32(len: usize, what: &str) -> Result<u32, SnapshotFileError> {
    u32::try_from(len)
        .ok()
        .filter(|&n| u64::from(n) <= MAX_ENCODED_BYTES)
        .ok_or_else(|| {
            corrupt(format!(
                "{what} of {len} bytes is too large for a snapshot record"
            ))
        })
}

/// One `(table, key, value)` entry of the state.
pub type Record = (Table, Vec<u8>, Vec<u8>);

/// What was written, for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotSummary {
    pub records: u64,
    pub bytes: u64,
    pub checksum: [u8; 32],
}

/// Streams records into a new snapshot file.
pub struct SnapshotWriter {
    out: BufWriter<File>,
    hasher: Sha256,
    records: u64,
    bytes: u64,
}

impl SnapshotWriter {
    /// Create `path` (which must not exist) and write the header.
    pub fn create(path: &Path, meta: &SnapshotMeta) -> Result<Self, SnapshotFileError> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        let mut w = Self {
            out: BufWriter::with_capacity(BUF_BYTES, file),
            hasher: Sha256::new(),
            records: 0,
            bytes: 0,
        };
        let meta_bytes =
            serde_json::to_vec(meta).map_err(|e| corrupt(format!("cannot encode meta: {e}")))?;
        let meta_len = u32::try_from(meta_bytes.len())
            .ok()
            .filter(|&n| n <= MAX_META_BYTES)
            .ok_or_else(|| corrupt("snapshot metadata too large"))?;
        w.put(&MAGIC)?;
        w.put(&meta_len.to_be_bytes())?;
        w.put(&meta_bytes)?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), SnapshotFileError> {
        self.hasher.update(bytes);
        self.out.write_all(bytes)?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// Append one `(table, key, value)` record.
    pub fn push(
        &mut self,
        table: Table,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), SnapshotFileError> {
        let klen = len_u32(key.len(), "key")?;
        let vlen = len_u32(value.len(), "value")?;
        self.put(&[KIND_RECORD, table.tag()])?;
        self.put(&klen.to_be_bytes())?;
        self.put(key)?;
        self.put(&vlen.to_be_bytes())?;
        self.put(value)?;
        self.records += 1;
        Ok(())
    }

    /// Write the trailer, flush and fsync. The caller renames the file into place afterwards.
    pub fn finish(mut self) -> Result<SnapshotSummary, SnapshotFileError> {
        let records = self.records;
        self.put(&[KIND_END])?;
        self.put(&records.to_be_bytes())?;
        let checksum: [u8; 32] = self.hasher.clone().finalize().into();
        self.out.write_all(&checksum)?;
        self.bytes += 32;
        let file = self
            .out
            .into_inner()
            .map_err(|e| SnapshotFileError::Io(e.into_error()))?;
        file.sync_all()?;
        Ok(SnapshotSummary {
            records,
            bytes: self.bytes,
            checksum,
        })
    }
}

/// Reads a snapshot file record by record, verifying the checksum at the end.
pub struct SnapshotReader {
    inp: BufReader<File>,
    hasher: Sha256,
    meta: SnapshotMeta,
    records: u64,
    finished: bool,
}

impl SnapshotReader {
    /// Open the file at `path` and read its header.
    pub fn open(path: &Path) -> Result<Self, SnapshotFileError> {
        Self::from_file(File::open(path)?)
    }

    /// Read from an open file, from its start, whatever its current position.
    pub fn from_file(mut file: File) -> Result<Self, SnapshotFileError> {
        file.seek(SeekFrom::Start(0))?;
        let mut r = Self {
            inp: BufReader::with_capacity(BUF_BYTES, file),
            hasher: Sha256::new(),
            meta: SnapshotMeta::default(),
            records: 0,
            finished: false,
        };
        let mut magic = [0u8; 8];
        r.take(&mut magic)?;
        if magic != MAGIC {
            return Err(corrupt("not a raftlane snapshot (bad magic)"));
        }
        let meta_len = r.u32()?;
        if meta_len > MAX_META_BYTES {
            return Err(corrupt("snapshot metadata length out of range"));
        }
        let meta_bytes = r.vec(meta_len)?;
        r.meta = serde_json::from_slice(&meta_bytes)
            .map_err(|e| corrupt(format!("bad snapshot metadata: {e}")))?;
        Ok(r)
    }

    /// The metadata in the header (not yet checksum-verified until the stream is read to the end).
    pub fn meta(&self) -> &SnapshotMeta {
        &self.meta
    }

    fn take(&mut self, buf: &mut [u8]) -> Result<(), SnapshotFileError> {
        self.inp.read_exact(buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                corrupt("truncated snapshot")
            } else {
                SnapshotFileError::Io(e)
            }
        })?;
        self.hasher.update(&*buf);
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, SnapshotFileError> {
        let mut b = [0u8; 4];
        self.take(&mut b)?;
        Ok(u32::from_be_bytes(b))
    }

    fn vec(&mut self, len: u32) -> Result<Vec<u8>, SnapshotFileError> {
        if u64::from(len) > MAX_ENCODED_BYTES {
            return Err(corrupt("record length out of range"));
        }
        let mut v = vec![0u8; len as usize];
        self.take(&mut v)?;
        Ok(v)
    }

    /// The next record, or `None` after the trailer was read and the checksum verified.
    pub fn next_record(&mut self) -> Result<Option<Record>, SnapshotFileError> {
        if self.finished {
            return Ok(None);
        }
        let mut kind = [0u8; 1];
        self.take(&mut kind)?;
        match kind[0] {
            KIND_RECORD => {
                let mut tag = [0u8; 1];
                self.take(&mut tag)?;
                let table = Table::from_tag(tag[0])
                    .ok_or_else(|| corrupt(format!("unknown table tag {}", tag[0])))?;
                let klen = self.u32()?;
                let key = self.vec(klen)?;
                let vlen = self.u32()?;
                let value = self.vec(vlen)?;
                self.records += 1;
                Ok(Some((table, key, value)))
            }
            KIND_END => {
                let mut count = [0u8; 8];
                self.take(&mut count)?;
                if u64::from_be_bytes(count) != self.records {
                    return Err(corrupt("record count mismatch"));
                }
                let expected: [u8; 32] = self.hasher.clone().finalize().into();
                let mut stored = [0u8; 32];
                self.inp
                    .read_exact(&mut stored)
                    .map_err(|_| corrupt("truncated snapshot checksum"))?;
                if stored != expected {
                    return Err(corrupt("checksum mismatch"));
                }
                let mut extra = [0u8; 1];
                if self.inp.read(&mut extra)? != 0 {
                    return Err(corrupt("trailing bytes after the snapshot trailer"));
                }
                self.finished = true;
                Ok(None)
            }
            other => Err(corrupt(format!("unknown record kind {other}"))),
        }
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }
}

/// Read only the metadata of the snapshot at `path`.
pub fn read_meta(path: &Path) -> Result<SnapshotMeta, SnapshotFileError> {
    Ok(SnapshotReader::open(path)?.meta().clone())
}

/// Read the whole file and check its structure and checksum; returns the metadata and the
/// number of records.
pub fn verify_file(file: File) -> Result<(SnapshotMeta, u64), SnapshotFileError> {
    let mut r = SnapshotReader::from_file(file)?;
    while r.next_record()?.is_some() {}
    Ok((r.meta.clone(), r.records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{LogId, StoredMembership};

    fn meta() -> SnapshotMeta {
        SnapshotMeta {
            last_log_id: Some(LogId::new(openraft::CommittedLeaderId::new(3, 1), 42)),
            last_membership: StoredMembership::default(),
            snapshot_id: "s-1".into(),
        }
    }

    fn write(path: &Path, n: usize) -> SnapshotSummary {
        let mut w = SnapshotWriter::create(path, &meta()).unwrap();
        for i in 0..n {
            w.push(
                Table::ALL[i % Table::ALL.len()],
                format!("k{i}").as_bytes(),
                &vec![i as u8; i],
            )
            .unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.snap");
        let summary = write(&path, 100);
        assert_eq!(summary.records, 100);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), summary.bytes);
        let mut r = SnapshotReader::open(&path).unwrap();
        assert_eq!(r.meta(), &meta());
        let mut n = 0;
        while let Some((table, key, value)) = r.next_record().unwrap() {
            assert_eq!(table, Table::ALL[n % Table::ALL.len()]);
            assert_eq!(key, format!("k{n}").as_bytes());
            assert_eq!(value, vec![n as u8; n]);
            n += 1;
        }
        assert_eq!(n, 100);
        assert_eq!(verify_file(File::open(&path).unwrap()).unwrap().1, 100);
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.snap");
        write(&path, 5);
        let good = std::fs::read(&path).unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            let p = dir.path().join(format!("bad{i}"));
            std::fs::write(&p, &bad).unwrap();
            assert!(
                verify_file(File::open(&p).unwrap()).is_err(),
                "flip at {i} not detected"
            );
        }
        // Truncation and trailing garbage too.
        let p = dir.path().join("short");
        std::fs::write(&p, &good[..good.len() - 1]).unwrap();
        assert!(verify_file(File::open(&p).unwrap()).is_err());
        let mut long = good.clone();
        long.push(0);
        std::fs::write(&p, &long).unwrap();
        assert!(verify_file(File::open(&p).unwrap()).is_err());
    }

    #[test]
    fn refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.snap");
        write(&path, 1);
        assert!(SnapshotWriter::create(&path, &meta()).is_err());
    }
}
