//! Encryption at rest (docs/SPEC.md §2.6) as one wrapper around proposals and reads.
//!
//! Every command proposed through [`super::Proposer::write`] is sealed here, once, before it is
//! batched or forwarded: its covered values are encrypted under the keyring's active key, so
//! the Raft log, snapshots and every replica's state hold the same ciphertext and `apply` stays
//! free of cryptography. Every answer read through [`super::Proposer::read_covered`] is opened
//! here on its way out. The http layer builds plain commands and never sees ciphertext.
//!
//! Which values are covered is said once per type, by its [`Covered`] impl: the impl for
//! [`Command`] matches every variant (a new command must say what it carries), the read types
//! name their stored fields. A claimed row's payload is opened by the claim path instead
//! (`super::claim`): a payload that cannot be decrypted there is a poison row, not a value to
//! show as stored.
//!
//! With no keyring configured both directions are no-ops: values are stored and served as sent.

use crate::crypto::{CryptoError, Keyring, PREFIX};
use raftlane_statemachine::model::message::{Event, Message};
use raftlane_statemachine::model::response::CapturedResponse;
use raftlane_statemachine::model::state::{ReferenceSnapshot, StateEntry};
use raftlane_statemachine::query::MessageView;
use raftlane_statemachine::row::WorkRow;
use raftlane_statemachine::wire::command::{Delivery, HandOn, HandlerWork, TransformHandoff};
use raftlane_statemachine::Command;
use std::convert::Infallible;

/// A value holding covered values (docs/SPEC.md §2.6): message `raw` and `error`, row payloads
/// and `last_error`, event details, captured response `body` and `detail`, transform-state
/// values and reference-snapshot values.
pub trait Covered {
    /// Call `f` on each covered value, in place, stopping at its first error.
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E>;
}

fn each_opt<E>(
    value: &mut Option<String>,
    f: &mut impl FnMut(&mut String) -> Result<(), E>,
) -> Result<(), E> {
    value.as_mut().map_or(Ok(()), f)
}

fn each_delivery<E>(
    deliveries: &mut [Delivery],
    f: &mut impl FnMut(&mut String) -> Result<(), E>,
) -> Result<(), E> {
    deliveries.iter_mut().try_for_each(|d| f(&mut d.payload))
}

fn each_handler<E>(
    handlers: &mut [HandlerWork],
    f: &mut impl FnMut(&mut String) -> Result<(), E>,
) -> Result<(), E> {
    handlers.iter_mut().try_for_each(|h| f(&mut h.payload))
}

/// A transform's covered values: its deliveries' payloads and its state writes' values.
fn each_transform<E>(
    t: &mut TransformHandoff,
    f: &mut impl FnMut(&mut String) -> Result<(), E>,
) -> Result<(), E> {
    each_delivery(&mut t.deliveries, f)?;
    t.state_ops.iter_mut().try_for_each(|op| f(&mut op.value))
}

/// What a command carries of covered values: what [`AtRest::seal`] encrypts.
impl Covered for Command {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            Command::EnqueueIngress(c) => f(&mut c.raw),
            // Not proposed by the API today; a message's raw and error are covered wherever
            // they come from.
            Command::RecordReceived(c) => {
                f(&mut c.raw)?;
                each_opt(&mut c.error, f)
            }
            Command::EnqueueMessage(c) => {
                f(&mut c.raw)?;
                each_delivery(&mut c.deliveries, f)
            }
            Command::RouteHandoff(c) => each_handler(&mut c.handlers, f),
            Command::Handoff(c) => each_delivery(&mut c.deliveries, f),
            Command::TransformHandoff(c) => each_transform(c, f),
            // The handoff it carries, as that handoff on its own.
            Command::HandOnThenClaimNext(c) => match &mut c.action {
                HandOn::Route(h) => each_handler(&mut h.handlers, f),
                HandOn::Handoff(h) => each_delivery(&mut h.deliveries, f),
                HandOn::Transform(h) => each_transform(h, f),
            },
            Command::CompleteWithResponse(c) => {
                f(&mut c.body)?;
                each_opt(&mut c.detail, f)
            }
            Command::MarkFailed(c) => f(&mut c.error),
            Command::DeadLetterNow(c) => f(&mut c.error),
            Command::WriteReferenceSnapshot(c) => c.rows.values_mut().try_for_each(f),
            Command::Batch(b) => b
                .commands
                .iter_mut()
                .try_for_each(|e| e.command.each_covered(f)),
            // A key rotation's compare-and-set: its values are ciphertext (or the plaintext it
            // expects to find) already, made by the rotation itself.
            Command::RewriteValues(_) => Ok(()),
            // Names, ids, fences, leases, configuration, audit rows, approvals, principals:
            // nothing covered.
            Command::ClaimReady(_)
            | Command::ClaimNextFifo(_)
            | Command::RenewLeases(_)
            | Command::ReclaimExpired(_)
            | Command::ReleaseLane(_)
            | Command::MarkDone(_)
            | Command::IngressHandoff(_)
            | Command::Replay(_)
            | Command::ReplayDead(_)
            | Command::CancelQueued(_)
            | Command::SetDestinationPaused(_)
            | Command::SetLogFormat(_)
            // A format 1/2 command no proposer writes; refused by apply.
            | Command::Nested(_)
            | Command::PutConfig(_)
            | Command::PurgeMessageBodies(_)
            | Command::PurgeDeadLetters(_)
            | Command::PurgeState(_)
            | Command::ExpireRecords
            | Command::RecordAudit(_)
            | Command::SealAuditEpoch(_)
            | Command::CreateApproval(_)
            | Command::DecideApproval(_)
            | Command::PutPrincipal(_)
            | Command::RevokePrincipal(_)
            | Command::DoneThenClaimNext(_) => Ok(()),
            // Users, roles and sessions (docs/SPEC.md §13): password and recovery-code hashes
            // and session token hashes are one-way already. The TOTP secret is not covered yet:
            // key rotation (RewriteValues) does not reach user records, so a secret sealed under
            // a key later retired would become unreadable; covering it needs a ValueRef for it.
            Command::CreateUser(_)
            | Command::UpdateUser(_)
            | Command::DeleteUser(_)
            | Command::UpsertRole(_)
            | Command::SetUserRoles(_)
            | Command::SetAdGroupMap(_)
            | Command::CreateSession(_)
            | Command::UpdateSession(_)
            | Command::RevokeUserSessions(_)
            | Command::EnforceSessionCap(_)
            | Command::PurgeExpiredSessions(_)
            | Command::SessionAt(_) => Ok(()),
            // The queue side of the messagefoundry store (docs/SPEC.md §14): a viewer lands in
            // an event's detail and reference values are covered like WriteReferenceSnapshot's;
            // the rest carries names, ids, owners, audit rows and approvals.
            Command::RecordView(c) => each_opt(&mut c.viewer, f),
            Command::ClaimFifoHead(_)
            | Command::ResetStaleInflight(_)
            | Command::DeadLetterMissingDestinations(_)
            | Command::DeadLetterMissingHandlers(_)
            | Command::RecoverInflightOnPromotion(_) => Ok(()),
            // Engine coordination: names, times and counters, nothing covered.
            Command::NodeHeartbeat(_)
            | Command::NodeLeave(_)
            | Command::CampaignLeadership(_)
            | Command::ResignLeadership(_)
            | Command::BumpCounter(_)
            | Command::ConsumeApproval(_)
            | Command::SetPrincipalOrgs(_) => Ok(()),
            // A token is stored as its hash, and its nonce is useless without the nodes' token
            // key.
            Command::IssueToken(_) => Ok(()),
            // A pass, a cutoff and a page size: nothing a client wrote.
            Command::RetentionPage(_) => Ok(()),
            // A name and a principal's name.
            Command::ReserveOwner(_) => Ok(()),
        }
    }
}

impl Covered for Message {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        f(&mut self.raw)?;
        each_opt(&mut self.error, f)
    }
}

impl Covered for WorkRow {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        f(&mut self.payload)?;
        each_opt(&mut self.last_error, f)
    }
}

/// An event's detail may be composed by the state machine around a covered value (a retry's
/// `attempt 2: enc:v1:…`): opening decrypts every token embedded in it.
impl Covered for Event {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        each_opt(&mut self.detail, f)
    }
}

impl Covered for CapturedResponse {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        f(&mut self.body)?;
        each_opt(&mut self.detail, f)
    }
}

impl Covered for MessageView {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.message.each_covered(f)?;
        self.events.each_covered(f)?;
        self.rows.each_covered(f)?;
        self.responses.each_covered(f)
    }
}

impl Covered for StateEntry {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        f(&mut self.value)
    }
}

impl Covered for ReferenceSnapshot {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.rows.values_mut().try_for_each(f)
    }
}

impl Covered for raftlane_statemachine::query::ListedMessage {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.message.each_covered(f)
    }
}

impl Covered for raftlane_statemachine::query::MessagePage {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.messages.each_covered(f)
    }
}

impl Covered for raftlane_statemachine::query::DeadLetter {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.row.each_covered(f)
    }
}

impl Covered for raftlane_statemachine::query::ReferenceSet {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.snapshot.each_covered(f)
    }
}

/// A keyed value (a state entry under its key): the key is a name, never covered.
impl<K, T: Covered> Covered for (K, T) {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.1.each_covered(f)
    }
}

impl<T: Covered> Covered for Vec<T> {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.iter_mut().try_for_each(|v| v.each_covered(f))
    }
}

impl<T: Covered> Covered for Option<T> {
    fn each_covered<E>(
        &mut self,
        f: &mut impl FnMut(&mut String) -> Result<(), E>,
    ) -> Result<(), E> {
        self.as_mut().map_or(Ok(()), |v| v.each_covered(f))
    }
}

/// This node's keyring applied to what it proposes and what it serves.
#[derive(Clone, Debug, Default)]
pub struct AtRest {
    keyring: Option<Keyring>,
}

impl AtRest {
    /// Encryption at rest under `keyring`; `None` = off.
    pub fn new(keyring: Option<Keyring>) -> Self {
        Self { keyring }
    }

    /// The keyring, when encryption at rest is on.
    pub fn keyring(&self) -> Option<&Keyring> {
        self.keyring.as_ref()
    }

    /// Encrypt every covered value of `value` under the active key, each with a fresh nonce.
    /// Empty values stay empty: there is nothing to hide, and an empty ciphertext would not be
    /// one (docs/SPEC.md §2.6).
    pub fn seal<T: Covered>(&self, value: &mut T) -> Result<(), CryptoError> {
        let Some(keyring) = &self.keyring else {
            return Ok(());
        };
        value.each_covered(&mut |v: &mut String| {
            if !v.is_empty() {
                *v = keyring.encrypt(v)?;
            }
            Ok(())
        })
    }

    /// Decrypt every covered value of `value` for a reader, including tokens embedded in a
    /// composed event detail. A value without the `enc:v1:` prefix is legacy plaintext and
    /// served as stored; so is a value no configured key can decrypt (its ciphertext names its
    /// key id), rather than failing the whole read.
    pub fn open<T: Covered>(&self, value: &mut T) {
        let Some(keyring) = &self.keyring else {
            return;
        };
        let opened = value.each_covered(&mut |v: &mut String| -> Result<(), Infallible> {
            if v.contains(PREFIX) {
                match keyring.open(v) {
                    Ok(plain) => *v = plain,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot decrypt a stored value; shown as stored")
                    }
                }
            }
            Ok(())
        });
        match opened {
            Ok(()) => {}
            Err(never) => match never {},
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftlane_statemachine::wire::command::{
        ClaimNextFifo, CompleteWithResponse, EnqueueIngress, MarkDone, MessageFields,
    };
    use raftlane_statemachine::{Fence, RowId};

    fn ring() -> AtRest {
        AtRest::new(Some(
            Keyring::new(vec![("k1".to_string(), [1u8; 32])]).expect("keyring"),
        ))
    }

    #[test]
    fn sealing_encrypts_exactly_the_covered_values() {
        let at_rest = ring();
        let mut c = Command::CompleteWithResponse(CompleteWithResponse {
            row_id: RowId(1),
            fence: Fence(2),
            body: "secret body".into(),
            outcome: "ok".into(),
            detail: None,
            reingress_to: Some("loop".into()),
        });
        at_rest.seal(&mut c).expect("sealed");
        let Command::CompleteWithResponse(sealed) = &c else {
            panic!("{c:?}")
        };
        assert!(sealed.body.starts_with("enc:v1:k1:"), "{sealed:?}");
        assert_eq!(sealed.detail, None);
        assert_eq!(sealed.outcome, "ok");
        assert_eq!(sealed.reingress_to.as_deref(), Some("loop"));

        // Empty values stay empty; commands without covered values pass unchanged.
        let mut empty = Command::EnqueueIngress(EnqueueIngress {
            channel: "c".into(),
            raw: String::new(),
            fields: MessageFields::default(),
            idempotency_key: None,
        });
        let before = empty.clone();
        at_rest.seal(&mut empty).expect("sealed");
        assert_eq!(empty, before);
        for plain in [
            Command::MarkDone(MarkDone {
                row_id: RowId(1),
                fence: Fence(1),
            }),
            Command::ClaimNextFifo(ClaimNextFifo {
                stage: raftlane_statemachine::row::Stage::Outbound,
                lane: "l".into(),
                owner: "w".into(),
                ttl_ms: 1,
            }),
        ] {
            let mut sealed = plain.clone();
            at_rest.seal(&mut sealed).expect("sealed");
            assert_eq!(sealed, plain);
        }
    }

    #[test]
    fn without_a_keyring_nothing_changes() {
        let mut c = Command::EnqueueIngress(EnqueueIngress {
            channel: "c".into(),
            raw: "clear".into(),
            fields: MessageFields::default(),
            idempotency_key: None,
        });
        let before = c.clone();
        AtRest::default().seal(&mut c).expect("sealed");
        assert_eq!(c, before);
        let mut entry = Some(StateEntry {
            value: "enc:v1:k1:AAAA".into(),
            set_at: 0,
            message_id: raftlane_statemachine::MessageId(1),
        });
        let stored = entry.clone();
        AtRest::default().open(&mut entry);
        assert_eq!(entry, stored);
    }

    #[test]
    fn opening_decrypts_embedded_tokens_and_leaves_the_undecryptable() {
        let at_rest = ring();
        let keyring = at_rest.keyring().expect("on");
        let mut entries = vec![
            StateEntry {
                value: keyring.encrypt("{\"a\":1}").expect("e"),
                set_at: 0,
                message_id: raftlane_statemachine::MessageId(1),
            },
            StateEntry {
                value: "legacy".into(),
                set_at: 0,
                message_id: raftlane_statemachine::MessageId(2),
            },
        ];
        let foreign = Keyring::new(vec![("k9".to_string(), [9u8; 32])])
            .expect("keyring")
            .encrypt("other")
            .expect("e");
        entries.push(StateEntry {
            value: foreign.clone(),
            set_at: 0,
            message_id: raftlane_statemachine::MessageId(3),
        });
        at_rest.open(&mut entries);
        let values: Vec<&str> = entries.iter().map(|e| e.value.as_str()).collect();
        assert_eq!(values, ["{\"a\":1}", "legacy", foreign.as_str()]);
    }
}
