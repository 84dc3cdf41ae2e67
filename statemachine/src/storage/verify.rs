//! Reading every block of the state's RocksDB once, with its checksums verified: how a damaged
//! table is found at start rather than late.
//!
//! Why: RocksDB checks a block's checksum only when it reads the block. Without this scan, a
//! node with 64 bytes flipped in one state SST starts, reports ready and serves reads, answers
//! the digest with a `500`, and exits 75 ("free disk space first") only when an apply happens
//! to read the block, an exit that names neither the damage nor the file. A full scan with
//! `verify_checksums` at open reads every data block of every table (not through the block
//! cache), so such damage stops the start with the file's name instead. The scan is bounded by
//! a time budget: a state too large to read in it is verified as far as the budget goes, and
//! the start says so.

use crate::storage::rocks::RocksStore;
use crate::storage::store::Table;
use rocksdb::{IteratorMode, ReadOptions};
use std::time::{Duration, Instant};

/// What a scan covered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Tables read to their end.
    pub tables: usize,
    /// Entries read.
    pub entries: u64,
    /// Key and value bytes read.
    pub bytes: u64,
    /// Every table was read to its end within the budget.
    pub complete: bool,
    pub elapsed: Duration,
}

/// A block (or file) of the state that failed its checksum, or could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{detail}", .table.map(|t| format!("table {t}: ")).unwrap_or_default())]
pub struct Damage {
    /// The table (column family) being read, when the scan found it (`None`: the database
    /// failed to open).
    pub table: Option<&'static str>,
    /// The file RocksDB named, if it did (`.../sm/000012.sst`).
    pub file: Option<String>,
    /// RocksDB's message (`Corruption: block checksum mismatch: ...`).
    pub detail: String,
}

/// Whether a storage error's text is RocksDB reporting damaged data (`Corruption: ...`), as
/// opposed to a full disk or another I/O error.
pub fn is_corruption(message: &str) -> bool {
    message.contains("Corruption:")
}

/// The file a RocksDB error message names (its first word ending in `.sst`, or naming a
/// `MANIFEST` or `.log` file), if any.
pub fn named_file(message: &str) -> Option<String> {
    message
        .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
        .map(|w| w.trim_matches(|c: char| c == '\'' || c == '"'))
        .find(|w| w.ends_with(".sst") || w.contains("MANIFEST-") || w.ends_with(".log"))
        .map(str::to_string)
}

impl Damage {
    /// The damage a storage error at open stands for, if it is damage (`Corruption: ...`).
    pub fn at_open(message: &str) -> Option<Self> {
        is_corruption(message).then(|| Damage {
            table: None,
            file: named_file(message),
            detail: message.to_string(),
        })
    }
}

/// Read every table of `store` with checksums verified, for at most `budget`.
pub fn verify_checksums(store: &RocksStore, budget: Duration) -> Result<Verified, Damage> {
    let started = Instant::now();
    let db = store.db();
    let mut done = Verified {
        tables: 0,
        entries: 0,
        bytes: 0,
        complete: true,
        elapsed: Duration::ZERO,
    };
    'tables: for table in Table::ALL {
        let name = table.name();
        let Some(cf) = db.cf_handle(name) else {
            continue;
        };
        let mut opts = ReadOptions::default();
        opts.set_verify_checksums(true);
        opts.fill_cache(false);
        for (n, item) in db
            .iterator_cf_opt(cf, opts, IteratorMode::Start)
            .enumerate()
        {
            match item {
                Ok((k, v)) => {
                    done.entries += 1;
                    done.bytes += (k.len() + v.len()) as u64;
                }
                Err(e) => {
                    let detail = e.into_string();
                    return Err(Damage {
                        table: Some(name),
                        file: named_file(&detail),
                        detail,
                    });
                }
            }
            if n % 4096 == 4095 && started.elapsed() > budget {
                done.complete = false;
                break 'tables;
            }
        }
        done.tables += 1;
    }
    done.elapsed = started.elapsed();
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocksdb_messages_name_their_file() {
        let m = "Corruption: block checksum mismatch: stored = 1, computed = 2, type = 4  in \
                 /d/node3/sm/000012.sst offset 0 size 4021";
        assert!(is_corruption(m));
        assert_eq!(named_file(m).as_deref(), Some("/d/node3/sm/000012.sst"));
        assert!(!is_corruption("IO error: No space left on device"));
        assert_eq!(named_file("Corruption: bad block"), None);
    }
}
