//! The two text formats `/metrics` answers in, chosen by the scraper's `Accept` header.
//!
//! prometheus-client writes OpenMetrics 1.0: a counter's family is named without `_total`
//! (`# TYPE raftlane_commands counter`, samples `raftlane_commands_total`), `# UNIT` lines and
//! a closing `# EOF`. Prometheus asks for that format and reads it as written. Tools that read
//! only the classic format (`promtool check metrics`, `curl | grep` scripts, older scrapers)
//! would take `raftlane_commands_total` for an untyped family of its own, so they get the
//! classic format: the counter families renamed to their samples' name, no UNIT, no EOF.

/// Which text format to answer in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// `text/plain; version=0.0.4`, the classic Prometheus text format.
    Prometheus,
}

impl Format {
    /// The format an `Accept` header asks for (absent or anything else: the classic one).
    pub fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Prometheus,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// OpenMetrics text (as prometheus-client writes it) rewritten in the classic format.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len() + 16 * counters.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{prefix}{name}_total {tail}"))
        });
        match renamed {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_take_their_samples_name_and_eof_goes() {
        let om = "# HELP a_things Things.\n# TYPE a_things counter\na_things_total 3\n\
                  # HELP b Bees.\n# TYPE b gauge\n# UNIT b seconds\nb 1.5\n# EOF\n";
        assert_eq!(
            to_prometheus_text(om),
            "# HELP a_things_total Things.\n# TYPE a_things_total counter\na_things_total 3\n\
             # HELP b Bees.\n# TYPE b gauge\nb 1.5\n"
        );
    }

    #[test]
    fn accept_header_picks_the_format() {
        let prom = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
        assert_eq!(Format::from_accept(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("text/plain")), Format::Prometheus);
        assert_eq!(Format::from_accept(None), Format::Prometheus);
    }
}
