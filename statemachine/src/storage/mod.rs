//! Storage: the ordered key-value tables the state lives in, and how one applied batch reaches
//! them atomically.
//!
//! [`store`] is the [`Store`] trait, the [`Table`]s and the in-memory store; [`rocks`] the
//! RocksDB store (feature `rocksdb`), [`verify`] its checksum scan at start; [`txn`] the write overlay a batch is applied in, with the
//! checkpoints that roll a rejected command back; [`keys`] the key encoding every layout is built
//! from; [`digest`] the canonical walk that compares replicas. Nothing here knows what a table
//! holds: that is [`crate::tables`].

pub mod digest;
pub mod keys;
#[cfg(feature = "rocksdb")]
pub mod rocks;
pub mod store;
pub mod txn;
#[cfg(feature = "rocksdb")]
pub mod verify;

pub use store::{Direction, MemStore, Store, StoreError, Table, TableEntry, WriteBatch};
pub use txn::Txn;
