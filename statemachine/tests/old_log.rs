//! Logs written by earlier builds still replay (docs/SPEC.md §2.8).
//!
//! `tests/fixtures/log-v1.txt` holds the Raft log entries of a generated workload (1,200
//! entries) and of every command the golden file pins, as the build before log format 2 wrote
//! them, with the answer that build gave each and its final state digest. It was recorded once
//! by that build (`determinism.rs`'s `record_old_log_fixture`, run on it) and is never rewritten.
//! This build must decode every entry, give the same answers and reach the same digest; write
//! each entry back in format 1 byte for byte (what a node of this build sends a node of the
//! older one during a rolling upgrade); and, with every entry carried in format 2 instead,
//! still reach the same answers and digest (format 2 carries everything format 1 did).

use raftlane_statemachine::wire::LogFormat;
use raftlane_statemachine::{codec, BatchItem, Envelope, MemStore, StateMachine};

enum Recorded {
    Entry {
        index: u64,
        bytes: Vec<u8>,
        response: Vec<u8>,
    },
    Noop {
        index: u64,
    },
}

struct Fixture {
    entries: Vec<Recorded>,
    digest: String,
}

fn bad<T>(path: &str, line: usize) -> T {
    panic!("{path}:{line}: unreadable line")
}

fn load() -> Fixture {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/log-v1.txt");
    let text = std::fs::read_to_string(path).expect("the old-log fixture");
    let mut entries = Vec::new();
    let mut digest = None;
    for (n, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split(' ').collect();
        let line_no = n + 1;
        match fields.as_slice() {
            [l, ..] if l.starts_with('#') => {}
            ["entry", index, bytes, response] => entries.push(Recorded::Entry {
                index: index.parse().unwrap_or_else(|_| bad(path, line_no)),
                bytes: hex::decode(bytes).unwrap_or_else(|_| bad(path, line_no)),
                response: hex::decode(response).unwrap_or_else(|_| bad(path, line_no)),
            }),
            ["noop", index] => entries.push(Recorded::Noop {
                index: index.parse().unwrap_or_else(|_| bad(path, line_no)),
            }),
            ["digest", d] => digest = Some(d.to_string()),
            _ => bad(path, line_no),
        }
    }
    Fixture {
        entries,
        digest: digest.expect("the fixture's digest line"),
    }
}

/// Replay the fixture, each entry's envelope passed through `carry` first; the digest reached.
fn replay(fixture: &Fixture, carry: impl Fn(Envelope) -> Envelope) -> String {
    let mut sm = StateMachine::open(MemStore::new()).expect("open");
    for recorded in &fixture.entries {
        match recorded {
            Recorded::Entry {
                index,
                bytes,
                response,
            } => {
                let envelope = codec::decode::<Envelope>(bytes)
                    .unwrap_or_else(|e| panic!("entry {index} does not decode: {e}"));
                assert_eq!(envelope.format, LogFormat::V1, "entry {index}");
                let answer = sm.apply(*index, &carry(envelope)).expect("store");
                assert_eq!(
                    hex::encode(codec::encode(&answer)),
                    hex::encode(response),
                    "entry {index} answered otherwise than when it was recorded: {answer:?}"
                );
            }
            Recorded::Noop { index } => {
                sm.apply_batch(&[BatchItem::Noop { index: *index }], &[])
                    .expect("store");
            }
        }
    }
    hex::encode(sm.digest().expect("digest"))
}

#[test]
fn an_old_log_replays_to_the_answers_and_digest_it_was_recorded_with() {
    let fixture = load();
    assert!(fixture.entries.len() > 1200, "the whole fixture was read");
    assert_eq!(replay(&fixture, |e| e), fixture.digest);
}

#[test]
fn old_entries_are_written_back_in_their_own_format_byte_for_byte() {
    for recorded in load().entries {
        if let Recorded::Entry { index, bytes, .. } = recorded {
            let envelope: Envelope = codec::decode(&bytes).expect("decodes");
            assert_eq!(
                codec::encode(&envelope),
                bytes,
                "entry {index} changed when written back"
            );
        }
    }
}

#[test]
fn the_old_log_carried_in_format_2_replays_the_same() {
    let fixture = load();
    let digest = replay(&fixture, |mut envelope| {
        envelope.set_format(LogFormat::V2);
        let bytes = codec::encode(&envelope);
        let back: Envelope = codec::decode(&bytes).expect("a format 2 envelope decodes");
        assert_eq!(back.format, LogFormat::V2);
        assert_eq!(back, envelope);
        back
    });
    assert_eq!(digest, fixture.digest);
}
