//! Retrying a delivery: which policy a row gets, the one check every policy passes, the attempt
//! limit that stops a poison row, what a lease expiry does, and the backoff formula of
//! MarkFailed (docs/SPEC.md §5.2), exact in integers so every replica computes the same delay
//! to the bit.
//!
//! Why the limit lives here and not only in MarkFailed: a worker that crashes on a row never
//! calls `fail`, so without it the row would come back each time its lease ran out, attempts
//! climbing forever, and the FIFO lane behind it would never move. Every
//! claim is a delivery attempt; an expiry past the limit ends the row like a `fail` past it.

use crate::model::config::{ConfigDoc, RetryPolicy};
use crate::model::row::{Stage, WorkRow};
use crate::rules::finalizer::dead_letter;
use crate::storage::StoreError;
use crate::tables::{row_retry, rows, tallies, Db};
use crate::wire::rejection::Rejection;

/// Attempts a row gets when its policy names no `max_attempts` (docs/SPEC.md §5.2): enough
/// for a flaky peer to recover under the default backoff (about six minutes of retrying), few
/// enough that a poison row leaves its lane soon.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;

/// The policy of a row whose stage or destination names none: [`DEFAULT_MAX_ATTEMPTS`], 1 s
/// doubling up to a minute.
pub const DEFAULT_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: Some(DEFAULT_MAX_ATTEMPTS),
    backoff_ms: 1000,
    multiplier_milli: 2000,
    max_backoff_ms: 60_000,
};

/// Smallest multiplier (×1.0: a constant delay).
pub const MIN_MULTIPLIER_MILLI: u32 = 1000;
/// Largest multiplier (×100).
pub const MAX_MULTIPLIER_MILLI: u32 = 100_000;
/// Longest `backoff_ms` and `max_backoff_ms`: a day. A longer wait is a parked row, which
/// dead letters and replay already express.
pub const MAX_BACKOFF_MS: u64 = 24 * 60 * 60 * 1000;

/// The tally ([`crate::tables::tallies`]) of rows dead-lettered because their lease expired on
/// their last allowed attempt.
pub const LEASE_EXPIRED_TALLY: &str = "dead.lease_expired";

/// The one check of a retry policy, wherever it comes from: a `fail`'s own (`prefix` =
/// `retry`), a config's (`destinations.<name>.retry`). The rejection names the field under
/// `prefix`, so the config write and the `fail` refuse a policy for the same reasons in the
/// same words.
pub fn check_policy(prefix: &str, p: &RetryPolicy) -> Result<(), Rejection> {
    if p.max_attempts == Some(0) {
        return Err(Rejection::invalid(
            &format!("{prefix}.max_attempts"),
            "must be at least 1",
        ));
    }
    if !(MIN_MULTIPLIER_MILLI..=MAX_MULTIPLIER_MILLI).contains(&p.multiplier_milli) {
        return Err(Rejection::invalid(
            &format!("{prefix}.multiplier_milli"),
            format!(
                "must be between {MIN_MULTIPLIER_MILLI} and {MAX_MULTIPLIER_MILLI} \
                 (thousandths: ×1.0 to ×100)"
            ),
        ));
    }
    for (field, value) in [
        ("backoff_ms", p.backoff_ms),
        ("max_backoff_ms", p.max_backoff_ms),
    ] {
        if value > MAX_BACKOFF_MS {
            return Err(Rejection::invalid(
                &format!("{prefix}.{field}"),
                format!("must be at most {MAX_BACKOFF_MS} ms (a day)"),
            ));
        }
    }
    Ok(())
}

/// Every retry policy a config document names, checked by [`check_policy`] under its place in
/// the document (`destinations.<name>.retry`): PutConfig refuses the document otherwise, and
/// the API runs this first so the 400 comes before anything is proposed.
pub fn check_config(config: &ConfigDoc) -> Result<(), Rejection> {
    for (name, destination) in &config.destinations {
        if let Some(policy) = &destination.retry {
            check_policy(&format!("destinations.{name}.retry"), policy)?;
        }
    }
    Ok(())
}

/// The policy of a row under `config` (docs/SPEC.md §5.2): an `outbound` row's is its
/// destination's `retry`, and so is a `response` row's (the destination that answered: its
/// re-ingestion is that exchange's work); `ingress` and `routed` rows, and a destination that
/// names none, get [`DEFAULT_RETRY`].
pub fn policy_for(config: &ConfigDoc, stage: Stage, destination: Option<&str>) -> RetryPolicy {
    let own = match stage {
        Stage::Outbound | Stage::Response => destination
            .and_then(|d| config.destinations.get(d))
            .and_then(|d| d.retry.clone()),
        Stage::Ingress | Stage::Routed => None,
    };
    own.unwrap_or(DEFAULT_RETRY)
}

/// The stored `max_attempts` that means "no limit: retry with backoff forever", which is what
/// messagefoundry's default `RetryPolicy` asks for (a transient failure is never given up on).
///
/// Why a value and not a new variant: `RetryPolicy` is in every MarkFailed entry of the log and
/// in every config, and bincode writes `Option<u32>` as it is. Absent (`None`) already means the
/// default limit, so "no limit" needs a value of its own
/// that leaves every existing entry's meaning and layout alone; `u32::MAX` attempts is no
/// limit in practice too, so a node that predates this reading agrees with it. On the HTTP
/// wire it is spelled `-1`, as NATS's `max_deliver` and RabbitMQ's delivery limit spell it.
pub const UNLIMITED_ATTEMPTS: u32 = u32::MAX;

/// How many attempts a policy allows: the one reading of `max_attempts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptLimit {
    /// Retry forever ([`UNLIMITED_ATTEMPTS`]).
    Unlimited,
    /// At most this many attempts (at least 1).
    AtMost(u32),
}

impl AttemptLimit {
    /// Whether a row that has been attempted `attempts` times has used its last attempt.
    pub fn exhausted_by(self, attempts: u32) -> bool {
        match self {
            AttemptLimit::Unlimited => false,
            AttemptLimit::AtMost(limit) => attempts >= limit,
        }
    }
}

impl std::fmt::Display for AttemptLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttemptLimit::Unlimited => f.write_str("unlimited"),
            AttemptLimit::AtMost(n) => write!(f, "{n}"),
        }
    }
}

/// How many attempts `policy` allows: its `max_attempts` ([`UNLIMITED_ATTEMPTS`]: no limit),
/// else [`DEFAULT_MAX_ATTEMPTS`].
pub fn attempt_limit(policy: &RetryPolicy) -> AttemptLimit {
    match policy.max_attempts {
        None => AttemptLimit::AtMost(DEFAULT_MAX_ATTEMPTS),
        Some(UNLIMITED_ATTEMPTS) => AttemptLimit::Unlimited,
        Some(n) => AttemptLimit::AtMost(n),
    }
}

/// An inflight row whose lease ran out (ReclaimExpired, a FIFO claim finding a stranded row):
/// back to pending, due at `t`, attempts kept; or, when its claim used the last attempt its
/// policy under `config` allows, dead with `lease expired on attempt N of M`, event `dead`,
/// its message finalized, and the `dead.lease_expired` tally counted. Whether it died.
pub(crate) fn expire_lease(
    cx: &mut Db<'_, '_>,
    config: &ConfigDoc,
    row: &WorkRow,
) -> Result<bool, StoreError> {
    // The policy the row is being retried under: its last `fail`'s, else the config's.
    let policy = match row_retry::get(cx.txn, row.id)? {
        Some(policy) => policy,
        None => policy_for(config, row.stage, row.destination_name.as_deref()),
    };
    let limit = attempt_limit(&policy);
    if !limit.exhausted_by(row.attempts) {
        let t = cx.t;
        rows::to_pending(cx, row, t);
        return Ok(false);
    }
    let reason = format!("lease expired on attempt {} of {limit}", row.attempts);
    dead_letter(cx, row, &reason)?;
    tallies::add(cx, LEASE_EXPIRED_TALLY, 1)?;
    Ok(true)
}

/// `min(max_backoff, ⌊backoff × m^k / 1000^k⌋)` with `m = multiplier_milli` and
/// `k = attempts − 1`: MarkFailed's `backoff × multiplier^(attempts−1)` (docs/SPEC.md §5.2),
/// floored once.
///
/// Why exact: truncating to whole ms after every step compounds (1 ms at ×1.5 stayed 1 ms
/// forever instead of reaching ⌊3.375⌋ = 3 at attempt 4), and every replica must agree to the
/// bit, so only integers are used. The multiplier is reduced to `p/q` (`q` divides 1000); the
/// value `backoff·p^k / q^k` is kept as two [`Wide`] integers and floored at the end. A 128-bit
/// rational (even reduced by the gcd) would not do: `q^k` outgrows it at ordinary policies
/// still below their cap (×1.1 from attempt 39, ×1.001 from attempt 14), and an approximation
/// there would make the result depend on how the overflow was handled.
///
/// A multiplier at or below ×1.0 keeps `backoff` (MarkFailed rejects one below ×1.0 anyway).
///
/// Cost: one step per attempt, stopping as soon as the delay reaches `max_backoff`. Since
/// `p/q ≥ 1.001` and the delay stays below `max_backoff ≤ 2^64`, there are at most about 44,400
/// steps whatever `attempts` says. The two integers grow by `log2 p` and `log2 q` bits a step,
/// so ordinary policies stay within a handful of machine words (×1.1 from 1 s to a one-hour
/// cap: 86 steps, under 320 bits each).
pub fn backoff_delay(retry: &RetryPolicy, attempts: u32) -> u64 {
    let base = retry.backoff_ms;
    let max = retry.max_backoff_ms;
    if base >= max {
        // The factor is at least 1, so the delay starts at or above the cap and stays there.
        return max;
    }
    let steps = attempts.saturating_sub(1);
    let m = u64::from(retry.multiplier_milli);
    if m <= 1000 || base == 0 || steps == 0 {
        return base;
    }
    let g = gcd(m, 1000);
    let (p, q) = (m / g, 1000 / g);
    let mut num = Wide::from_u64(base);
    let mut den = Wide::from_u64(1);
    for _ in 0..steps {
        num.mul_small(p);
        den.mul_small(q);
        // ⌊num / den⌋ ≥ max  ⇔  num ≥ max · den, as max is a whole number.
        let mut bound = den.clone();
        bound.mul_small(max);
        if num >= bound {
            return max;
        }
    }
    // den = q^steps: dividing by q `steps` times floors once, as ⌊⌊x / a⌋ / b⌋ = ⌊x / (a·b)⌋.
    for _ in 0..steps {
        num.div_small(q);
    }
    // Below max here, so it fits; the fallback only keeps this free of an unwrap.
    num.to_u64().map_or(max, |delay| delay.min(max))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// An unsigned integer of any size for [`backoff_delay`]: little-endian 64-bit limbs with no
/// high zero limb (so comparing lengths first compares magnitudes). Only what the backoff needs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Wide(Vec<u64>);

impl Wide {
    fn from_u64(v: u64) -> Self {
        let mut w = Wide(vec![v]);
        w.trim();
        w
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    /// `self *= f`. Each limb product plus carry is at most `(2^64−1)^2 + 2^64−1 < 2^128`.
    fn mul_small(&mut self, f: u64) {
        let mut carry = 0u128;
        for limb in &mut self.0 {
            let x = u128::from(*limb) * u128::from(f) + carry;
            *limb = x as u64;
            carry = x >> 64;
        }
        if carry > 0 {
            self.0.push(carry as u64);
        }
        self.trim();
    }

    /// `self = ⌊self / d⌋`; `d > 0` (the callers divide by `q ≥ 1`).
    fn div_small(&mut self, d: u64) {
        let d = u128::from(d.max(1));
        let mut rem = 0u128;
        for limb in self.0.iter_mut().rev() {
            let x = (rem << 64) | u128::from(*limb);
            *limb = (x / d) as u64;
            rem = x % d;
        }
        self.trim();
    }

    fn to_u64(&self) -> Option<u64> {
        match self.0.as_slice() {
            [] => Some(0),
            [v] => Some(*v),
            _ => None,
        }
    }
}

impl PartialOrd for Wide {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Wide {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(backoff: u64, mult: u32, max: u64) -> RetryPolicy {
        RetryPolicy {
            max_attempts: None,
            backoff_ms: backoff,
            multiplier_milli: mult,
            max_backoff_ms: max,
        }
    }

    #[test]
    fn backoff_formula() {
        let p = policy(1000, 2000, 60_000);
        assert_eq!(backoff_delay(&p, 1), 1000);
        assert_eq!(backoff_delay(&p, 2), 2000);
        assert_eq!(backoff_delay(&p, 3), 4000);
        assert_eq!(backoff_delay(&p, 7), 60_000);
        assert_eq!(backoff_delay(&p, u32::MAX), 60_000);
        let p = policy(1000, 1500, 10_000);
        assert_eq!(backoff_delay(&p, 3), 2250);
        let p = policy(500, 1000, 10_000);
        assert_eq!(backoff_delay(&p, 50), 500);
        let p = policy(50_000, 2000, 10_000);
        assert_eq!(backoff_delay(&p, 1), 10_000);
    }

    /// The formula of docs/SPEC.md §5.2, floored once: the per-step truncation this replaced
    /// gave 1 here.
    #[test]
    fn backoff_fractional_multiplier_is_floored_once() {
        let p = policy(1, 1500, 60_000);
        assert_eq!(
            (1..=6).map(|a| backoff_delay(&p, a)).collect::<Vec<_>>(),
            // 1, 1.5, 2.25, 3.375, 5.0625, 7.59375
            vec![1, 1, 2, 3, 5, 7]
        );
        // 512 × 1.5^9 = 2^9 × 3^9 / 2^9 = 3^9.
        assert_eq!(backoff_delay(&policy(512, 1500, 1_000_000), 10), 19_683);
    }

    /// 1000 ms × 1.1^(attempts−1), each floored from the exact decimal expansion (per-step
    /// truncation drifts from attempt 9 on: 2142, 2356, …).
    #[test]
    fn backoff_times_1_1_matches_exact_values() {
        let expected: [u64; 20] = [
            1000, 1100, 1210, 1331, 1464, 1610, 1771, 1948, 2143, 2357, 2593, 2853, 3138, 3452,
            3797, 4177, 4594, 5054, 5559, 6115,
        ];
        let p = policy(1000, 1100, 1_000_000);
        for (attempts, want) in (1..=20).zip(expected) {
            assert_eq!(backoff_delay(&p, attempts), want, "attempt {attempts}");
            // Cross-check: 1000 · 11^k / 10^k fits in u128 for these k.
            let k = attempts - 1;
            let exact = 1000 * 11u128.pow(k) / 10u128.pow(k);
            assert_eq!(u128::from(want), exact, "attempt {attempts}");
        }
    }

    /// Against plain u128 arithmetic `⌊b · m^k / 1000^k⌋` wherever that fits, for multipliers
    /// with small and large denominators, with and without the cap biting.
    #[test]
    fn backoff_agrees_with_u128_arithmetic_where_it_fits() {
        let mut checked = 0;
        for m in [
            1001u32, 1050, 1100, 1250, 1500, 1999, 2000, 2500, 3000, 10_000,
        ] {
            for b in [1u64, 7, 250, 1000, 4096] {
                for max in [5_000u64, 3_600_000, u64::MAX] {
                    for attempts in 1..=13u32 {
                        let k = attempts - 1;
                        let Some(scaled) = u128::from(m)
                            .checked_pow(k)
                            .and_then(|f| f.checked_mul(u128::from(b)))
                        else {
                            continue;
                        };
                        let exact = scaled / 1000u128.pow(k);
                        let want = u64::try_from(exact.min(u128::from(max))).unwrap_or(max);
                        let got = backoff_delay(&policy(b, m, max), attempts);
                        assert_eq!(got, want, "b={b} m={m} max={max} attempts={attempts}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 1000, "only {checked} cases fit");
    }

    #[test]
    fn backoff_caps_at_max() {
        let p = policy(1000, 1500, 3000);
        assert_eq!(backoff_delay(&p, 3), 2250);
        // 3375 > 3000.
        assert_eq!(backoff_delay(&p, 4), 3000);
        assert_eq!(backoff_delay(&p, u32::MAX), 3000);
        // Reaching the cap exactly: 750 × 2^2 = 3000.
        assert_eq!(backoff_delay(&policy(750, 2000, 3000), 3), 3000);
        // A backoff above the cap is capped from the first attempt.
        assert_eq!(backoff_delay(&policy(5000, 1500, 3000), 1), 3000);
        assert_eq!(backoff_delay(&policy(5000, 1000, 3000), 1), 3000);
    }

    /// The slowest growth there is (×1.001) with no practical cap still ends: the loop stops
    /// once the delay reaches `max_backoff`, not after `attempts` steps.
    #[test]
    fn backoff_slowest_growth_terminates() {
        assert_eq!(
            backoff_delay(&policy(1, 1001, u64::MAX), u32::MAX),
            u64::MAX
        );
        assert_eq!(
            backoff_delay(&policy(1000, 1001, 3_600_000), u32::MAX),
            3_600_000
        );
    }

    #[test]
    fn backoff_multiplier_at_or_below_one_keeps_backoff() {
        for m in [0, 500, 999, 1000] {
            let p = policy(700, m, 10_000);
            for attempts in [0, 1, 2, 5, 1000, u32::MAX] {
                assert_eq!(
                    backoff_delay(&p, attempts),
                    700,
                    "m={m} attempts={attempts}"
                );
            }
        }
    }

    #[test]
    fn backoff_first_attempt_is_the_base_backoff() {
        for m in [1000, 1001, 1500, 2000, 50_000, u32::MAX] {
            assert_eq!(backoff_delay(&policy(1234, m, 10_000), 1), 1234, "m={m}");
            assert_eq!(backoff_delay(&policy(1234, m, 10_000), 0), 1234, "m={m}");
            assert_eq!(backoff_delay(&policy(0, m, 10_000), 9), 0, "m={m}");
        }
    }
}
