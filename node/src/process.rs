//! Facts about a running process that `/proc` tells (Linux).

/// Resident set size of a process in bytes (`VmRSS` of /proc/PID/status; `self` for this one).
pub fn rss_bytes(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
