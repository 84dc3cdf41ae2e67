//! `Messages` (message id → [`Message`]), their events (`Events`: message id ‖ event no →
//! [`Event`]) and each message's event count (`EventCounts`: message id → u64).

use crate::model::ids::MessageId;
use crate::model::message::{Event, EventKind, Message};
use crate::storage::keys::{read_u64, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

pub(crate) fn key(id: MessageId) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

pub(crate) fn event_key(message: MessageId, no: u64) -> Vec<u8> {
    Key::new().u64(message.0).u64(no).build()
}

/// `(message, event no)` of an `Events` key.
pub(crate) fn parse_event_key(key: &[u8]) -> Option<(MessageId, u64)> {
    Some((MessageId(read_u64(key, 0)?), read_u64(key, 8)?))
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    id: MessageId,
) -> Result<Option<Message>, StoreError> {
    txn.get(Table::Messages, &key(id))
}

pub(crate) fn save(cx: &mut Db<'_, '_>, message: &Message) {
    cx.txn.put(Table::Messages, key(message.id), message);
}

/// Allocate the next message id.
pub(crate) fn next_id(cx: &mut Db<'_, '_>) -> MessageId {
    let id = MessageId(cx.meta.next_message_id);
    cx.meta.next_message_id += 1;
    id
}

/// Every message in id order (`dir`), lazily.
pub(crate) fn all<'a, S: Store + ?Sized>(
    txn: &'a Txn<'_, S>,
    dir: Direction,
) -> Result<impl Iterator<Item = Result<Message, StoreError>> + 'a, StoreError> {
    let scan = txn.scan(Table::Messages, &[], None, dir)?;
    Ok(scan.map(|item| item.and_then(|(_, v)| Txn::<S>::decode(Table::Messages, &v))))
}

/// Messages with ids in `[from, until)`, in id order, lazily.
pub(crate) fn between<'a, S: Store + ?Sized>(
    txn: &'a Txn<'_, S>,
    from: MessageId,
    until: MessageId,
) -> Result<impl Iterator<Item = Result<Message, StoreError>> + 'a, StoreError> {
    let scan = txn.scan(
        Table::Messages,
        &key(from),
        Some(&key(until)),
        Direction::Forward,
    )?;
    Ok(scan.map(|item| item.and_then(|(_, v)| Txn::<S>::decode(Table::Messages, &v))))
}

/// Messages with an id below `before` (every message when `None`), newest first: where a
/// paged list resumes without scanning what earlier pages saw.
pub(crate) fn newest_below<'a, S: Store + ?Sized>(
    txn: &'a Txn<'_, S>,
    before: Option<MessageId>,
) -> Result<impl Iterator<Item = Result<Message, StoreError>> + 'a, StoreError> {
    let end = before.map(key);
    let scan = txn.scan(Table::Messages, &[], end.as_deref(), Direction::Reverse)?;
    Ok(scan.map(|item| item.and_then(|(_, v)| Txn::<S>::decode(Table::Messages, &v))))
}

/// Append an event to a message's history.
///
/// Its number comes from the message's count in [`Table::EventCounts`]: a point read, where
/// finding the last event by a reverse seek over the message's events built a RocksDB iterator
/// over every memtable and level for each event (5.6 % of a saturated pipeline's CPU). A
/// message without a count (one stored before the table existed) is numbered by that seek.
pub(crate) fn event(
    cx: &mut Db<'_, '_>,
    message: MessageId,
    kind: EventKind,
    destination: Option<&str>,
    detail: Option<String>,
) -> Result<(), StoreError> {
    let prefix = key(message);
    let next = match cx.txn.get::<u64>(Table::EventCounts, &prefix)? {
        Some(count) => count,
        None => match cx
            .txn
            .scan_prefix(Table::Events, &prefix, Direction::Reverse)?
            .next()
        {
            Some(item) => read_u64(&item?.0, 8).map_or(0, |n| n + 1),
            None => 0,
        },
    };
    put_event(cx, message, next, kind, destination, detail);
    Ok(())
}

/// The first event of a message that the current command creates: number 0, without reading
/// its count (a new message has none). Like messagefoundry's stores, a message opens with one
/// event: `received` (with what it was received for), or the born-terminal `filtered`/`error`.
pub(crate) fn first_event(
    cx: &mut Db<'_, '_>,
    message: MessageId,
    kind: EventKind,
    detail: Option<String>,
) {
    put_event(cx, message, 0, kind, None, detail);
}

/// Store event number `no` and the message's new count, `no + 1`.
fn put_event(
    cx: &mut Db<'_, '_>,
    message: MessageId,
    no: u64,
    kind: EventKind,
    destination: Option<&str>,
    detail: Option<String>,
) {
    let event = Event {
        ts: cx.t,
        event: kind,
        destination: destination.map(str::to_string),
        detail,
    };
    cx.txn.put(Table::Events, event_key(message, no), &event);
    cx.txn.put(Table::EventCounts, key(message), &(no + 1));
}

pub(crate) fn events<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
) -> Result<Vec<Event>, StoreError> {
    Ok(numbered_events(txn, message)?
        .into_iter()
        .map(|(_, e)| e)
        .collect())
}

/// A message's events with their numbers, in order.
pub(crate) fn numbered_events<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
) -> Result<Vec<(u64, Event)>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan_prefix(Table::Events, &key(message), Direction::Forward)? {
        let (k, v) = item?;
        let no = read_u64(&k, 8).unwrap_or(0);
        out.push((no, Txn::<S>::decode(Table::Events, &v)?));
    }
    Ok(out)
}

/// A message's newest event: a point read by its count, or (a message stored before counts
/// existed) the last key of its events.
pub(crate) fn last_event<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
) -> Result<Option<Event>, StoreError> {
    if let Some(count) = txn.get::<u64>(Table::EventCounts, &key(message))? {
        return match count.checked_sub(1) {
            Some(no) => get_event(txn, message, no),
            None => Ok(None),
        };
    }
    match txn
        .scan_prefix(Table::Events, &key(message), Direction::Reverse)?
        .next()
    {
        Some(item) => Ok(Some(Txn::<S>::decode(Table::Events, &item?.1)?)),
        None => Ok(None),
    }
}

pub(crate) fn get_event<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
    no: u64,
) -> Result<Option<Event>, StoreError> {
    txn.get(Table::Events, &event_key(message, no))
}

/// Replace event `no` of a message in place (its count is unchanged).
pub(crate) fn replace_event(cx: &mut Db<'_, '_>, message: MessageId, no: u64, event: &Event) {
    cx.txn.put(Table::Events, event_key(message, no), event);
}

/// Delete a message with its events and event count (retention; its rows and responses are
/// deleted through their own tables).
pub(crate) fn delete(cx: &mut Db<'_, '_>, message: MessageId) -> Result<(), StoreError> {
    let prefix = key(message);
    let mut event_keys = Vec::new();
    for item in cx
        .txn
        .scan_prefix(Table::Events, &prefix, Direction::Forward)?
    {
        event_keys.push(item?.0);
    }
    for k in event_keys {
        cx.txn.delete(Table::Events, k);
    }
    cx.txn.delete(Table::EventCounts, prefix.clone());
    cx.txn.delete(Table::Messages, prefix);
    Ok(())
}
