//! The wire: what travels in the Raft log and back. Commands in their [`Envelope`]s, their
//! answers ([`Outcome`], [`Rejection`], [`Response`]), the key-rotation targets, and the codec
//! that encodes all of them (and every stored value). An envelope's bytes come in a log format
//! ([`log_format`]): format 1 ([`format1`]), or a [`record`] of numbered header fields
//! ([`format2`], [`format3`]), read by [`envelope`]; formats 1 and 2 lay commands out as
//! [`layout_v1`] says. Commands no build proposes any more, kept for the logs that hold them:
//! [`legacy`].
//!
//! Built from [`crate::model`] types (ids, stages, roles, the configuration document) and from
//! nothing else of the crate. The encoding of every type here is pinned by
//! `tests/golden_wire.rs`.

pub mod codec;
pub mod command;
pub mod envelope;
pub mod format1;
pub mod format2;
pub mod format3;
pub mod layout_v1;
pub mod legacy;
pub mod log_format;
pub mod outcome;
pub mod record;
pub mod rejection;
pub mod rewrite;

pub use command::{Command, Envelope};
pub use log_format::LogFormat;
pub use outcome::{ClaimedRow, FifoEmpty, Outcome, Response};
pub use rejection::Rejection;
