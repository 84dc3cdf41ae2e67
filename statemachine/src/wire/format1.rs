//! Log format 1: how every build before format 2 wrote an [`Envelope`], kept so that their logs
//! still replay (`tests/old_log.rs` replays a log recorded by such a build) and so that a node
//! of this build writes what a node of the previous one reads until the cluster's format is
//! raised (docs/SPEC.md §2.8).
//!
//! The layout is bincode of the fields in declaration order: `now_ms` (u64), `actor` (string),
//! `request_id` (option of string), `command` (the [`Command`] by position). Nothing can be
//! added to it: bincode writes no field names or lengths, so a reader of one more field would
//! misread every older entry.

use crate::wire::command::{Command, Envelope};
use crate::wire::log_format::{LogFormat, FORMAT_2_MARK};
use serde::de::{self, MapAccess, SeqAccess};
use serde::ser::{self, SerializeStruct};
use serde::Serializer;

/// The field names of format 1, in their order.
pub(crate) const V1_FIELDS: &[&str] = &["now_ms", "actor", "request_id", "command"];

/// Write `envelope` in format 1. Its `now_ms` may not be the word that opens format 2.
pub(crate) fn serialize_v1<S: Serializer>(
    envelope: &Envelope,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    if envelope.now_ms == FORMAT_2_MARK {
        return Err(ser::Error::custom(
            "now_ms u64::MAX is reserved: it opens a format 2 envelope",
        ));
    }
    let mut s = serializer.serialize_struct("Envelope", V1_FIELDS.len())?;
    s.serialize_field("now_ms", &envelope.now_ms)?;
    s.serialize_field("actor", &envelope.actor)?;
    s.serialize_field("request_id", &envelope.request_id)?;
    s.serialize_field("command", &envelope.command)?;
    s.end()
}

/// The rest of a format 1 envelope whose `now_ms` was read already.
pub(crate) fn visit_v1_rest<'de, A: SeqAccess<'de>>(
    now_ms: u64,
    mut seq: A,
) -> Result<Envelope, A::Error> {
    let missing = |i| de::Error::invalid_length(i, &"a format 1 envelope");
    let actor: String = seq.next_element()?.ok_or_else(|| missing(1))?;
    let request_id: Option<String> = seq.next_element()?.ok_or_else(|| missing(2))?;
    let command: Command = seq.next_element()?.ok_or_else(|| missing(3))?;
    Ok(Envelope {
        now_ms,
        actor,
        request_id,
        command,
        format: LogFormat::V1,
    })
}

/// A format 1 envelope from a self-describing format (field names as keys).
pub(crate) fn visit_v1_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Envelope, A::Error> {
    let (mut now_ms, mut actor, mut request_id, mut command) = (None, None, None, None);
    while let Some(key) = map.next_key::<String>()? {
        match key.as_str() {
            "now_ms" => now_ms = Some(map.next_value()?),
            "actor" => actor = Some(map.next_value()?),
            "request_id" => request_id = Some(map.next_value()?),
            "command" => command = Some(map.next_value()?),
            other => return Err(de::Error::unknown_field(other, V1_FIELDS)),
        }
    }
    Ok(Envelope {
        now_ms: now_ms.ok_or_else(|| de::Error::missing_field("now_ms"))?,
        actor: actor.ok_or_else(|| de::Error::missing_field("actor"))?,
        request_id: request_id.unwrap_or(None),
        command: command.ok_or_else(|| de::Error::missing_field("command"))?,
        format: LogFormat::V1,
    })
}
