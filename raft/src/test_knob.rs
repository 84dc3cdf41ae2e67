//! Test knobs: a number a test changes while a node runs, read from a file that an env var
//! names. The chaos suite and the process-level tests step a node's wall clock
//! ([`crate::clock::TEST_CLOCK_STEP_ENV`]) and slow its raft log's fsyncs
//! ([`crate::storage_latency::TEST_FSYNC_DELAY_ENV`]) this way; no production setup sets either
//! variable, and a node that finds one set says so at WARN.
//!
//! Why a file: a test must change the value of a running process without a route that a
//! client could reach. The file is re-read at most every `reread`, written by the test through
//! a rename so no half-written number is ever read; absent or unreadable counts as 0.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One knob: its env var, how stale its value may be, and its last reading.
pub struct TestKnob {
    env: &'static str,
    what: &'static str,
    reread: Duration,
    file: OnceLock<Option<KnobFile>>,
}

struct KnobFile {
    path: PathBuf,
    cached: Mutex<Option<(Instant, i64)>>,
}

impl TestKnob {
    /// A knob read from the file `env` names; `what` says in the WARN line what it changes.
    pub const fn new(env: &'static str, what: &'static str, reread: Duration) -> Self {
        Self {
            env,
            what,
            reread,
            file: OnceLock::new(),
        }
    }

    /// The knob's value now: 0 when its env var is unset or its file is absent or unreadable.
    pub fn value(&self) -> i64 {
        self.file
            .get_or_init(|| {
                std::env::var_os(self.env).map(|path| {
                    tracing::warn!(
                        path = %PathBuf::from(&path).display(),
                        "{} is set: {} (tests only)",
                        self.env,
                        self.what
                    );
                    KnobFile {
                        path: path.into(),
                        cached: Mutex::new(None),
                    }
                })
            })
            .as_ref()
            .map_or(0, |f| f.value(self.reread))
    }
}

impl KnobFile {
    fn value(&self, reread: Duration) -> i64 {
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        match *cached {
            Some((at, v)) if at.elapsed() < reread => v,
            _ => {
                let v = std::fs::read_to_string(&self.path)
                    .ok()
                    .and_then(|s| s.trim().parse::<i64>().ok())
                    .unwrap_or(0);
                *cached = Some((Instant::now(), v));
                v
            }
        }
    }
}
