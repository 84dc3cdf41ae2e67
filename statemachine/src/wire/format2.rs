//! Log format 2: an envelope as a [record](crate::wire::record) of numbered fields 1 to 4
//! (format, `now_ms`, `actor`, `request_id`) and 15, the command in the layout of format 1
//! ([`crate::wire::layout_v1`]: test mode's time, the fingerprint and the operator's word are
//! wrapper commands there, and some commands twins). Kept so that a cluster that ran format 2
//! still replays its log, and so that a node writes what a format 2 reader reads until the
//! cluster's format is raised.

use crate::wire::codec::{self, DecodeError};
use crate::wire::command::Envelope;
use crate::wire::layout_v1::{self, CommandV1};
use crate::wire::log_format::LogFormat;
use crate::wire::record::{self, HeaderError};

/// The format 2 record of `envelope` (its `format` field aside: this is format 2).
pub(crate) fn encode(envelope: &Envelope) -> Result<Vec<u8>, DecodeError> {
    let command = layout_v1::join(&layout_v1::wrappers(envelope), &envelope.command)?;
    let command = codec::try_encode(&command)?;
    let mut out = Vec::with_capacity(command.len() + envelope.actor.len() + 32);
    record::put_uint(&mut out, record::FORMAT, u64::from(LogFormat::V2.number()));
    record::put_uint(&mut out, record::NOW_MS, envelope.now_ms);
    record::put_bytes(&mut out, record::ACTOR, envelope.actor.as_bytes());
    if let Some(id) = &envelope.request_id {
        record::put_bytes(&mut out, record::REQUEST_ID, id.as_bytes());
    }
    record::put_bytes(&mut out, record::COMMAND, &command);
    Ok(out)
}

/// The envelope of a format 2 record, whose fields were read already.
pub(crate) fn decode(fields: record::Fields<'_>) -> Result<Envelope, HeaderError> {
    let bytes = fields.command.ok_or(HeaderError::Missing("command"))?;
    let (wrappers, command) = layout_v1::split(codec::decode::<CommandV1>(bytes)?);
    Ok(Envelope {
        now_ms: fields.now_ms.unwrap_or(0),
        actor: fields.actor.unwrap_or_default(),
        request_id: fields.request_id,
        client_time: wrappers.client_time,
        fingerprint: wrappers.fingerprint,
        as_operator: wrappers.as_operator,
        command,
        format: LogFormat::V2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::command::{AuditAuthor, Command, RecordAudit};
    use crate::wire::record::{
        put_bytes, put_uint, read, ACTOR, COMMAND, FORMAT, NOW_MS, REQUEST_ID,
    };

    fn sample() -> Envelope {
        let mut e = Envelope::new(
            1_700_000_000_123,
            "alice",
            Command::RecordAudit(RecordAudit {
                action: "a".into(),
                channel: None,
                org: None,
                detail: Some("d".into()),
                author: AuditAuthor::Named(Some("bob".into())),
            }),
        )
        .with_request_id("r-1")
        .fingerprinted(Some([7; 32]))
        .as_operator(true);
        e.set_format(LogFormat::V2);
        e
    }

    #[test]
    fn a_record_decodes_to_its_envelope() {
        let e = sample();
        let bytes = encode(&e).expect("encode");
        assert_eq!(decode(read(&bytes).expect("read")).expect("decode"), e);
    }

    #[test]
    fn fields_in_another_order_read_the_same() {
        let e = sample();
        let mut record = Vec::new();
        let command = layout_v1::join(&layout_v1::wrappers(&e), &e.command).expect("join");
        put_bytes(&mut record, COMMAND, &codec::encode(&command));
        put_bytes(&mut record, REQUEST_ID, b"r-1");
        put_bytes(&mut record, ACTOR, b"alice");
        put_uint(&mut record, NOW_MS, e.now_ms);
        put_uint(&mut record, FORMAT, 2);
        assert_eq!(decode(read(&record).expect("read")).expect("decode"), e);
    }

    #[test]
    fn a_record_without_a_command_is_refused() {
        let mut record = Vec::new();
        put_uint(&mut record, FORMAT, 2);
        assert!(matches!(
            decode(read(&record).expect("read")),
            Err(HeaderError::Missing("command"))
        ));
    }
}
