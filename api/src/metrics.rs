//! Counters exported at `/metrics` in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

#[derive(Default)]
pub struct Metrics {
    /// (command, accepted) → count.
    commands: Mutex<BTreeMap<(&'static str, bool), u64>>,
}

impl Metrics {
    pub fn record_command(&self, name: &'static str, accepted: bool) {
        if let Ok(mut m) = self.commands.lock() {
            *m.entry((name, accepted)).or_default() += 1;
        }
    }

    /// Render the counters plus the given gauges.
    pub fn render(&self, gauges: &BTreeMap<String, f64>) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP raftlane_commands_total Commands proposed through this node, by outcome.\n",
        );
        out.push_str("# TYPE raftlane_commands_total counter\n");
        if let Ok(m) = self.commands.lock() {
            for ((name, accepted), n) in m.iter() {
                let outcome = if *accepted { "accepted" } else { "rejected" };
                let _ = writeln!(
                    out,
                    "raftlane_commands_total{{command=\"{name}\",outcome=\"{outcome}\"}} {n}"
                );
            }
        }
        let mut typed = std::collections::BTreeSet::new();
        for (name, value) in gauges {
            let base = name.split('{').next().unwrap_or(name);
            if typed.insert(base.to_string()) {
                let _ = writeln!(out, "# TYPE {base} gauge");
            }
            let _ = writeln!(out, "{name} {value}");
        }
        out
    }
}
