//! The envelope around every command in the Raft log, and the log formats it is written in.
//!
//! An [`Envelope`] carries what `apply` needs besides the command itself: the proposer's clock
//! reading, the acting principal, the request id that makes a retry exactly-once. Its bytes come
//! in one of two [`LogFormat`]s:
//!
//! - **Format 1** ([`crate::wire::legacy`]): bincode of the four fields in order, as every
//!   build before format 2 wrote it. A field cannot be added to it without making every older
//!   entry undecodable, which is why the command vocabulary grew twins instead.
//! - **Format 2** ([`crate::wire::header`]): a reserved first word, then one length-prefixed
//!   record of numbered fields (protobuf's wire format: field number and type in a tag, unknown
//!   fields skipped), the command's own bytes among them. A later build adds a header field by
//!   giving it the next number; a build that does not know a field skips it.
//!
//! Which format the leader writes is the cluster's choice, kept in the replicated state
//! ([`SetLogFormat`](crate::wire::command::SetLogFormat), docs/SPEC.md §2.8): format 1 until an
//! operator raises it once every node runs a build that reads format 2, so a node of the
//! previous build can stay in the cluster through a rolling upgrade. Every build reads every
//! format it ever wrote. An envelope remembers the format it was read in, so writing it again
//! (openraft re-sends and re-stores entries) gives the same bytes.

use crate::model::ids::Millis;
use crate::wire::command::Command;
use crate::wire::{header, legacy};
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The formats an envelope is written in. Ordered: a cluster's format only ever goes up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogFormat {
    /// bincode of the envelope's fields in order (every build).
    #[default]
    V1,
    /// A record of numbered header fields (this build onwards).
    V2,
}

impl LogFormat {
    /// The newest format this build writes and reads.
    pub const NEWEST: LogFormat = LogFormat::V2;
    /// Every format this build reads, oldest first.
    pub const READ: [LogFormat; 2] = [LogFormat::V1, LogFormat::V2];

    /// The format's number, as the state, the API and the node-to-node calls name it.
    pub fn number(self) -> u32 {
        match self {
            LogFormat::V1 => 1,
            LogFormat::V2 => 2,
        }
    }

    /// The format numbered `n`, if this build knows it.
    pub fn from_number(n: u32) -> Option<Self> {
        match n {
            1 => Some(LogFormat::V1),
            2 => Some(LogFormat::V2),
            _ => None,
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// A command as proposed: stamped with the proposer's wall clock and the acting principal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The proposer's clock. The state machine clamps it monotonic: `t = max(now_ms, last_t)`.
    pub now_ms: Millis,
    /// Principal name recorded in audit rows and approvals.
    pub actor: String,
    /// Makes a retried write exactly-once: a second envelope with the same `(actor,
    /// request_id)` gets the first one's answer back and changes nothing (see
    /// [`crate::apply::request`]). The proposer sets it; `None` applies every time.
    pub request_id: Option<String>,
    pub command: Command,
    /// The format the envelope is written in: what it was read in, else format 1 (the one
    /// every build reads) until the leader sets the cluster's format with [`Self::set_format`].
    /// It changes the bytes, never what the envelope means.
    pub format: LogFormat,
}

impl Envelope {
    pub fn new(now_ms: Millis, actor: impl Into<String>, command: Command) -> Self {
        Self {
            now_ms,
            actor: actor.into(),
            request_id: None,
            command,
            format: LogFormat::V1,
        }
    }

    /// The same envelope, remembered under `request_id`.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// Write this envelope, and every envelope a batch carries, in `format`.
    pub fn set_format(&mut self, format: LogFormat) {
        self.format = format;
        if let Command::Batch(batch) = &mut self.command {
            for inner in &mut batch.commands {
                inner.set_format(format);
            }
        }
    }
}

/// The first word of a format 2 envelope, where format 1 has its `now_ms`: no clock reads it
/// (it is 584 million years after 1970), and format 1 refuses to write it.
pub(crate) const FORMAT_2_MARK: u64 = u64::MAX;

/// Borrowed bytes written as one length-prefixed byte string.
struct ByteStr<'a>(&'a [u8]);

impl Serialize for ByteStr<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

/// Owned bytes read back from one length-prefixed byte string.
struct ByteBuf(Vec<u8>);

impl<'de> Deserialize<'de> for ByteBuf {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BytesVisitor;
        impl<'de> Visitor<'de> for BytesVisitor {
            type Value = ByteBuf;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<ByteBuf, E> {
                Ok(ByteBuf(v.to_vec()))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<ByteBuf, E> {
                Ok(ByteBuf(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ByteBuf, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(ByteBuf(out))
            }
        }
        deserializer.deserialize_byte_buf(BytesVisitor)
    }
}

impl Serialize for Envelope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.format {
            LogFormat::V1 => legacy::serialize_v1(self, serializer),
            LogFormat::V2 => {
                let record = header::encode(self).map_err(serde::ser::Error::custom)?;
                let mut tuple = serializer.serialize_tuple(2)?;
                tuple.serialize_element(&FORMAT_2_MARK)?;
                tuple.serialize_element(&ByteStr(&record))?;
                tuple.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct("Envelope", legacy::V1_FIELDS, EnvelopeVisitor)
    }
}

/// Reads the first word, then the rest of the format it names. bincode hands a struct to
/// `visit_seq` field by field, so the visitor may choose the second field's type by the first.
struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a raftlane log envelope (format 1 or 2)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
        let first: u64 = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        if first != FORMAT_2_MARK {
            return legacy::visit_v1_rest(first, seq);
        }
        let ByteBuf(record) = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        header::decode(&record).map_err(de::Error::custom)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Envelope, A::Error> {
        legacy::visit_v1_map(map)
    }
}
