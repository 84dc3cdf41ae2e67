//! One scrape's figures read at scrape time (the node's Raft and storage counters, the state
//! machine's replicated totals, lanes and engines), typed: each family says whether it is a
//! counter, a gauge or a histogram, and carries its HELP text.
//!
//! Why a set filled at scrape time rather than counters registered up front: most figures
//! already live elsewhere (atomics in the log store, Raft's metrics, the replicated state), so
//! reading them when asked costs nothing between scrapes and cannot drift from the source.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelValue, LabelValueEncoder, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A label value escaped as the exposition formats require (`\\`, `"` and line feeds).
///
/// Why: lane, channel and engine names come from users; unescaped, a name holding a quote or a
/// line break would end the sample early and let its author write series of their own.
/// prometheus-client 0.23 writes label values as given.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LabelValue(pub String);

impl From<&str> for LabelValue {
    fn from(s: &str) -> Self {
        LabelValue(s.to_string())
    }
}

impl From<String> for LabelValue {
    fn from(s: String) -> Self {
        LabelValue(s)
    }
}

impl EncodeLabelValue for LabelValue {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// A sample's labels, in the order written.
pub type Labels = Vec<(&'static str, LabelValue)>;

/// A histogram as read: per-bucket counts (not cumulative) by upper bound in ascending order,
/// the last bound `f64::MAX` standing for `+Inf`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramValue {
    pub sum: f64,
    pub count: u64,
    pub buckets: Vec<(f64, u64)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Value {
    Count(u64),
    /// A counter of a fractional quantity.
    CountF64(f64),
    Number(f64),
    Histogram(HistogramValue),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

#[derive(Debug)]
struct Family {
    help: &'static str,
    kind: Kind,
    samples: Vec<(Labels, Value)>,
}

/// The figures of one scrape, by family name.
#[derive(Debug, Default)]
pub struct MetricSet {
    families: BTreeMap<&'static str, Family>,
}

impl MetricSet {
    /// A counter sample. `name` is the sample's name as exposed, ending in `_total`.
    pub fn counter(&mut self, name: &'static str, help: &'static str, labels: Labels, v: u64) {
        self.push(name, help, Kind::Counter, labels, Value::Count(v));
    }

    /// A counter of a fractional quantity (seconds spent), named like [`Self::counter`].
    pub fn counter_f64(&mut self, name: &'static str, help: &'static str, labels: Labels, v: f64) {
        self.push(name, help, Kind::Counter, labels, Value::CountF64(v));
    }

    pub fn gauge(&mut self, name: &'static str, help: &'static str, labels: Labels, v: f64) {
        self.push(name, help, Kind::Gauge, labels, Value::Number(v));
    }

    pub fn histogram(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: Labels,
        v: HistogramValue,
    ) {
        self.push(name, help, Kind::Histogram, labels, Value::Histogram(v));
    }

    fn push(
        &mut self,
        name: &'static str,
        help: &'static str,
        kind: Kind,
        labels: Labels,
        value: Value,
    ) {
        let family = self.families.entry(name).or_insert(Family {
            help,
            kind,
            samples: Vec::new(),
        });
        // One name, one type: a sample of another type under a taken name would make the
        // whole exposition invalid, so it is left out (a programming error, caught by tests).
        debug_assert_eq!(family.kind, kind, "metric {name} written with two types");
        if family.kind == kind {
            family.samples.push((labels, value));
        }
    }
}

impl Collector for MetricSet {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, family) in &self.families {
            let (base, kind) = match family.kind {
                // prometheus-client appends `_total` to a counter's samples itself.
                Kind::Counter => (
                    name.strip_suffix("_total").unwrap_or(name),
                    MetricType::Counter,
                ),
                Kind::Gauge => (*name, MetricType::Gauge),
                Kind::Histogram => (*name, MetricType::Histogram),
            };
            let mut metric = encoder.encode_descriptor(base, family.help, None, kind)?;
            for (labels, value) in &family.samples {
                if labels.is_empty() {
                    encode_value(&mut metric, value)?;
                } else {
                    encode_value(&mut metric.encode_family(labels)?, value)?;
                }
            }
        }
        Ok(())
    }
}

fn encode_value(metric: &mut MetricEncoder<'_>, value: &Value) -> Result<(), std::fmt::Error> {
    match value {
        Value::Count(n) => metric.encode_counter::<NoLabelSet, u64, u64>(n, None),
        Value::CountF64(x) => metric.encode_counter::<NoLabelSet, f64, f64>(x, None),
        // Whole numbers as integers (`raftlane_storage_slow 1`, not `1.0`): what scripts that
        // grep the text have always seen.
        Value::Number(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => {
            metric.encode_gauge(&(*x as i64))
        }
        Value::Number(x) => metric.encode_gauge(x),
        Value::Histogram(h) => {
            metric.encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::registry::Registry;

    fn text(set: MetricSet) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(set));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    #[test]
    fn label_values_from_users_are_escaped() {
        let mut set = MetricSet::default();
        set.gauge(
            "lane_depth",
            "Depth.",
            vec![("lane", LabelValue::from("a\"b\\c\nd"))],
            2.0,
        );
        let out = text(set);
        assert!(
            out.contains("lane_depth{lane=\"a\\\"b\\\\c\\nd\"} 2\n"),
            "{out}"
        );
    }

    #[test]
    fn counters_gauges_and_histograms_are_typed() {
        let mut set = MetricSet::default();
        set.counter("things_total", "Things.", Vec::new(), 3);
        set.counter_f64("spent_seconds_total", "Spent.", Vec::new(), 1.5);
        set.gauge("level", "Level.", Vec::new(), 0.25);
        set.histogram(
            "wait_seconds",
            "Waits.",
            Vec::new(),
            HistogramValue {
                sum: 0.3,
                count: 3,
                buckets: vec![(0.1, 2), (f64::MAX, 1)],
            },
        );
        let out = text(set);
        for line in [
            "# TYPE things counter",
            "things_total 3",
            "# TYPE spent_seconds counter",
            "spent_seconds_total 1.5",
            "# TYPE level gauge",
            "level 0.25",
            "# TYPE wait_seconds histogram",
            "wait_seconds_count 3",
            "wait_seconds_bucket{le=\"0.1\"} 2",
            "wait_seconds_bucket{le=\"+Inf\"} 3",
        ] {
            assert!(out.lines().any(|l| l == line), "no {line:?} in:\n{out}");
        }
    }
}
