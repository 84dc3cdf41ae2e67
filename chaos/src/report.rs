//! The run's report: operations by outcome, faults by kind, and every checker's verdict.

use crate::checkers::Verdict;
use crate::history::OpCount;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One injected (or skipped) fault.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRecord {
    /// Offset from the start of the fault phase, ms.
    pub at_ms: u64,
    pub kind: String,
    pub description: String,
    pub hold_ms: u64,
    /// `None` when injected and removed; otherwise why it was skipped or failed.
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub seed: u64,
    pub backend: String,
    pub duration_s: f64,
    pub elapsed_s: f64,
    pub faults_enabled: Vec<String>,
    pub faults: Vec<FaultRecord>,
    pub counts: BTreeMap<String, OpCount>,
    pub verdicts: Vec<Verdict>,
    /// Informational lines (proxy counters, clock-skew probe, timings).
    pub notes: Vec<String>,
    pub data_dir: Option<String>,
}

impl Report {
    pub fn violations(&self) -> usize {
        self.verdicts.iter().map(|v| v.violations.len()).sum()
    }

    pub fn passed(&self) -> bool {
        self.violations() == 0
    }

    pub fn faults_by_kind(&self) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for kind in &self.faults_enabled {
            out.entry(kind.clone()).or_default();
        }
        for f in &self.faults {
            let e = out.entry(f.kind.clone()).or_default();
            if f.error.is_none() {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
        out
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "\n=== raftlane chaos report ===");
        let _ = writeln!(
            s,
            "seed {}  backend {}  fault phase {:.0} s  total {:.1} s",
            self.seed, self.backend, self.duration_s, self.elapsed_s
        );
        let _ = writeln!(
            s,
            "\noperations                  attempted  acknowledged  failed  indeterminate"
        );
        let mut total = OpCount::default();
        for (kind, c) in &self.counts {
            let _ = writeln!(
                s,
                "  {kind:<24} {:>9}  {:>12}  {:>6}  {:>13}",
                c.attempted, c.acknowledged, c.failed, c.indeterminate
            );
            total.attempted += c.attempted;
            total.acknowledged += c.acknowledged;
            total.failed += c.failed;
            total.indeterminate += c.indeterminate;
        }
        let _ = writeln!(
            s,
            "  {:<24} {:>9}  {:>12}  {:>6}  {:>13}",
            "total", total.attempted, total.acknowledged, total.failed, total.indeterminate
        );
        let _ = writeln!(s, "\nfaults by kind             injected  skipped");
        for (kind, (ok, skipped)) in self.faults_by_kind() {
            let _ = writeln!(s, "  {kind:<24} {ok:>9}  {skipped:>7}");
        }
        let _ = writeln!(s, "\nfault log");
        for f in &self.faults {
            let status = match &f.error {
                None => String::new(),
                Some(e) => format!("  [skipped: {e}]"),
            };
            let _ = writeln!(
                s,
                "  t+{:>6.1}s  {:>5.1}s  {}{status}",
                f.at_ms as f64 / 1000.0,
                f.hold_ms as f64 / 1000.0,
                f.description
            );
        }
        let _ = writeln!(s, "\ncheckers");
        for v in &self.verdicts {
            let verdict = if v.ok() {
                "PASS".to_string()
            } else {
                format!("FAIL ({} violations)", v.violations.len())
            };
            let _ = writeln!(s, "  {:<22} {verdict:<20} checked {}", v.name, v.checked);
            for n in &v.notes {
                let _ = writeln!(s, "      note: {n}");
            }
            for (i, x) in v.violations.iter().enumerate() {
                if i == 20 {
                    let _ = writeln!(s, "      ... and {} more", v.violations.len() - 20);
                    break;
                }
                let _ = writeln!(s, "      VIOLATION: {x}");
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(s, "\nnotes");
            for n in &self.notes {
                let _ = writeln!(s, "  {n}");
            }
        }
        if let Some(d) = &self.data_dir {
            let _ = writeln!(s, "\ndata and node logs kept in {d}");
        }
        let _ = writeln!(
            s,
            "\nresult: {}",
            if self.passed() {
                "PASS (no violations)".to_string()
            } else {
                format!("FAIL ({} violations)", self.violations())
            }
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_faults_and_verdicts() {
        let mut r = Report {
            seed: 9,
            backend: "local".into(),
            faults_enabled: vec!["kill".into(), "pause".into()],
            ..Default::default()
        };
        r.counts.insert(
            "enqueue".into(),
            OpCount {
                attempted: 10,
                acknowledged: 8,
                failed: 1,
                indeterminate: 1,
            },
        );
        r.faults.push(FaultRecord {
            at_ms: 3000,
            kind: "kill".into(),
            description: "kill -9 leader: node 2".into(),
            hold_ms: 2000,
            error: None,
        });
        let mut v = Verdict::new("fencing");
        v.checked = 5;
        r.verdicts.push(v.clone());
        assert!(r.passed());
        let text = r.render();
        assert!(text.contains("enqueue") && text.contains("PASS") && text.contains("node 2"));
        assert_eq!(r.faults_by_kind()["pause"], (0, 0));
        v.fail("boom");
        r.verdicts.push(v);
        assert_eq!(r.violations(), 1);
        assert!(r.render().contains("VIOLATION: boom"));
    }
}
