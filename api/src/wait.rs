//! Claims that wait for work (docs/SPEC.md §4.7a): between two attempts of one claim request,
//! sleep until a row may have become claimable instead of answering empty and letting the
//! worker poll.
//!
//! A waiting claim holds no lock and proposes nothing while it sleeps. It wakes when this node
//! applies an entry ([`Backend::applied_beyond`]: the apply path's own notice, on the leader and
//! on followers alike) or when the time a probe of the state named passes (a row's backoff, the
//! lease holding a lane), then reads the state for its own stage or lane
//! ([`raftlane_statemachine::row::ClaimChance`]); only when that read says a claim may hand
//! something out does it claim again, through the same path as any claim. Nobody waiting costs
//! nothing: the notice is a watch every apply updates anyway.
//!
//! The number of claims waiting on one node is bounded ([`Waiters`]): beyond it a claim
//! answers at once, as one without `wait_ms` does. A waiting claim is a future of its request:
//! a client that disconnects drops it, and with it its seat.

use crate::backend::{self, Backend};
use crate::error::ApiError;
use raftlane_statemachine::query::Reader;
use raftlane_statemachine::row::ClaimChance;
use raftlane_statemachine::{Millis, StoreError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The longest a claim may wait (`wait_ms`): a client's HTTP timeout must be above it, and
/// proxies commonly cut idle requests at a minute.
pub const MAX_WAIT_MS: u64 = 30_000;

/// Claims that may wait at once on one node; one more answers at once.
pub const MAX_WAITERS: usize = 1024;

/// A claim request's `wait_ms`, checked: `None` (or 0) answers at once, as before.
pub fn wait_of(wait_ms: Option<u64>) -> Result<Option<Duration>, ApiError> {
    match wait_ms {
        None | Some(0) => Ok(None),
        Some(ms) if ms <= MAX_WAIT_MS => Ok(Some(Duration::from_millis(ms))),
        Some(_) => Err(ApiError::invalid(
            "wait_ms",
            format!("must be between 0 and {MAX_WAIT_MS}"),
        )),
    }
}

/// How many claims wait on this node, bounded by [`MAX_WAITERS`].
#[derive(Debug)]
pub struct Waiters {
    waiting: AtomicUsize,
    max: usize,
}

impl Default for Waiters {
    fn default() -> Self {
        Self::new(MAX_WAITERS)
    }
}

impl Waiters {
    pub fn new(max: usize) -> Self {
        Self {
            waiting: AtomicUsize::new(0),
            max,
        }
    }

    /// A place for one waiting claim, or `None` when all are taken. Dropping it frees it.
    pub fn seat(&self) -> Option<Seat<'_>> {
        self.waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Seat(self))
    }

    /// Claims waiting now (`raftlane_claim_waiters` in `/metrics`).
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

/// One waiting claim's place among [`Waiters`].
#[derive(Debug)]
pub struct Seat<'a>(&'a Waiters);

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Sleep until a claim may hand something out, as `probe` reads the local state at the
/// cluster's time; `true` then (claim again), `false` once `deadline` passes first.
///
/// `attempt` is the log index of the claim that answered empty (or this node's applied index
/// when it answered from a read): until this node has applied it, its state is older than that
/// answer and is not probed. A probe that cannot tell ([`ClaimChance::Unknown`]) claims again
/// only after something newer than the attempt was applied, so a claim never repeats itself
/// against an unchanged state.
pub async fn until_chance(
    backend: &dyn Backend,
    attempt: u64,
    deadline: Instant,
    probe: impl Fn(&Reader<'_>, Millis) -> Result<ClaimChance, StoreError>,
) -> Result<bool, StoreError> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        // The index first: an entry applied between it and the read wakes the wait at once.
        let applied = backend.applied_index();
        let sleep = if applied < attempt {
            None
        } else {
            let t = backend.cluster_now_ms();
            match backend::read(backend, |r| probe(r, t))? {
                ClaimChance::Now => return Ok(true),
                ClaimChance::Unknown if applied > attempt => return Ok(true),
                ClaimChance::At(at) => Some(Duration::from_millis(at.saturating_sub(t).max(1))),
                ClaimChance::Unknown | ClaimChance::OnChange => None,
            }
        };
        let until = sleep.map_or(deadline, |d| (now + d).min(deadline));
        backend
            .applied_beyond(applied, until.saturating_duration_since(now))
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_ms_is_bounded_and_named() {
        assert_eq!(wait_of(None).ok(), Some(None));
        assert_eq!(wait_of(Some(0)).ok(), Some(None));
        assert_eq!(
            wait_of(Some(MAX_WAIT_MS)).ok(),
            Some(Some(Duration::from_millis(MAX_WAIT_MS)))
        );
        let e = wait_of(Some(MAX_WAIT_MS + 1)).expect_err("too long");
        assert_eq!(
            (e.status.as_u16(), e.field.as_deref()),
            (400, Some("wait_ms"))
        );
    }

    #[test]
    fn seats_are_bounded_and_freed_on_drop() {
        let waiters = Waiters::new(2);
        let a = waiters.seat();
        let b = waiters.seat();
        assert!(a.is_some() && b.is_some());
        assert!(waiters.seat().is_none());
        assert_eq!(waiters.waiting(), 2);
        drop(a);
        assert_eq!(waiters.waiting(), 1);
        assert!(waiters.seat().is_some());
        assert_eq!(waiters.waiting(), 1);
    }
}
