//! Creating (or rotating) a principal's token: the token is shown once, only its hash enters
//! the log.
//!
//! # Random tokens, and retries
//! The token is random: the proposer draws a nonce (128 random bits) and the token is an HMAC
//! of it under a key derived from the cluster secret ([`issued_token`]); the command carries
//! the nonce and the token's hash, never the token. A client that does not see the answer
//! retries with the same `Request-Id`; if the first attempt committed, the state machine
//! answers the retry with the first answer, `TokenIssued` with the *first* nonce, and the
//! proposer re-derives the very token that was stored (on any node: they share the key). A new
//! request (a new `Request-Id`, or the same one once the state machine forgot it after
//! `REQUEST_TTL_MS`, or after a revocation) draws a new nonce and so a new token: a token is
//! never a function of a request id. A `Request-Id` reused inside the window for another
//! request is refused by the state machine (`409 request_id_reused`). Whoever holds the
//! cluster secret and reads the log can compute tokens, but that secret already lets its
//! holder sign any write, a new principal included.
//!
//! Before the token is shown, a linearizable read checks that its hash is what the principal
//! now has. It is not when a concurrent rotation replaced it, or on a node without a cluster
//! secret (the token is then random without a nonce to re-derive it from, so a retry cannot
//! find the first one): then [`WriteError::TokenNotIssued`], and the client mints again with a
//! new `Request-Id`. A token that does not work is never shown.

use super::{Proposer, WriteError};
use crate::tokens::sha256_hex;
use raftlane_statemachine::model::principal::Role;
use raftlane_statemachine::wire::command::{IssueToken, PutPrincipal, SetPrincipalOrgs};
use raftlane_statemachine::{Command, Envelope, Outcome};
use rand::RngCore;

/// The principal a token is created for, its name in normal form and checked.
#[derive(Clone, Debug)]
pub struct NewToken {
    pub name: String,
    pub role: Role,
    /// `None` = every channel.
    pub channels: Option<Vec<String>>,
    /// The audit orgs in scope (`None`: no org scope set).
    pub orgs: Option<Vec<String>>,
}

/// A token the principal now holds.
#[derive(Clone, Debug)]
pub struct IssuedToken {
    /// The log index of the `IssueToken` entry.
    pub index: u64,
    pub token: String,
}

impl Proposer {
    /// Create `new`'s token, each command proposed as `envelope` wraps it. `token_key` derives
    /// the token from a nonce the log keeps; without one (no cluster secret) the token is random
    /// outright and the nonce stays empty.
    pub async fn issue_token<E>(
        &self,
        new: NewToken,
        token_key: Option<&[u8; 32]>,
        envelope: &E,
    ) -> Result<IssuedToken, WriteError>
    where
        E: Fn(Command) -> Envelope + Sync,
    {
        // The org scope first: the principal never holds its new token under an earlier scope.
        let orgs = Command::SetPrincipalOrgs(SetPrincipalOrgs {
            name: new.name.clone(),
            orgs: new.orgs,
        });
        match self.write(envelope(orgs)).await?.1 {
            Ok(Outcome::Done) => {}
            other => return Err(unexpected(other)),
        }
        let (nonce, drawn) = match token_key {
            Some(key) => {
                let nonce = hex::encode(rand::random::<[u8; 16]>());
                let token = issued_token(key, &nonce);
                (nonce, token)
            }
            None => (String::new(), random_token()),
        };
        let command = Command::IssueToken(IssueToken {
            principal: PutPrincipal {
                name: new.name.clone(),
                token_hash: sha256_hex(&drawn),
                role: new.role,
                channels: new.channels,
            },
            nonce,
        });
        let (index, response) = self.write(envelope(command)).await?;
        // A repeat answers the first attempt's nonce: its token is the one stored.
        let token = match (response, token_key) {
            (Ok(Outcome::TokenIssued { nonce }), Some(key)) => issued_token(key, &nonce),
            (Ok(Outcome::TokenIssued { .. }), None) => drawn,
            (other, _) => return Err(unexpected(other)),
        };
        self.require_holder(&new.name, &token).await?;
        Ok(IssuedToken { index, token })
    }

    /// [`WriteError::TokenNotIssued`] unless principal `name` holds `token` as of now.
    async fn require_holder(&self, name: &str, token: &str) -> Result<(), WriteError> {
        let token_hash = sha256_hex(token);
        self.linearize().await?;
        let holder = crate::backend::read(self.backend.as_ref(), |r| {
            r.principal_by_token_hash(&token_hash)
        })?;
        if holder.as_ref().map(|p| p.name.as_str()) == Some(name) {
            Ok(())
        } else {
            Err(WriteError::TokenNotIssued {
                name: name.to_string(),
            })
        }
    }
}

/// A refusal as itself, any other outcome as one of an unexpected shape.
fn unexpected(response: raftlane_statemachine::Response) -> WriteError {
    match response {
        Err(rejection) => WriteError::Rejected(rejection),
        Ok(other) => WriteError::UnexpectedOutcome(Box::new(other)),
    }
}

/// The token issued with `nonce`: `rl_` and 24 bytes of an HMAC of it under the token key.
fn issued_token(key: &[u8; 32], nonce: &str) -> String {
    let mac = raftlane_raft::auth::hmac_sha256(key, &[b"raftlane-token-v2\n", nonce.as_bytes()]);
    format!("rl_{}", hex::encode(&mac[..24]))
}

fn random_token() -> String {
    let mut raw = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut raw);
    format!("rl_{}", hex::encode(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_a_function_of_its_nonce_and_key_only() {
        let key = crate::tokens::token_key("cs").expect("a key");
        let t = issued_token(&key, "00112233445566778899aabbccddeeff");
        assert!(t.starts_with("rl_") && t.len() == 3 + 48, "{t}");
        // A retry re-derives the stored token from the nonce the state machine answers...
        assert_eq!(t, issued_token(&key, "00112233445566778899aabbccddeeff"));
        // ...and another nonce, or another secret, gives another token.
        assert_ne!(t, issued_token(&key, "00112233445566778899aabbccddeef0"));
        assert_ne!(
            t,
            issued_token(
                &crate::tokens::token_key("other").expect("a key"),
                "00112233445566778899aabbccddeeff"
            )
        );
        assert_eq!(crate::tokens::token_key(""), None);
        assert_ne!(random_token(), random_token());
    }
}
