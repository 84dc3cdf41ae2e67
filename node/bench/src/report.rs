//! What a benchmark run measured: a latency histogram (hdrhistogram, microseconds), operation
//! and error counters, one progress line per second, and the final report printed as text and
//! written as JSON.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Largest latency the histograms track (longer ones are clamped to it): 5 minutes.
const MAX_LATENCY_US: u64 = 300_000_000;

fn new_histogram() -> Histogram<u64> {
    // 1 µs .. 5 min at 3 significant digits: constant, valid bounds.
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("constant histogram bounds are valid")
}

/// Latency percentiles in milliseconds.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Latency {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    /// Summarize a histogram of microseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Self {
            count: h.len(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }

    pub fn line(&self) -> String {
        format!(
            "p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  max {:.2} ms  (mean {:.2} ms, n={})",
            self.p50_ms, self.p90_ms, self.p99_ms, self.p999_ms, self.max_ms, self.mean_ms, self.count
        )
    }
}

/// One progress line's numbers (one per second of the run).
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the start of the run (warm-up included).
    pub t_s: f64,
    /// Primary operations completed in this second.
    pub ops: u64,
    pub errors: u64,
    /// p99 of this second's operations (ms).
    pub p99_ms: f64,
    /// Messages queued (not yet consumed) when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued: Option<u64>,
    /// Resident set size in bytes when known (see `rss_note` in the report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Messages in flight through the pipeline (enqueued, not yet done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u64>,
}

/// The live counters of one run, shared by every client task.
pub struct Meter {
    start: Instant,
    measure_from: Instant,
    measure_until: Instant,
    stopped: AtomicBool,
    stopped_at: Mutex<Option<Instant>>,
    /// Primary operations inside the measurement window.
    ops: AtomicU64,
    /// Primary operations since the last progress line (warm-up included).
    interval_ops: AtomicU64,
    errors: AtomicU64,
    interval_errors: AtomicU64,
    error_kinds: Mutex<BTreeMap<String, u64>>,
    hist: Mutex<Histogram<u64>>,
    interval_hist: Mutex<Histogram<u64>>,
    /// Secondary named counters (stage operations), whole run.
    counters: Mutex<BTreeMap<&'static str, u64>>,
}

impl Meter {
    pub fn new(warmup: Duration, duration: Duration) -> Self {
        let start = Instant::now();
        Self {
            start,
            measure_from: start + warmup,
            measure_until: start + warmup + duration,
            stopped: AtomicBool::new(false),
            stopped_at: Mutex::new(None),
            ops: AtomicU64::new(0),
            interval_ops: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            interval_errors: AtomicU64::new(0),
            error_kinds: Mutex::new(BTreeMap::new()),
            hist: Mutex::new(new_histogram()),
            interval_hist: Mutex::new(new_histogram()),
            counters: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    /// Microseconds since the start of the run (timestamps carried in pipeline payloads).
    pub fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Whether clients should stop (the measurement window is over, or `stop` was called).
    pub fn done(&self) -> bool {
        self.stopped.load(Ordering::Relaxed) || Instant::now() >= self.measure_until
    }

    /// Stop the clients now; the measured time ends here if the window is not over yet.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        if let Ok(mut at) = self.stopped_at.lock() {
            at.get_or_insert_with(Instant::now);
        }
    }

    /// Seconds of the measurement window that actually ran: shorter than the window when the
    /// run was stopped early (e.g. every lane ran dry).
    pub fn measured_secs(&self) -> f64 {
        let full = self
            .measure_until
            .saturating_duration_since(self.measure_from);
        let end = self
            .stopped_at
            .lock()
            .ok()
            .and_then(|a| *a)
            .map_or(self.measure_until, |at| at.min(self.measure_until));
        end.saturating_duration_since(self.measure_from)
            .min(full)
            .as_secs_f64()
    }

    pub fn in_window(&self, at: Instant) -> bool {
        at >= self.measure_from && at < self.measure_until
    }

    /// One primary operation that completed now after `latency`.
    pub fn record(&self, latency: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, MAX_LATENCY_US);
        self.interval_ops.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut h) = self.interval_hist.lock() {
            h.saturating_record(us);
        }
        if self.in_window(Instant::now()) {
            self.ops.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut h) = self.hist.lock() {
                h.saturating_record(us);
            }
        }
    }

    /// A failed operation, by kind (an HTTP status and code, a database error class...).
    pub fn error(&self, kind: impl Into<String>) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.interval_errors.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut k) = self.error_kinds.lock() {
            let kind: String = kind.into().chars().take(120).collect();
            *k.entry(kind).or_default() += 1;
        }
    }

    /// Count a secondary operation (e.g. `enqueue`, `route`, `claim_empty`).
    pub fn count(&self, name: &'static str) {
        self.add(name, 1);
    }

    pub fn add(&self, name: &'static str, n: u64) {
        if let Ok(mut c) = self.counters.lock() {
            *c.entry(name).or_default() += n;
        }
    }

    pub fn counter(&self, name: &'static str) -> u64 {
        self.counters
            .lock()
            .map(|c| c.get(name).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// Take this second's numbers for a progress line.
    pub fn take_interval(&self) -> (u64, u64, f64) {
        let ops = self.interval_ops.swap(0, Ordering::Relaxed);
        let errors = self.interval_errors.swap(0, Ordering::Relaxed);
        let p99 = match self.interval_hist.lock() {
            Ok(mut h) => {
                let v = if h.is_empty() {
                    0.0
                } else {
                    h.value_at_quantile(0.99) as f64 / 1000.0
                };
                h.reset();
                v
            }
            Err(_) => 0.0,
        };
        (ops, errors, p99)
    }

    pub fn measured_ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    pub fn latency(&self) -> Latency {
        self.hist
            .lock()
            .map(|h| Latency::from_histogram(&h))
            .unwrap_or_default()
    }

    pub fn error_kinds(&self) -> BTreeMap<String, u64> {
        self.error_kinds
            .lock()
            .map(|k| k.clone())
            .unwrap_or_default()
    }

    pub fn counters(&self) -> BTreeMap<String, u64> {
        self.counters
            .lock()
            .map(|c| c.iter().map(|(k, v)| (k.to_string(), *v)).collect())
            .unwrap_or_default()
    }
}

/// The machine the run happened on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub mem_total_kib: u64,
    pub kernel: String,
    /// Filesystem device of the data directory and whether the kernel calls it rotational.
    pub disk: String,
}

impl Machine {
    pub fn detect(data_path: &std::path::Path) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_total_kib = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string();
        Self {
            nproc: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model,
            mem_total_kib,
            kernel,
            disk: disk_of(data_path),
        }
    }

    pub fn line(&self) -> String {
        format!(
            "{} × {}, {:.1} GiB RAM, kernel {}, disk {}",
            self.nproc,
            self.cpu_model,
            self.mem_total_kib as f64 / 1024.0 / 1024.0,
            self.kernel,
            self.disk
        )
    }
}

/// The device holding `path` (longest matching mount point in /proc/mounts) and, for a block
/// device, whether it is rotational.
fn disk_of(path: &std::path::Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let mut best: Option<(usize, String, String)> = None;
    for line in mounts.lines() {
        let mut parts = line.split_whitespace();
        let (Some(dev), Some(mnt), Some(fs)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let longer = match &best {
            Some((len, _, _)) => mnt.len() > *len,
            None => true,
        };
        if path.starts_with(mnt) && longer {
            best = Some((mnt.len(), dev.to_string(), fs.to_string()));
        }
    }
    let Some((_, dev, fs)) = best else {
        return "unknown".into();
    };
    let name = dev.trim_start_matches("/dev/");
    let rotational = std::fs::read_to_string(format!("/sys/block/{name}/queue/rotational"))
        .ok()
        .map(|s| {
            if s.trim() == "1" {
                ", rotational=1 (virtio reports 1)"
            } else {
                ", rotational=0"
            }
        })
        .unwrap_or("");
    format!("{dev} ({fs}{rotational})")
}

pub use raftlane_node::process::rss_bytes;

/// The result of one run of one workload on one backend.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub backend: String,
    pub workload: String,
    /// What one counted operation is (e.g. "acknowledged enqueue", "message enqueued → done").
    pub op: String,
    pub clients: usize,
    pub lanes: usize,
    pub workers: usize,
    pub body_bytes: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    /// Messages queued before the measurement (prefill).
    pub prefilled: u64,
    pub ops: u64,
    pub throughput_ops_s: f64,
    pub latency: Latency,
    pub errors: u64,
    pub error_kinds: BTreeMap<String, u64>,
    /// Secondary operation counts over the whole run (warm-up included).
    pub counters: BTreeMap<String, u64>,
    /// Backend facts: Raft log appends/fsyncs per node, RSS, settings...
    pub details: BTreeMap<String, serde_json::Value>,
    pub notes: Vec<String>,
    pub samples: Vec<Sample>,
}

impl Report {
    /// Print the human-readable summary.
    pub fn print(&self) {
        println!(
            "\n== {} {} — {} clients, {} lanes, {} workers, {}-byte bodies, {:.0} s measured after {:.0} s warm-up{} ==",
            self.backend,
            self.workload,
            self.clients,
            self.lanes,
            self.workers,
            self.body_bytes,
            self.duration_s,
            self.warmup_s,
            if self.prefilled > 0 { format!(", {} messages queued first", self.prefilled) } else { String::new() }
        );
        println!(
            "  throughput   {:.0} ops/s ({} × {} in {:.1} s)",
            self.throughput_ops_s, self.ops, self.op, self.duration_s
        );
        println!("  latency      {}", self.latency.line());
        println!("  errors       {}", self.errors);
        for (kind, n) in &self.error_kinds {
            println!("               {n} × {kind}");
        }
        if !self.counters.is_empty() {
            let parts: Vec<String> = self
                .counters
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            println!("  operations   {}", parts.join("  "));
        }
        for (k, v) in &self.details {
            println!("  {k:<12} {}", compact(v));
        }
        for n in &self.notes {
            println!("  note: {n}");
        }
    }
}

fn compact(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Print one progress line per second until the meter says done (or `deadline` passes), and
/// collect the samples. `extra` adds queued/RSS/in-flight figures to each line.
pub async fn progress<F>(meter: &Meter, label: &str, deadline: Instant, mut extra: F) -> Vec<Sample>
where
    F: FnMut() -> (Option<u64>, Option<u64>, Option<u64>),
{
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tick.tick().await;
        let (ops, errors, p99) = meter.take_interval();
        let (queued, rss, in_flight) = extra();
        let t = meter.start().elapsed().as_secs_f64();
        let now = Instant::now();
        let phase = if meter.in_window(now) {
            ""
        } else if now < meter.measure_from {
            " (warm-up)"
        } else {
            " (after the window)"
        };
        let mut line =
            format!("  [{t:>5.1}s] {label} {ops:>7} ops/s  p99 {p99:>8.2} ms  errors {errors}");
        if let Some(q) = queued {
            line.push_str(&format!("  queued {q}"));
        }
        if let Some(f) = in_flight {
            line.push_str(&format!("  in flight {f}"));
        }
        if let Some(r) = rss {
            line.push_str(&format!("  rss {:.0} MiB", r as f64 / 1048576.0));
        }
        line.push_str(phase);
        println!("{line}");
        samples.push(Sample {
            t_s: (t * 10.0).round() / 10.0,
            ops,
            errors,
            p99_ms: p99,
            queued,
            rss_bytes: rss,
            in_flight,
        });
        if meter.done() || Instant::now() >= deadline {
            break;
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        let mut h = new_histogram();
        // 1 ms .. 1000 ms, one sample each.
        for ms in 1..=1000u64 {
            h.record(ms * 1000).expect("in range");
        }
        let l = Latency::from_histogram(&h);
        assert_eq!(l.count, 1000);
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.002 + 0.001;
        assert!(close(l.p50_ms, 500.0), "p50 {}", l.p50_ms);
        assert!(close(l.p90_ms, 900.0), "p90 {}", l.p90_ms);
        assert!(close(l.p99_ms, 990.0), "p99 {}", l.p99_ms);
        assert!(close(l.p999_ms, 999.0), "p99.9 {}", l.p999_ms);
        assert!(close(l.max_ms, 1000.0), "max {}", l.max_ms);
        assert!(close(l.mean_ms, 500.5), "mean {}", l.mean_ms);
    }

    #[test]
    fn empty_histogram_reports_zeroes() {
        assert_eq!(
            Latency::from_histogram(&new_histogram()),
            Latency::default()
        );
    }

    #[test]
    fn meter_counts_only_the_window_but_every_interval() {
        // No warm-up, a long window: every record counts.
        let m = Meter::new(Duration::ZERO, Duration::from_secs(60));
        for us in [100u64, 200, 300, 400] {
            m.record(Duration::from_micros(us));
        }
        m.error("503 unavailable");
        m.error("503 unavailable");
        m.count("enqueue");
        assert_eq!(m.measured_ops(), 4);
        assert_eq!(m.errors(), 2);
        assert_eq!(m.error_kinds().get("503 unavailable"), Some(&2));
        assert_eq!(m.counter("enqueue"), 1);
        let (ops, errors, p99) = m.take_interval();
        assert_eq!((ops, errors), (4, 2));
        assert!((p99 - 0.4).abs() < 0.001, "p99 {p99}");
        assert_eq!(m.take_interval().0, 0, "the interval resets");
        // Still in warm-up: the interval sees it, the window does not.
        let w = Meter::new(Duration::from_secs(60), Duration::from_secs(1));
        w.record(Duration::from_millis(5));
        assert_eq!(w.measured_ops(), 0);
        assert_eq!(w.take_interval().0, 1);
    }

    #[test]
    fn an_early_stop_shortens_the_measured_time() {
        let m = Meter::new(Duration::ZERO, Duration::from_secs(60));
        m.stop();
        assert!(m.measured_secs() < 1.0);
        let w = Meter::new(Duration::from_secs(60), Duration::from_secs(60));
        w.stop();
        assert_eq!(w.measured_secs(), 0.0, "stopped during warm-up");
    }

    #[test]
    fn huge_latencies_are_clamped_not_lost() {
        let m = Meter::new(Duration::ZERO, Duration::from_secs(60));
        m.record(Duration::from_secs(3600));
        let l = m.latency();
        assert_eq!(l.count, 1);
        assert!(l.max_ms >= 299_000.0);
    }
}
