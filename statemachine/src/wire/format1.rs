//! Log format 1: how every build before format 2 wrote an [`Envelope`], kept so that their logs
//! still replay (`tests/old_log.rs` replays a log recorded by such a build) and so that a node
//! of this build writes what a node of the previous one reads until the cluster's format is
//! raised (docs/SPEC.md §2.8).
//!
//! The layout is bincode of the fields in declaration order: `now_ms` (u64), `actor` (string),
//! `request_id` (option of string), `command` (a [`CommandV1`] by position, the rest of the
//! header wrapped around it: [`crate::wire::layout_v1`]). Nothing can be added to it: bincode
//! writes no field names or lengths, so a reader of one more field would misread every older
//! entry.

use crate::wire::command::Envelope;
use crate::wire::layout_v1::{self, CommandV1};
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
    let command = layout_v1::join(&layout_v1::wrappers(envelope), &envelope.command)
        .map_err(ser::Error::custom)?;
    s.serialize_field("command", &command)?;
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
    let command: CommandV1 = seq.next_element()?.ok_or_else(|| missing(3))?;
    Ok(envelope_v1(now_ms, actor, request_id, command))
}

/// The envelope a format 1 entry stands for: its wrappers become header fields.
fn envelope_v1(
    now_ms: u64,
    actor: String,
    request_id: Option<String>,
    command: CommandV1,
) -> Envelope {
    let (wrappers, command) = layout_v1::split(command);
    Envelope {
        now_ms,
        actor,
        request_id,
        client_time: wrappers.client_time,
        fingerprint: wrappers.fingerprint,
        as_operator: wrappers.as_operator,
        command,
        format: LogFormat::V1,
    }
}

/// A format 1 envelope from a self-describing format (field names as keys).
pub(crate) fn visit_v1_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Envelope, A::Error> {
    let (mut now_ms, mut actor, mut request_id, mut command) =
        (None, None, None, None::<CommandV1>);
    while let Some(key) = map.next_key::<String>()? {
        match key.as_str() {
            "now_ms" => now_ms = Some(map.next_value()?),
            "actor" => actor = Some(map.next_value()?),
            "request_id" => request_id = Some(map.next_value()?),
            "command" => command = Some(map.next_value()?),
            other => return Err(de::Error::unknown_field(other, V1_FIELDS)),
        }
    }
    Ok(envelope_v1(
        now_ms.ok_or_else(|| de::Error::missing_field("now_ms"))?,
        actor.ok_or_else(|| de::Error::missing_field("actor"))?,
        request_id.unwrap_or(None),
        command.ok_or_else(|| de::Error::missing_field("command"))?,
    ))
}
