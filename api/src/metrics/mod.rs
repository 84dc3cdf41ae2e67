//! `/metrics`: this node's figures in the Prometheus text formats, on prometheus-client.
//!
//! Two kinds of family: those this layer counts as requests pass (commands proposed, HTTP
//! requests and their latency, kept in [`Metrics`]), and those read when scraped from where
//! they already live ([`set::MetricSet`], filled by the backend and by [`state_figures`]).
//! The exposition is OpenMetrics when the scraper asks for it (Prometheus does) and the
//! classic text format otherwise ([`exposition`]).

pub mod cluster_figures;
pub mod exposition;
pub mod http;
pub mod set;
pub mod state_figures;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use set::{LabelValue, MetricSet};

/// Labels of `raftlane_commands_total`: the command's name and whether it was accepted.
type CommandLabels = [(&'static str, &'static str); 2];
/// Labels of the HTTP families: the route's template, the method and (counter only) the status.
type RouteLabels = Vec<(&'static str, LabelValue)>;
type LatencyFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// Upper bounds of `raftlane_http_request_duration_seconds`: half a millisecond (a read
/// answered from memory) to ten seconds (a claim that waited for work).
const LATENCY_BOUNDS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BOUNDS)
}

/// The families counted as requests and commands pass through this node.
#[derive(Debug)]
pub struct Metrics {
    commands: Family<CommandLabels, Counter>,
    requests: Family<RouteLabels, Counter>,
    latency: LatencyFamily,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            commands: Family::default(),
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        }
    }
}

impl Metrics {
    pub fn record_command(&self, name: &'static str, accepted: bool) {
        let outcome = if accepted { "accepted" } else { "rejected" };
        self.commands
            .get_or_create(&[("command", name), ("outcome", outcome)])
            .inc();
    }

    /// One answered request of `route` (its template, e.g. `/v1/rows/{id}`).
    pub fn record_request(&self, route: &str, method: &'static str, status: u16, seconds: f64) {
        let labels: RouteLabels = vec![("route", route.into()), ("method", method.into())];
        self.latency.get_or_create(&labels).observe(seconds);
        let mut with_code = labels;
        with_code.push(("code", LabelValue(status.to_string())));
        self.requests.get_or_create(&with_code).inc();
    }

    /// The exposition of these families and `scraped`, in `format`.
    pub fn render(&self, scraped: MetricSet, format: exposition::Format) -> String {
        let mut registry = Registry::default();
        registry.register(
            "raftlane_commands",
            "Commands proposed through this node, by command and outcome",
            self.commands.clone(),
        );
        registry.register(
            "raftlane_http_requests",
            "HTTP requests answered by this node, by route template, method and status",
            self.requests.clone(),
        );
        registry.register(
            "raftlane_http_request_duration_seconds",
            "Time from a request's arrival to its answer, by route template and method",
            self.latency.clone(),
        );
        registry.register_collector(Box::new(scraped));
        let mut text = String::new();
        // Writing to a String cannot fail; an error here would be an encoder bug, and an
        // empty answer is what the scraper then sees.
        if prometheus_client::encoding::text::encode(&mut text, &registry).is_err() {
            text.clear();
        }
        match format {
            exposition::Format::OpenMetrics => text,
            exposition::Format::Prometheus => exposition::to_prometheus_text(&text),
        }
    }
}
