//! Log format 2: an envelope as a record of numbered fields, in protobuf's wire format (each
//! field a varint tag `number << 3 | type`, then a varint or a length-prefixed byte string), so
//! any protobuf decoder can read one and a later build can add a field without breaking this one.
//!
//! | field | type   | holds                                                          |
//! |-------|--------|----------------------------------------------------------------|
//! | 1     | varint | the format, 2 (a reader checks it before anything else)        |
//! | 2     | varint | `now_ms`                                                       |
//! | 3     | bytes  | `actor` (UTF-8)                                                |
//! | 4     | bytes  | `request_id` (UTF-8), absent for none                          |
//! | 15    | bytes  | the command: [`crate::codec`] bytes of the [`Command`]          |
//!
//! Rules, for whoever adds field 5: numbers are never reused or renumbered; a field a reader
//! does not know is skipped, so a new field may only carry what an older reader can safely
//! ignore; a field that changes what `apply` does needs a new log format (docs/SPEC.md §2.8),
//! which the cluster turns on only once every node reads it. Fields are written in ascending
//! order and each once; a reader refuses a repeated field, and a record without the format or
//! the command.

use crate::wire::codec::{self, DecodeError};
use crate::wire::command::{Command, Envelope};
use crate::wire::log_format::LogFormat;

const FORMAT: u32 = 1;
const NOW_MS: u32 = 2;
const ACTOR: u32 = 3;
const REQUEST_ID: u32 = 4;
const COMMAND: u32 = 15;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const BYTES: u8 = 2;
const FIXED32: u8 = 5;

/// Why a format 2 record did not decode.
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("format 2 envelope: truncated {0}")]
    Truncated(&'static str),
    #[error("format 2 envelope: field {field} has wire type {wire_type}, expected {expected}")]
    WireType {
        field: u32,
        wire_type: u8,
        expected: u8,
    },
    #[error("format 2 envelope: field {0} appears twice")]
    Repeated(u32),
    #[error("format 2 envelope: field {0} is missing")]
    Missing(&'static str),
    #[error("format 2 envelope: says it is format {0}")]
    Format(u64),
    #[error("format 2 envelope: field {0} is not UTF-8")]
    Utf8(&'static str),
    #[error("format 2 envelope: unknown wire type {0}")]
    UnknownWireType(u8),
    #[error("format 2 envelope: {0}")]
    Command(#[from] DecodeError),
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(out, field, BYTES);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The format 2 record of `envelope` (its `format` field aside: this is format 2).
pub(crate) fn encode(envelope: &Envelope) -> Result<Vec<u8>, DecodeError> {
    let command = codec::try_encode(&envelope.command)?;
    let mut out = Vec::with_capacity(command.len() + envelope.actor.len() + 32);
    put_tag(&mut out, FORMAT, VARINT);
    put_varint(&mut out, u64::from(LogFormat::V2.number()));
    put_tag(&mut out, NOW_MS, VARINT);
    put_varint(&mut out, envelope.now_ms);
    put_bytes(&mut out, ACTOR, envelope.actor.as_bytes());
    if let Some(id) = &envelope.request_id {
        put_bytes(&mut out, REQUEST_ID, id.as_bytes());
    }
    put_bytes(&mut out, COMMAND, &command);
    Ok(out)
}

/// A cursor over a record.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self, what: &'static str) -> Result<u64, HeaderError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self
                .bytes
                .get(self.at)
                .ok_or(HeaderError::Truncated(what))?;
            self.at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(HeaderError::Truncated(what))
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], HeaderError> {
        let end = self.at.checked_add(n).ok_or(HeaderError::Truncated(what))?;
        let out = self
            .bytes
            .get(self.at..end)
            .ok_or(HeaderError::Truncated(what))?;
        self.at = end;
        Ok(out)
    }

    fn length_prefixed(&mut self, what: &'static str) -> Result<&'a [u8], HeaderError> {
        let len = self.varint(what)?;
        let len = usize::try_from(len).map_err(|_| HeaderError::Truncated(what))?;
        self.take(len, what)
    }

    /// Skip a field of `wire_type` this build does not know.
    fn skip(&mut self, wire_type: u8) -> Result<(), HeaderError> {
        match wire_type {
            VARINT => self.varint("an unknown field").map(drop),
            FIXED64 => self.take(8, "an unknown field").map(drop),
            BYTES => self.length_prefixed("an unknown field").map(drop),
            FIXED32 => self.take(4, "an unknown field").map(drop),
            other => Err(HeaderError::UnknownWireType(other)),
        }
    }
}

fn expect(field: u32, wire_type: u8, expected: u8) -> Result<(), HeaderError> {
    if wire_type == expected {
        Ok(())
    } else {
        Err(HeaderError::WireType {
            field,
            wire_type,
            expected,
        })
    }
}

fn once<T>(slot: &mut Option<T>, field: u32, value: T) -> Result<(), HeaderError> {
    if slot.replace(value).is_some() {
        return Err(HeaderError::Repeated(field));
    }
    Ok(())
}

fn utf8(bytes: &[u8], what: &'static str) -> Result<String, HeaderError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| HeaderError::Utf8(what))
}

/// The envelope a format 2 record holds.
pub(crate) fn decode(record: &[u8]) -> Result<Envelope, HeaderError> {
    let mut r = Reader {
        bytes: record,
        at: 0,
    };
    let (mut format, mut now_ms, mut actor, mut request_id, mut command) =
        (None, None, None, None, None);
    while r.at < record.len() {
        let tag = r.varint("a field tag")?;
        let field = u32::try_from(tag >> 3).unwrap_or(u32::MAX);
        let wire_type = (tag & 0x7) as u8;
        match field {
            FORMAT => {
                expect(field, wire_type, VARINT)?;
                once(&mut format, field, r.varint("the format")?)?;
            }
            NOW_MS => {
                expect(field, wire_type, VARINT)?;
                once(&mut now_ms, field, r.varint("now_ms")?)?;
            }
            ACTOR => {
                expect(field, wire_type, BYTES)?;
                once(
                    &mut actor,
                    field,
                    utf8(r.length_prefixed("actor")?, "actor")?,
                )?;
            }
            REQUEST_ID => {
                expect(field, wire_type, BYTES)?;
                let id = utf8(r.length_prefixed("request_id")?, "request_id")?;
                once(&mut request_id, field, id)?;
            }
            COMMAND => {
                expect(field, wire_type, BYTES)?;
                let bytes = r.length_prefixed("the command")?;
                once(&mut command, field, codec::decode::<Command>(bytes)?)?;
            }
            _ => r.skip(wire_type)?,
        }
    }
    match format {
        Some(2) => {}
        Some(other) => return Err(HeaderError::Format(other)),
        None => return Err(HeaderError::Missing("format")),
    }
    Ok(Envelope {
        now_ms: now_ms.unwrap_or(0),
        actor: actor.unwrap_or_default(),
        request_id,
        command: command.ok_or(HeaderError::Missing("command"))?,
        format: LogFormat::V2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::command::{EnqueueIngress, RecordAudit};

    fn sample() -> Envelope {
        let mut e = Envelope::new(
            1_700_000_000_123,
            "alice",
            Command::RecordAudit(RecordAudit {
                action: "a".into(),
                channel: None,
                org: None,
                detail: Some("d".into()),
            }),
        )
        .with_request_id("r-1");
        e.set_format(LogFormat::V2);
        e
    }

    #[test]
    fn a_record_decodes_to_its_envelope() {
        let e = sample();
        assert_eq!(decode(&encode(&e).expect("encode")).expect("decode"), e);
    }

    #[test]
    fn unknown_fields_of_every_wire_type_are_skipped() {
        let e = sample();
        let mut record = encode(&e).expect("encode");
        put_tag(&mut record, 5, VARINT);
        put_varint(&mut record, 300);
        put_bytes(&mut record, 6, b"a later build's field");
        put_tag(&mut record, 7, FIXED64);
        record.extend_from_slice(&[0; 8]);
        put_tag(&mut record, 8, FIXED32);
        record.extend_from_slice(&[0; 4]);
        assert_eq!(decode(&record).expect("decode"), e);
    }

    #[test]
    fn fields_in_another_order_read_the_same() {
        let e = sample();
        let mut record = Vec::new();
        put_bytes(&mut record, COMMAND, &codec::encode(&e.command));
        put_bytes(&mut record, REQUEST_ID, b"r-1");
        put_bytes(&mut record, ACTOR, b"alice");
        put_tag(&mut record, NOW_MS, VARINT);
        put_varint(&mut record, e.now_ms);
        put_tag(&mut record, FORMAT, VARINT);
        put_varint(&mut record, 2);
        assert_eq!(decode(&record).expect("decode"), e);
    }

    #[test]
    fn bad_records_are_refused_not_misread() {
        let good = encode(&sample()).expect("encode");
        // Every truncation fails (none panics).
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        // A repeated field, a missing command, another format, a wrong wire type.
        let mut repeated = good.clone();
        put_bytes(&mut repeated, ACTOR, b"mallory");
        assert!(matches!(
            decode(&repeated),
            Err(HeaderError::Repeated(ACTOR))
        ));
        let mut no_command = Vec::new();
        put_tag(&mut no_command, FORMAT, VARINT);
        put_varint(&mut no_command, 2);
        assert!(matches!(
            decode(&no_command),
            Err(HeaderError::Missing("command"))
        ));
        let mut format_3 = Vec::new();
        put_tag(&mut format_3, FORMAT, VARINT);
        put_varint(&mut format_3, 3);
        put_bytes(
            &mut format_3,
            COMMAND,
            &codec::encode(&Command::EnqueueIngress(EnqueueIngress {
                channel: "c".into(),
                raw: String::new(),
                fields: Default::default(),
                idempotency_key: None,
            })),
        );
        assert!(matches!(decode(&format_3), Err(HeaderError::Format(3))));
        let mut wrong_type = Vec::new();
        put_bytes(&mut wrong_type, NOW_MS, b"x");
        assert!(matches!(
            decode(&wrong_type),
            Err(HeaderError::WireType { field: NOW_MS, .. })
        ));
    }
}
