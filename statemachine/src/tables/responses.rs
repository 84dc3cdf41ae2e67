//! `Responses`: message id ‖ destination ‖ response seq → [`CapturedResponse`].

use crate::model::ids::MessageId;
use crate::model::response::CapturedResponse;
use crate::storage::keys::{read_u32, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;

pub(crate) fn key(message: MessageId, destination: &str, seq: u32) -> Vec<u8> {
    Key::new().u64(message.0).str(destination).u32(seq).build()
}

pub(crate) fn get<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
    destination: &str,
    seq: u32,
) -> Result<Option<CapturedResponse>, StoreError> {
    txn.get(Table::Responses, &key(message, destination, seq))
}

/// Store a response under its own `(message_id, destination, response_seq)`.
pub(crate) fn put(cx: &mut Db<'_, '_>, response: &CapturedResponse) {
    cx.txn.put(
        Table::Responses,
        key(
            response.message_id,
            &response.destination,
            response.response_seq,
        ),
        response,
    );
}

/// The highest response seq captured from `destination` for `message` (0 = none yet).
pub(crate) fn last_seq<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
    destination: &str,
) -> Result<u32, StoreError> {
    let prefix = Key::new().u64(message.0).str(destination).build();
    Ok(
        match txn
            .scan_prefix(Table::Responses, &prefix, Direction::Reverse)?
            .next()
        {
            Some(item) => {
                let (key, _) = item?;
                // The seq is the trailing u32.
                key.len()
                    .checked_sub(4)
                    .and_then(|at| read_u32(&key, at))
                    .unwrap_or(0)
            }
            None => 0,
        },
    )
}

/// Every response captured for a message, in key order.
pub(crate) fn of_message<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    message: MessageId,
) -> Result<Vec<CapturedResponse>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan_prefix(Table::Responses, &message.to_be_bytes(), Direction::Forward)? {
        out.push(Txn::<S>::decode(Table::Responses, &item?.1)?);
    }
    Ok(out)
}

/// Delete every response captured for a message (retention).
pub(crate) fn delete_of_message(cx: &mut Db<'_, '_>, message: MessageId) -> Result<(), StoreError> {
    let mut keys = Vec::new();
    for item in cx
        .txn
        .scan_prefix(Table::Responses, &message.to_be_bytes(), Direction::Forward)?
    {
        keys.push(item?.0);
    }
    for k in keys {
        cx.txn.delete(Table::Responses, k);
    }
    Ok(())
}
