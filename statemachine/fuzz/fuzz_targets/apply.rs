//! Fuzz target: arbitrary bytes, decoded as the Raft log would decode them, applied to a fresh
//! state machine. `apply` must never panic, whatever a (corrupt or hostile) log entry holds:
//! a command that does not fit is a typed rejection, never a crash, and the in-memory store
//! never fails.
//!
//! Run: `cd statemachine/fuzz && cargo +nightly fuzz run apply`. A seed corpus of valid
//! encodings (every command kind, singly and as a batch) is written to `corpus/apply/` by
//! `cargo test -p raftlane-statemachine --no-default-features --test decode write_fuzz_seeds --
//! --ignored`, run from the repository root (this crate is its own workspace, so `-p` would not
//! find the package from here).

#![no_main]

use libfuzzer_sys::fuzz_target;
use raftlane_statemachine::{codec, Envelope, MemStore, StateMachine};

/// Cap on commands per input, so one input cannot run for minutes.
const MAX_COMMANDS: usize = 256;

fuzz_target!(|data: &[u8]| {
    // A batch of log entries...
    if let Ok(list) = codec::decode::<Vec<Envelope>>(data) {
        run(list.iter().take(MAX_COMMANDS));
    }
    // ...or a single one.
    if let Ok(one) = codec::decode::<Envelope>(data) {
        run(std::iter::once(&one));
    }
});

fn run<'a>(envelopes: impl Iterator<Item = &'a Envelope>) {
    let mut sm = StateMachine::open(MemStore::new()).expect("an empty store opens");
    for (i, envelope) in envelopes.enumerate() {
        let _response = sm
            .apply(i as u64 + 1, envelope)
            .expect("the in-memory store never fails");
    }
    // What was applied must read back: chains verify, the digest and stats compute.
    let reader = sm.read();
    for org in reader.audit_orgs().expect("audit orgs") {
        let verification = reader.audit_verify(&org, None).expect("audit verify");
        assert!(
            verification.ok,
            "audit chain of {org:?} broken by apply: {verification:?}"
        );
    }
    let _ = reader.stats();
    sm.digest().expect("digest");
}
