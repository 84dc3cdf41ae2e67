//! The logical state digest: SHA-256 over a canonical walk of every table, so two replicas can
//! be compared byte for byte.
//!
//! Walk: tables in [`Table::ALL`] order; within a table, keys in byte order; each entry fed as
//! `tag (u8) ‖ len(key) (u32 BE) ‖ key ‖ len(value) (u32 BE) ‖ value`. The `Meta` table is left
//! out (it holds `last_applied` and the Raft adapter's bookkeeping, which differ between a node
//! that applied a no-op and one that did not); the logical counters of [`MetaState`] are fed
//! instead, after the tables.

use crate::model::meta::MetaState;
use crate::storage::keys::meta;
use crate::storage::store::{Direction, Store, StoreError, Table};
use sha2::{Digest, Sha256};

pub fn digest<S: Store + ?Sized>(store: &S) -> Result<[u8; 32], StoreError> {
    let mut h = Sha256::new();
    for table in Table::ALL {
        if table == Table::Meta {
            continue;
        }
        for item in store.scan(table, &[], None, Direction::Forward)? {
            let (k, v) = item?;
            h.update([table.tag()]);
            h.update((k.len() as u32).to_be_bytes());
            h.update(&k);
            h.update((v.len() as u32).to_be_bytes());
            h.update(&v);
        }
    }
    let meta: MetaState = match store.get(Table::Meta, meta::STATE)? {
        Some(bytes) => crate::wire::codec::decode(&bytes).map_err(|e| StoreError::Corrupt {
            table: Table::Meta,
            reason: e.to_string(),
        })?,
        None => MetaState::default(),
    };
    h.update(b"meta");
    h.update(meta.clock.to_be_bytes());
    h.update(meta.next_message_id.to_be_bytes());
    h.update(meta.next_row_id.to_be_bytes());
    for stage in meta.row_counts {
        for n in stage {
            h.update(n.to_be_bytes());
        }
    }
    Ok(h.finalize().into())
}
