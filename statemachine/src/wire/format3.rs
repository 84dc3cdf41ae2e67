//! Log format 3: an envelope as a [record](crate::wire::record) whose header fields carry all
//! that belongs to the envelope (the proposer's clock, the actor, the request id, test mode's
//! client time, the request's fingerprint, the operator's word, and a batch's members as
//! records of their own), and whose field 15 carries one [`Command`] of the one vocabulary (no
//! wrapper commands, no twins). What it is for: the next field is added by giving it the next
//! number, not by inventing a command that wraps another.

use crate::wire::codec::{self, DecodeError};
use crate::wire::command::{Batch, Command, Envelope, Nested};
use crate::wire::layout_v1::CommandV1;
use crate::wire::log_format::LogFormat;
use crate::wire::record::{self, HeaderError};

/// The record of `envelope` in `format` (3 or 4: one layout, numbered by its format, whose
/// rules apply the entry; a batch's members are written in the batch's format).
pub(crate) fn encode(envelope: &Envelope, format: LogFormat) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(envelope.actor.len() + 64);
    record::put_uint(&mut out, record::FORMAT, u64::from(format.number()));
    record::put_uint(&mut out, record::NOW_MS, envelope.now_ms);
    record::put_bytes(&mut out, record::ACTOR, envelope.actor.as_bytes());
    if let Some(id) = &envelope.request_id {
        record::put_bytes(&mut out, record::REQUEST_ID, id.as_bytes());
    }
    if let Some(t) = envelope.client_time {
        record::put_uint(&mut out, record::CLIENT_TIME, t);
    }
    if let Some(fingerprint) = &envelope.fingerprint {
        record::put_bytes(&mut out, record::FINGERPRINT, fingerprint);
    }
    if envelope.as_operator {
        record::put_uint(&mut out, record::AS_OPERATOR, 1);
    }
    match &envelope.command {
        Command::Batch(batch) => {
            record::put_uint(&mut out, record::BATCH, 1);
            for member in &batch.commands {
                record::put_bytes(&mut out, record::MEMBER, &encode(member, format)?);
            }
        }
        command => record::put_bytes(&mut out, record::COMMAND, &codec::try_encode(command)?),
    }
    Ok(out)
}

/// The envelope of a format 3 or 4 record (`format`, as its first field said), whose fields
/// were read already.
pub(crate) fn decode(
    fields: record::Fields<'_>,
    format: LogFormat,
) -> Result<Envelope, HeaderError> {
    let command = match (fields.batch, fields.command) {
        (None, Some(bytes)) if fields.members.is_empty() => command_of(bytes)?,
        (Some(1), None) => Command::Batch(Batch {
            commands: fields
                .members
                .iter()
                .map(|member| member_of(member, format))
                .collect::<Result<_, _>>()?,
        }),
        (Some(_), None) => return Err(HeaderError::Value("batch")),
        (None, None) => return Err(HeaderError::Missing("command")),
        // A command beside members, or beside the batch mark: which one the entry is would be
        // a guess.
        _ => return Err(HeaderError::Value("command")),
    };
    let fingerprint = match fields.fingerprint {
        None => None,
        Some(bytes) => {
            Some(<[u8; 32]>::try_from(bytes).map_err(|_| HeaderError::Value("fingerprint"))?)
        }
    };
    let as_operator = match fields.as_operator {
        None => false,
        Some(1) => true,
        Some(_) => return Err(HeaderError::Value("as_operator")),
    };
    Ok(Envelope {
        now_ms: fields.now_ms.unwrap_or(0),
        actor: fields.actor.unwrap_or_default(),
        request_id: fields.request_id,
        client_time: fields.client_time,
        fingerprint,
        as_operator,
        command,
        format,
    })
}

/// The command of field 15. A kept format 1/2 command ([`Nested`]) must be one, so that the
/// envelope can be written back in the format it came from.
fn command_of(bytes: &[u8]) -> Result<Command, HeaderError> {
    let command = codec::decode::<Command>(bytes)?;
    if let Command::Nested(Nested(v1)) = &command {
        codec::decode::<CommandV1>(v1)?;
    }
    Ok(command)
}

/// A batch member: a record of its own, in the batch's format.
fn member_of(bytes: &[u8], format: LogFormat) -> Result<Envelope, HeaderError> {
    let fields = record::read(bytes)?;
    match fields.format {
        Some(n) if n == u64::from(format.number()) => decode(fields, format),
        Some(other) => Err(HeaderError::Format(other)),
        None => Err(HeaderError::Missing("format")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::command::{AuditAuthor, EnqueueIngress, RecordAudit};
    use crate::wire::record::{put_bytes, put_uint, read, BATCH, COMMAND, FORMAT, MEMBER};

    fn audit() -> Command {
        Command::RecordAudit(RecordAudit {
            action: "a".into(),
            channel: None,
            org: None,
            detail: Some("d".into()),
            author: AuditAuthor::Principal,
        })
    }

    fn roundtrip(e: &Envelope) -> Envelope {
        let bytes = encode(e, e.format).expect("encode");
        decode(read(&bytes).expect("read"), e.format).expect("decode")
    }

    #[test]
    fn every_header_field_survives_a_round_trip() {
        let mut e = Envelope::new(1_700_000_000_123, "alice", audit())
            .with_request_id("r-1")
            .at_client_time(Some(20_000))
            .fingerprinted(Some([9; 32]))
            .as_operator(true);
        e.set_format(LogFormat::V3);
        assert_eq!(roundtrip(&e), e);
        let mut plain = Envelope::new(5, "bob", audit());
        plain.set_format(LogFormat::V3);
        assert_eq!(roundtrip(&plain), plain);
        // Format 4 is the same layout under its own number.
        e.set_format(LogFormat::V4);
        assert_eq!(roundtrip(&e), e);
        let bytes = encode(&e, LogFormat::V4).expect("encode");
        assert_eq!(read(&bytes).expect("read").format, Some(4));
    }

    #[test]
    fn a_member_in_another_format_than_its_batch_is_refused() {
        let mut member = Envelope::new(7, "a", audit());
        member.set_format(LogFormat::V4);
        let mut r = Vec::new();
        put_uint(&mut r, FORMAT, 3);
        put_uint(&mut r, BATCH, 1);
        put_bytes(
            &mut r,
            MEMBER,
            &encode(&member, LogFormat::V4).expect("encode"),
        );
        assert!(matches!(
            decode(read(&r).unwrap(), LogFormat::V3),
            Err(HeaderError::Format(4))
        ));
    }

    #[test]
    fn a_batch_is_its_members() {
        let member = |actor: &str| {
            Envelope::new(7, actor, audit())
                .with_request_id(format!("{actor}/0"))
                .fingerprinted(Some([1; 32]))
        };
        let mut batch = Envelope::new(
            8,
            "raftlane:batch",
            Command::Batch(Batch {
                commands: vec![member("a"), member("b")],
            }),
        );
        batch.set_format(LogFormat::V3);
        let bytes = encode(&batch, LogFormat::V3).expect("encode");
        let fields = read(&bytes).expect("read");
        assert_eq!(fields.members.len(), 2);
        assert!(fields.command.is_none());
        assert_eq!(decode(fields, LogFormat::V3).expect("decode"), batch);
        let mut empty = Envelope::new(
            8,
            "raftlane:batch",
            Command::Batch(Batch { commands: vec![] }),
        );
        empty.set_format(LogFormat::V3);
        assert_eq!(roundtrip(&empty), empty);
    }

    #[test]
    fn an_ambiguous_or_malformed_record_is_refused() {
        let command = codec::encode(&Command::EnqueueIngress(EnqueueIngress {
            channel: "c".into(),
            raw: String::new(),
            fields: Default::default(),
            idempotency_key: None,
        }));
        let base = || {
            let mut r = Vec::new();
            put_uint(&mut r, FORMAT, 3);
            r
        };
        let mut both = base();
        put_uint(&mut both, BATCH, 1);
        put_bytes(&mut both, COMMAND, &command);
        assert!(matches!(
            decode(read(&both).unwrap(), LogFormat::V3),
            Err(HeaderError::Value("command"))
        ));
        let mut neither = base();
        neither.extend_from_slice(&[]);
        assert!(matches!(
            decode(read(&neither).unwrap(), LogFormat::V3),
            Err(HeaderError::Missing("command"))
        ));
        let mut short_fingerprint = base();
        put_bytes(
            &mut short_fingerprint,
            crate::wire::record::FINGERPRINT,
            &[1; 31],
        );
        put_bytes(&mut short_fingerprint, COMMAND, &command);
        assert!(matches!(
            decode(read(&short_fingerprint).unwrap(), LogFormat::V3),
            Err(HeaderError::Value("fingerprint"))
        ));
        let mut member_of_format_2 = base();
        put_uint(&mut member_of_format_2, BATCH, 1);
        let mut member = Vec::new();
        put_uint(&mut member, FORMAT, 2);
        put_bytes(&mut member, COMMAND, &command);
        put_bytes(&mut member_of_format_2, MEMBER, &member);
        assert!(matches!(
            decode(read(&member_of_format_2).unwrap(), LogFormat::V3),
            Err(HeaderError::Format(2))
        ));
    }
}
