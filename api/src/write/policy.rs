//! The defaults a row action gets when its request leaves them out, decided here rather than in
//! the route that parses the request, so every way of proposing a row action (one action, a
//! batch of them) fills them in the same way and they can be tested without HTTP.
//!
//! They belong to the proposer, not to the state machine: `apply` takes every value explicitly
//! (a command names its retry policy and depth cap), so changing a default changes what new
//! proposals carry and never how a replayed log applies.

use super::{Proposer, WriteError};
use raftlane_contract::RetryBody;
use raftlane_statemachine::model::config::{ConfigDoc, RetryPolicy};
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::rules::retry;
use raftlane_statemachine::wire::command::{HandoffDisposition, RouteDisposition};
use raftlane_statemachine::Rejection;

/// Retry policy of a `fail` when neither the request nor the config names one: the state
/// machine's own default (`rules::retry::DEFAULT_RETRY`: 10 attempts, 1 s doubling up to a
/// minute), which also bounds a row whose lease keeps expiring, so the two cannot disagree.
pub const DEFAULT_RETRY: RetryPolicy = retry::DEFAULT_RETRY;

/// How many re-ingress hops a `reingress` allows when its request names no `depth_cap`: enough
/// for a request/response exchange to loop back a few times, few enough that a misrouted loop
/// stops quickly (the state machine refuses the hop past the cap).
pub const DEFAULT_DEPTH_CAP: u32 = 5;

/// The depth cap a `reingress` proposes.
pub fn depth_cap(requested: Option<u32>) -> u32 {
    requested.unwrap_or(DEFAULT_DEPTH_CAP)
}

/// The disposition a `route` proposes: as requested, else `routed` when it names handlers and
/// `unrouted` when it names none.
pub fn route_disposition(requested: Option<RouteDisposition>, handlers: usize) -> RouteDisposition {
    requested.unwrap_or(if handlers == 0 {
        RouteDisposition::Unrouted
    } else {
        RouteDisposition::Routed
    })
}

/// The disposition a `handoff` proposes: as requested, else `routed` when it names deliveries
/// and `unrouted` when it names none.
pub fn handoff_disposition(
    requested: Option<HandoffDisposition>,
    deliveries: usize,
) -> HandoffDisposition {
    requested.unwrap_or(if deliveries == 0 {
        HandoffDisposition::Unrouted
    } else {
        HandoffDisposition::Routed
    })
}

/// A retry policy given with a `fail`, in the state machine's integer form and checked by the
/// state machine's own rule (`rules::retry::check_policy`, the one the config write uses), so
/// the error comes before anything is proposed and says what MarkFailed would.
pub fn requested_retry(r: &RetryBody) -> Result<RetryPolicy, Rejection> {
    let policy = RetryPolicy {
        max_attempts: r.max_attempts,
        backoff_ms: r.backoff_ms,
        // Rounded here, by the proposer: apply only ever sees integers. A float out of range
        // (NaN, negative, huge) saturates to 0 or u32::MAX, which the check refuses.
        multiplier_milli: (r.multiplier * 1000.0).round() as u32,
        max_backoff_ms: r.max_backoff_ms,
    };
    retry::check_policy("retry", &policy)?;
    Ok(policy)
}

/// The retry policy of a row of `stage` bound for `destination` under `config`: the state
/// machine's lookup (`rules::retry::policy_for`), the one that also bounds lease expiries.
pub fn destination_retry(
    config: &ConfigDoc,
    stage: Stage,
    destination: Option<&str>,
) -> RetryPolicy {
    retry::policy_for(config, stage, destination)
}

impl Proposer {
    /// The retry policy a `fail` of a row of `stage` bound for `destination` proposes: the one
    /// `requested` (checked: [`WriteError::Invalid`] when out of bounds), else the config's as
    /// of now (a linearizable read, not this node's possibly lagging view of the last config
    /// change; fails are rare enough to pay for the read index), else [`DEFAULT_RETRY`].
    pub async fn retry_policy(
        &self,
        stage: Stage,
        destination: Option<&str>,
        requested: Option<&RetryBody>,
    ) -> Result<RetryPolicy, WriteError> {
        if let Some(r) = requested {
            return requested_retry(r).map_err(WriteError::Invalid);
        }
        self.linearize().await?;
        let config = crate::backend::read(self.backend.as_ref(), |r| r.config())?;
        Ok(destination_retry(&config.doc, stage, destination))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftlane_statemachine::model::config::DestinationConfig;

    fn body(multiplier: f64, max_attempts: Option<u32>) -> RetryBody {
        RetryBody {
            max_attempts,
            backoff_ms: 250,
            multiplier,
            max_backoff_ms: 10_000,
        }
    }

    #[test]
    fn the_defaults_are_what_the_api_documents() {
        assert_eq!(DEFAULT_RETRY.max_attempts, Some(10));
        assert_eq!(DEFAULT_RETRY.backoff_ms, 1000);
        assert_eq!(DEFAULT_RETRY.multiplier_milli, 2000);
        assert_eq!(DEFAULT_RETRY.max_backoff_ms, 60_000);
        assert_eq!(depth_cap(None), 5);
        assert_eq!(depth_cap(Some(2)), 2);
        assert_eq!(
            depth_cap(Some(0)),
            0,
            "a requested cap is the state machine's to judge"
        );
    }

    /// docs/SPEC.md §5.2 "How long a poison row holds its FIFO lane" states these figures.
    #[test]
    fn a_poison_row_holds_its_lane_for_the_documented_time_by_default() {
        // A worker that fails it every time: nine backoffs before the tenth attempt kills it.
        let waited: u64 = (1..DEFAULT_RETRY.max_attempts.unwrap_or(0))
            .map(|attempts| retry::backoff_delay(&DEFAULT_RETRY, attempts))
            .sum();
        assert_eq!(waited, 243_000, "1+2+4+8+16+32+60+60+60 s");
        // A worker that crashes on it every time: ten leases run out.
        assert_eq!(DEFAULT_RETRY.max_attempts, Some(10));
    }

    #[test]
    fn a_disposition_follows_whether_anything_was_named() {
        assert_eq!(route_disposition(None, 0), RouteDisposition::Unrouted);
        assert_eq!(route_disposition(None, 2), RouteDisposition::Routed);
        assert_eq!(
            route_disposition(Some(RouteDisposition::Unrouted), 2),
            RouteDisposition::Unrouted
        );
        assert_eq!(handoff_disposition(None, 0), HandoffDisposition::Unrouted);
        assert_eq!(handoff_disposition(None, 1), HandoffDisposition::Routed);
        assert_eq!(
            handoff_disposition(Some(HandoffDisposition::Routed), 0),
            HandoffDisposition::Routed
        );
    }

    #[test]
    fn a_requested_retry_is_checked_and_made_integer() {
        let p = requested_retry(&body(1.5, Some(3))).expect("valid");
        assert_eq!(
            p,
            RetryPolicy {
                max_attempts: Some(3),
                backoff_ms: 250,
                multiplier_milli: 1500,
                max_backoff_ms: 10_000,
            }
        );
        assert_eq!(
            requested_retry(&body(1.0005, None))
                .expect("valid")
                .multiplier_milli,
            1001,
            "rounded to the nearest thousandth"
        );
        for bad in [0.5, 100.5, -2.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(
                    requested_retry(&body(bad, None)),
                    Err(Rejection::Invalid { ref field, .. }) if field == "retry.multiplier_milli"
                ),
                "{bad}"
            );
        }
        assert_eq!(
            requested_retry(&body(2.0, Some(0))),
            Err(Rejection::invalid(
                "retry.max_attempts",
                "must be at least 1"
            ))
        );
        let mut absurd = body(2.0, None);
        absurd.backoff_ms = 1_000_000_000_000_000;
        assert!(matches!(
            requested_retry(&absurd),
            Err(Rejection::Invalid { ref field, .. }) if field == "retry.backoff_ms"
        ));
    }

    #[test]
    fn a_destination_policy_wins_over_the_default() {
        let own = RetryPolicy {
            max_attempts: Some(7),
            backoff_ms: 5,
            multiplier_milli: 1000,
            max_backoff_ms: 5,
        };
        let mut config = ConfigDoc::default();
        config.destinations.insert(
            "with".into(),
            DestinationConfig {
                retry: Some(own.clone()),
                ..Default::default()
            },
        );
        config
            .destinations
            .insert("without".into(), DestinationConfig::default());
        let out = Stage::Outbound;
        assert_eq!(destination_retry(&config, out, Some("with")), own);
        assert_eq!(
            destination_retry(&config, Stage::Response, Some("with")),
            own
        );
        assert_eq!(
            destination_retry(&config, Stage::Routed, Some("with")),
            DEFAULT_RETRY
        );
        assert_eq!(
            destination_retry(&config, out, Some("without")),
            DEFAULT_RETRY
        );
        assert_eq!(
            destination_retry(&config, out, Some("unknown")),
            DEFAULT_RETRY
        );
        assert_eq!(destination_retry(&config, out, None), DEFAULT_RETRY);
    }
}
