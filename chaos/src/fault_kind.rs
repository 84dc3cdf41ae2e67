//! The kinds of fault the suite injects, by name (`--faults kill,partition,...`): what a
//! cluster backend says it supports and a schedule draws from.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    Kill,
    Pause,
    Partition,
    Latency,
    RestartAll,
    ClockSkew,
    ClockStep,
    SlowFsync,
}

impl FaultKind {
    pub const ALL: [FaultKind; 8] = [
        Self::Kill,
        Self::Pause,
        Self::Partition,
        Self::Latency,
        Self::RestartAll,
        Self::ClockSkew,
        Self::ClockStep,
        Self::SlowFsync,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kill => "kill",
            Self::Pause => "pause",
            Self::Partition => "partition",
            Self::Latency => "latency",
            Self::RestartAll => "restart-all",
            Self::ClockSkew => "clock-skew",
            Self::ClockStep => "clock-step",
            Self::SlowFsync => "slow-fsync",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s.trim())
    }

    /// Parse a comma-separated list (`all` for every kind).
    pub fn parse_list(s: &str) -> anyhow::Result<Vec<Self>> {
        if s.trim() == "all" {
            return Ok(Self::ALL.to_vec());
        }
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let kind = Self::parse(part).ok_or_else(|| {
                anyhow::anyhow!("unknown fault '{part}' (kill, pause, partition, latency, restart-all, clock-skew, clock-step, slow-fsync)")
            })?;
            if !out.contains(&kind) {
                out.push(kind);
            }
        }
        Ok(out)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
