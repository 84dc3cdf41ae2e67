//! openraft's storage conformance suite against the RocksDB log store and the state-machine
//! adapter, each test on fresh directories.

use openraft::testing::{StoreBuilder, Suite};
use raftlane_raft::log_store::LogStore;
use raftlane_raft::sm_adapter::SmAdapter;
use raftlane_raft::types::{StorageError, TypeConfig};
use tempfile::TempDir;

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, SmAdapter, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore, SmAdapter), StorageError> {
        let dir = tempfile::tempdir().unwrap();
        let log = LogStore::open(&dir.path().join("log")).unwrap();
        let sm = SmAdapter::open(dir.path()).unwrap();
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite() {
    Suite::test_all(Builder).unwrap();
}
