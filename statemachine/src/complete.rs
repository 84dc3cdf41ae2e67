//! Ending a claimed row: MarkDone, CompleteWithResponse, MarkFailed (retry with backoff) and
//! DeadLetterNow. Each runs the finalizer when the row ends.

use crate::command::{Outcome, Rejection, RetryPolicy};
use crate::fence;
use crate::finalize::finalize;
use crate::ids::{Fence, Millis, RowId};
use crate::keys::Key;
use crate::machine::{ApplyResult, Ctx};
use crate::message::EventKind;
use crate::messages;
use crate::row::{RowStatus, Stage};
use crate::rows::{self, NewRow};
use crate::store::{Direction, Table};
use crate::validate;
use serde::{Deserialize, Serialize};

/// A captured response of a destination.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedResponse {
    pub message_id: crate::ids::MessageId,
    pub destination: String,
    pub response_seq: u32,
    pub body: String,
    pub outcome: String,
    pub detail: Option<String>,
    pub captured_at: Millis,
}

/// What a `response`-stage row's payload points at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRef {
    pub message_id: crate::ids::MessageId,
    pub destination: String,
    pub seq: u32,
}

pub(crate) fn response_key(message: crate::ids::MessageId, destination: &str, seq: u32) -> Vec<u8> {
    Key::new().u64(message.0).str(destination).u32(seq).build()
}

const ALL_STAGES: &[Stage] = &Stage::ALL;

pub(crate) fn mark_done(cx: &mut Ctx<'_, '_>, row_id: RowId, fence: Fence) -> ApplyResult<Outcome> {
    let row = fence::held(cx, row_id, fence, ALL_STAGES)?;
    let done = rows::finish(cx, &row, RowStatus::Done, None);
    messages::event(
        cx,
        row.message_id,
        EventKind::Delivered,
        done.destination_name.as_deref(),
        Some(format!("attempt {}", done.attempts)),
    )?;
    finalize(cx, row.message_id)?;
    Ok(Outcome::Done)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn complete_with_response(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    body: &str,
    outcome: &str,
    detail: Option<&str>,
    reingress_to: Option<&str>,
) -> ApplyResult<Outcome> {
    validate::opt_name("reingress_to", reingress_to)?;
    let row = fence::held(cx, row_id, fence, &[Stage::Outbound])?;
    let destination = row.destination_name.clone().unwrap_or_default();
    let prefix = Key::new().u64(row.message_id.0).str(&destination).build();
    let last = match cx
        .txn
        .scan_prefix(Table::Responses, &prefix, Direction::Reverse)?
        .next()
    {
        Some(item) => {
            let (key, _) = item?;
            // The seq is the trailing u32.
            key.len()
                .checked_sub(4)
                .and_then(|at| crate::keys::read_u32(&key, at))
                .unwrap_or(0)
        }
        None => 0,
    };
    let seq = last.saturating_add(1);
    let response = CapturedResponse {
        message_id: row.message_id,
        destination: destination.clone(),
        response_seq: seq,
        body: body.to_string(),
        outcome: outcome.to_string(),
        detail: detail.map(str::to_string),
        captured_at: cx.t,
    };
    cx.txn.put(
        Table::Responses,
        response_key(row.message_id, &destination, seq),
        &response,
    );
    let done = rows::finish(cx, &row, RowStatus::Done, None);
    messages::event(
        cx,
        row.message_id,
        EventKind::Delivered,
        Some(&destination),
        Some(format!(
            "attempt {}; response {seq}: {outcome}",
            done.attempts
        )),
    )?;
    if let Some(channel) = reingress_to {
        let reference = ResponseRef {
            message_id: row.message_id,
            destination: destination.clone(),
            seq,
        };
        let payload = serde_json::to_string(&reference).unwrap_or_default();
        rows::insert(
            cx,
            NewRow {
                message_id: row.message_id,
                stage: Stage::Response,
                channel_id: channel,
                destination_name: Some(&destination),
                handler_name: None,
                payload: &payload,
            },
        )?;
    }
    finalize(cx, row.message_id)?;
    Ok(Outcome::Done)
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

pub(crate) fn mark_failed(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Fence,
    error: &str,
    retry: &RetryPolicy,
) -> ApplyResult<Outcome> {
    if retry.multiplier_milli < 1000 {
        return Err(Rejection::invalid("retry.multiplier", "must be at least 1.0").into());
    }
    if retry.max_attempts == Some(0) {
        return Err(Rejection::invalid("retry.max_attempts", "must be at least 1").into());
    }
    let row = fence::held(cx, row_id, fence, ALL_STAGES)?;
    let destination = row.destination_name.clone();
    if retry.max_attempts.is_some_and(|max| row.attempts >= max) {
        rows::finish(cx, &row, RowStatus::Dead, Some(error));
        messages::event(
            cx,
            row.message_id,
            EventKind::Dead,
            destination.as_deref(),
            Some(error.to_string()),
        )?;
        finalize(cx, row.message_id)?;
        return Ok(Outcome::Failed {
            dead: true,
            next_attempt_at: cx.t,
        });
    }
    let due = cx.t.saturating_add(backoff_delay(retry, row.attempts));
    let mut after = rows::to_pending(cx, &row, due);
    let before = after.clone();
    after.last_error = Some(error.to_string());
    rows::save(cx, &before, &after);
    messages::event(
        cx,
        row.message_id,
        EventKind::Failed,
        destination.as_deref(),
        Some(format!("attempt {}: {error}", row.attempts)),
    )?;
    Ok(Outcome::Failed {
        dead: false,
        next_attempt_at: due,
    })
}

pub(crate) fn dead_letter_now(
    cx: &mut Ctx<'_, '_>,
    row_id: RowId,
    fence: Option<Fence>,
    error: &str,
) -> ApplyResult<Outcome> {
    let row = match fence {
        Some(f) => fence::held(cx, row_id, f, ALL_STAGES)?,
        None => {
            // Operator action without a claim: only a row that is not already terminal.
            let row = rows::load(cx, row_id)?;
            if !row.status.is_live() {
                return Err(Rejection::WrongStatus {
                    row: row_id,
                    status: row.status.as_str().to_string(),
                    expected: "pending or inflight".to_string(),
                }
                .into());
            }
            row
        }
    };
    dead_letter(cx, &row, error)?;
    Ok(Outcome::Done)
}

/// Dead-letter a live row and finalize its message (poison rows, orphans, depth cap).
pub(crate) fn dead_letter(
    cx: &mut Ctx<'_, '_>,
    row: &crate::row::WorkRow,
    error: &str,
) -> ApplyResult<()> {
    rows::finish(cx, row, RowStatus::Dead, Some(error));
    messages::event(
        cx,
        row.message_id,
        EventKind::Dead,
        row.destination_name.as_deref(),
        Some(error.to_string()),
    )?;
    finalize(cx, row.message_id)
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

    #[test]
    fn keys_read_back() {
        let k = Key::new().u64(9).build();
        assert_eq!(crate::keys::read_u64(&k, 0), Some(9));
    }
}
