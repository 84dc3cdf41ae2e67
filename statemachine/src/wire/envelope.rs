//! The envelope around every command in the Raft log, and the log formats it is written in.
//!
//! An [`Envelope`] carries what `apply` needs besides the command itself: the proposer's clock
//! reading, the acting principal, the request id that makes a retry exactly-once, and the rest
//! of its header (test mode's client time, the request's fingerprint, the operator's word). Its
//! bytes come in one of three [`LogFormat`]s:
//!
//! - **Format 1** ([`crate::wire::format1`]): bincode of the four fields in order, as every
//!   build before format 2 wrote it. A field cannot be added to it without making every older
//!   entry undecodable, which is why the command vocabulary grew twins instead.
//! - **Format 2** ([`crate::wire::format2`]): a reserved first word, then one length-prefixed
//!   [record](crate::wire::record) of numbered fields (protobuf's wire format: field number and
//!   type in a tag, unknown fields skipped), the command's format 1 bytes among them.
//! - **Format 3** ([`crate::wire::format3`]): the same first word and record, with every header
//!   field a field of the record (format 1's wrapper commands among them, a batch's members as
//!   records of their own) and the command in the one vocabulary, without twins.
//!
//! Formats 1 and 2 share the command layout of [`crate::wire::layout_v1`].
//!
//! Which format the leader writes is the cluster's choice, kept in the replicated state
//! ([`SetLogFormat`](crate::wire::command::SetLogFormat), docs/SPEC.md §2.8): format 1 until an
//! operator (or the leader's watch) raises it once every node runs a build that reads the next, so a node of the
//! previous build can stay in the cluster through a rolling upgrade. Every build reads every
//! format it ever wrote. An envelope remembers the format it was read in, so writing it again
//! (openraft re-sends and re-stores entries) gives the same bytes.

use crate::wire::command::Envelope;
use crate::wire::log_format::{LogFormat, FORMAT_2_MARK};
use crate::wire::record::{self, HeaderError};
use crate::wire::{format1, format2, format3};
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

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
            LogFormat::V1 => format1::serialize_v1(self, serializer),
            LogFormat::V2 | LogFormat::V3 | LogFormat::V4 => {
                let record = match self.format {
                    LogFormat::V2 => format2::encode(self),
                    format => format3::encode(self, format),
                }
                .map_err(serde::ser::Error::custom)?;
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
        deserializer.deserialize_struct("Envelope", format1::V1_FIELDS, EnvelopeVisitor)
    }
}

/// The envelope of a format 2, 3 or 4 record: its first field says which.
fn decode_record(bytes: &[u8]) -> Result<Envelope, HeaderError> {
    let fields = record::read(bytes)?;
    match fields.format {
        Some(2) => format2::decode(fields),
        Some(3) => format3::decode(fields, LogFormat::V3),
        Some(4) => format3::decode(fields, LogFormat::V4),
        Some(other) => Err(HeaderError::Format(other)),
        None => Err(HeaderError::Missing("format")),
    }
}

/// Reads the first word, then the rest of the format it names. bincode hands a struct to
/// `visit_seq` field by field, so the visitor may choose the second field's type by the first.
struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a raftlane log envelope (format 1, 2 or 3)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
        let first: u64 = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        if first != FORMAT_2_MARK {
            return format1::visit_v1_rest(first, seq);
        }
        let ByteBuf(record) = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        decode_record(&record).map_err(de::Error::custom)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Envelope, A::Error> {
        format1::visit_v1_map(map)
    }
}
