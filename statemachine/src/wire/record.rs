//! The record of numbered fields that log formats 2 and 3 write an envelope as, in protobuf's
//! wire format: each field a varint tag `number << 3 | type`, then a varint or a
//! length-prefixed byte string. Any protobuf decoder reads one, and a later build can add a
//! field without breaking this one: a field a reader does not know is skipped.
//!
//! | field | type   | holds                                                  | formats |
//! |-------|--------|--------------------------------------------------------|---------|
//! | 1     | varint | the format (a reader checks it before anything else)  | 2, 3    |
//! | 2     | varint | `now_ms`                                               | 2, 3    |
//! | 3     | bytes  | `actor` (UTF-8)                                        | 2, 3    |
//! | 4     | bytes  | `request_id` (UTF-8), absent for none                  | 2, 3    |
//! | 5     | varint | `client_time` (test mode), absent for none             | 3       |
//! | 6     | bytes  | `fingerprint` (32 bytes), absent for none              | 3       |
//! | 7     | varint | `as_operator`: 1, absent for false                     | 3       |
//! | 13    | varint | 1: the envelope is a batch, its members follow         | 3       |
//! | 14    | bytes  | a batch member: a whole record of its own, repeated    | 3       |
//! | 15    | bytes  | the command (format 2: a format 1 command; format 3: a | 2, 3    |
//! |       |        | [`Command`](crate::wire::Command)), absent in a batch  |         |
//!
//! Rules, for whoever adds field 8: numbers are never reused or renumbered; a new field may
//! only carry what an older reader of the same format can safely ignore; a field that changes
//! what `apply` does needs a new log format (docs/SPEC.md §2.8), which the cluster turns on only
//! once every node reads it. Fields are written in ascending order and each once (members
//! aside); a reader refuses a repeated field, and a record without the format.

use crate::wire::codec::DecodeError;

pub(crate) const FORMAT: u32 = 1;
pub(crate) const NOW_MS: u32 = 2;
pub(crate) const ACTOR: u32 = 3;
pub(crate) const REQUEST_ID: u32 = 4;
pub(crate) const CLIENT_TIME: u32 = 5;
pub(crate) const FINGERPRINT: u32 = 6;
pub(crate) const AS_OPERATOR: u32 = 7;
pub(crate) const BATCH: u32 = 13;
pub(crate) const MEMBER: u32 = 14;
pub(crate) const COMMAND: u32 = 15;

pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const BYTES: u8 = 2;
pub(crate) const FIXED32: u8 = 5;

/// Why a record did not decode.
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("log envelope: truncated {0}")]
    Truncated(&'static str),
    #[error("log envelope: field {field} has wire type {wire_type}, expected {expected}")]
    WireType {
        field: u32,
        wire_type: u8,
        expected: u8,
    },
    #[error("log envelope: field {0} appears twice")]
    Repeated(u32),
    #[error("log envelope: field {0} is missing")]
    Missing(&'static str),
    #[error("log envelope: says it is format {0}")]
    Format(u64),
    #[error("log envelope: field {0} is not UTF-8")]
    Utf8(&'static str),
    #[error("log envelope: field {0} has a bad value")]
    Value(&'static str),
    #[error("log envelope: unknown wire type {0}")]
    UnknownWireType(u8),
    #[error("log envelope: {0}")]
    Command(#[from] DecodeError),
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

pub(crate) fn put_uint(out: &mut Vec<u8>, field: u32, v: u64) {
    put_tag(out, field, VARINT);
    put_varint(out, v);
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(out, field, BYTES);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Every field of a record this build knows, as read: values for varints, borrowed bytes for
/// byte strings. Which of them a format uses is the format's business.
#[derive(Default)]
pub(crate) struct Fields<'a> {
    pub format: Option<u64>,
    pub now_ms: Option<u64>,
    pub actor: Option<String>,
    pub request_id: Option<String>,
    pub client_time: Option<u64>,
    pub fingerprint: Option<&'a [u8]>,
    pub as_operator: Option<u64>,
    pub batch: Option<u64>,
    pub members: Vec<&'a [u8]>,
    pub command: Option<&'a [u8]>,
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

/// The fields of `record`; unknown ones skipped, known ones checked for their wire type and
/// for appearing once.
pub(crate) fn read(record: &[u8]) -> Result<Fields<'_>, HeaderError> {
    let mut r = Reader {
        bytes: record,
        at: 0,
    };
    let mut f = Fields::default();
    while r.at < record.len() {
        let tag = r.varint("a field tag")?;
        let field = u32::try_from(tag >> 3).unwrap_or(u32::MAX);
        let wire_type = (tag & 0x7) as u8;
        let uint = |r: &mut Reader<'_>, slot: &mut Option<u64>, what| {
            expect(field, wire_type, VARINT)?;
            once(slot, field, r.varint(what)?)
        };
        match field {
            FORMAT => uint(&mut r, &mut f.format, "the format")?,
            NOW_MS => uint(&mut r, &mut f.now_ms, "now_ms")?,
            CLIENT_TIME => uint(&mut r, &mut f.client_time, "client_time")?,
            AS_OPERATOR => uint(&mut r, &mut f.as_operator, "as_operator")?,
            BATCH => uint(&mut r, &mut f.batch, "batch")?,
            ACTOR => {
                expect(field, wire_type, BYTES)?;
                once(
                    &mut f.actor,
                    field,
                    utf8(r.length_prefixed("actor")?, "actor")?,
                )?;
            }
            REQUEST_ID => {
                expect(field, wire_type, BYTES)?;
                let id = utf8(r.length_prefixed("request_id")?, "request_id")?;
                once(&mut f.request_id, field, id)?;
            }
            FINGERPRINT => {
                expect(field, wire_type, BYTES)?;
                once(&mut f.fingerprint, field, r.length_prefixed("fingerprint")?)?;
            }
            MEMBER => {
                expect(field, wire_type, BYTES)?;
                f.members.push(r.length_prefixed("a batch member")?);
            }
            COMMAND => {
                expect(field, wire_type, BYTES)?;
                once(&mut f.command, field, r.length_prefixed("the command")?)?;
            }
            _ => r.skip(wire_type)?,
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_of_every_wire_type_are_skipped() {
        let mut record = Vec::new();
        put_uint(&mut record, FORMAT, 3);
        put_uint(&mut record, 8, 300);
        put_bytes(&mut record, 9, b"a later build's field");
        put_tag(&mut record, 10, FIXED64);
        record.extend_from_slice(&[0; 8]);
        put_tag(&mut record, 11, FIXED32);
        record.extend_from_slice(&[0; 4]);
        put_bytes(&mut record, COMMAND, b"c");
        let f = read(&record).expect("read");
        assert_eq!(f.format, Some(3));
        assert_eq!(f.command, Some(&b"c"[..]));
    }

    #[test]
    fn bad_records_are_refused_not_misread() {
        let mut good = Vec::new();
        let mut field_ends = Vec::new();
        put_uint(&mut good, FORMAT, 3);
        field_ends.push(good.len());
        put_uint(&mut good, NOW_MS, 1_700_000_000_000);
        field_ends.push(good.len());
        put_bytes(&mut good, ACTOR, b"alice");
        field_ends.push(good.len());
        put_bytes(&mut good, COMMAND, b"command bytes");
        // Every cut inside a field fails (none panics); a cut between fields reads the fields
        // before it.
        for cut in 1..good.len() {
            let ends_a_field = field_ends.contains(&cut);
            assert_eq!(read(&good[..cut]).is_ok(), ends_a_field, "cut at {cut}");
        }
        let mut repeated = good.clone();
        put_bytes(&mut repeated, ACTOR, b"mallory");
        assert!(matches!(read(&repeated), Err(HeaderError::Repeated(ACTOR))));
        let mut wrong_type = Vec::new();
        put_bytes(&mut wrong_type, NOW_MS, b"x");
        assert!(matches!(
            read(&wrong_type),
            Err(HeaderError::WireType { field: NOW_MS, .. })
        ));
        let mut unknown_type = good.clone();
        put_tag(&mut unknown_type, 9, 7);
        assert!(matches!(
            read(&unknown_type),
            Err(HeaderError::UnknownWireType(7))
        ));
    }
}
