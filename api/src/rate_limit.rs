//! A request rate limit per token (`--rate-limit-per-token`, docs/SPEC.md §10.5).
//!
//! One token must not be able to take a node's whole capacity (every request costs a lookup,
//! most a Raft proposal): each token that authenticates gets a token bucket of `burst`
//! requests refilled at `per_second`, and a request that finds its bucket empty is answered
//! `429 rate_limited` with `Retry-After` before anything else is done. Only tokens this node
//! knows (the bootstrap admin's, or a principal in its state) get a bucket, so unknown tokens
//! cannot grow the table; they go on to the handler, which answers `401`. The limit is per node:
//! a client spreading its requests over `n` nodes gets up to `n` times the rate.
//!
//! Only `/v1` routes are limited: node-to-node calls (`/internal`, signed), `/healthz`,
//! `/readyz`, `/metrics` and `/openapi.json` are not.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The limit's settings; `per_second == 0` turns it off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    /// Requests per second a token may sustain.
    pub per_second: f64,
    /// Requests a token may send at once after being idle; `0` means `max(1, per_second)`.
    pub burst: u32,
}

impl Default for RateLimit {
    /// Off: a node serves benchmarks and single-tenant pipelines that push tens of thousands
    /// of requests a second through one token; an operator sets the limit where tokens are
    /// shared with less trusted callers.
    fn default() -> Self {
        Self {
            per_second: 0.0,
            burst: 0,
        }
    }
}

impl RateLimit {
    fn capacity(&self) -> f64 {
        if self.burst == 0 {
            self.per_second.max(1.0)
        } else {
            f64::from(self.burst)
        }
    }
}

/// Buckets above this many are pruned of the full ones (a full bucket is the same as none).
const PRUNE_ABOVE: usize = 1024;

/// One token's bucket: `level` requests available at `at`.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    level: f64,
    at: Instant,
}

/// The buckets of every token that sent a request to this node.
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    /// `None` when the limit is off.
    pub fn new(limit: RateLimit) -> Option<Self> {
        (limit.per_second > 0.0 && limit.per_second.is_finite()).then(|| Self {
            limit,
            buckets: Mutex::new(HashMap::new()),
        })
    }

    /// Take one request from `key`'s bucket at `now`, or say how long until one is available.
    pub fn take(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let capacity = self.limit.capacity();
        let rate = self.limit.per_second;
        // A poisoned lock only means another request panicked while holding it; the buckets
        // are still numbers.
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, b| level_at(b, now, rate, capacity) < capacity);
        }
        let bucket = buckets.entry(key.to_string()).or_insert(Bucket {
            level: capacity,
            at: now,
        });
        let level = level_at(bucket, now, rate, capacity);
        if level >= 1.0 {
            *bucket = Bucket {
                level: level - 1.0,
                at: now,
            };
            Ok(())
        } else {
            *bucket = Bucket { level, at: now };
            Err(Duration::from_secs_f64((1.0 - level) / rate))
        }
    }
}

/// The bucket's level at `now`, refilled since it was last touched.
fn level_at(b: &Bucket, now: Instant, rate: f64, capacity: f64) -> f64 {
    let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
    (b.level + elapsed * rate).min(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 2.0,
            burst: 3,
        })
        .expect("on");
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.take("a", t0), Ok(()));
        }
        // Empty: the next request is half a second away (2 per second).
        let wait = limiter.take("a", t0).expect_err("limited");
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-6, "{wait:?}");
        // Another token has its own bucket.
        assert_eq!(limiter.take("b", t0), Ok(()));
        // Half a second later one request is back, not two.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(limiter.take("a", t1), Ok(()));
        assert!(limiter.take("a", t1).is_err());
        // Idle long enough, the bucket is full again but no fuller than its burst.
        let t2 = t1 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(limiter.take("a", t2), Ok(()));
        }
        assert!(limiter.take("a", t2).is_err());
    }

    #[test]
    fn zero_is_off_and_the_default_burst_follows_the_rate() {
        assert!(RateLimiter::new(RateLimit::default()).is_none());
        assert!(RateLimiter::new(RateLimit {
            per_second: f64::NAN,
            burst: 1
        })
        .is_none());
        let limiter = RateLimiter::new(RateLimit {
            per_second: 0.5,
            burst: 0,
        })
        .expect("on");
        let t0 = Instant::now();
        assert_eq!(limiter.take("a", t0), Ok(()), "a burst of at least one");
        let wait = limiter.take("a", t0).expect_err("limited");
        assert!((wait.as_secs_f64() - 2.0).abs() < 1e-6, "{wait:?}");
    }

    #[test]
    fn full_buckets_are_pruned_when_the_table_grows() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 1000.0,
            burst: 1,
        })
        .expect("on");
        let t0 = Instant::now();
        for i in 0..=PRUNE_ABOVE {
            limiter.take(&format!("k{i}"), t0).expect("first request");
        }
        // A second later every bucket is full again: the next request prunes them all.
        limiter
            .take("late", t0 + Duration::from_secs(1))
            .expect("ok");
        let len = limiter
            .buckets
            .lock()
            .map(|b| b.len())
            .unwrap_or(usize::MAX);
        assert_eq!(len, 1);
    }
}
