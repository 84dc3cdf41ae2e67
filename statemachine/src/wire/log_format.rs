//! The log formats an [`Envelope`](crate::wire::command::Envelope) is written in (docs/SPEC.md
//! §2.8): what each is and how they are ordered. How each is written is
//! [`crate::wire::format1`] (format 1), [`crate::wire::format2`] (format 2) and
//! [`crate::wire::format3`] (formats 3 and 4); which one a reader faces, [`crate::wire::envelope`].

use std::fmt;

/// The formats an envelope is written in. Ordered: a cluster's format only ever goes up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogFormat {
    /// bincode of the envelope's fields in order (every build).
    #[default]
    V1,
    /// A record of numbered header fields around a format 1 command.
    V2,
    /// A record of numbered header fields around one vocabulary of commands: the wrappers of
    /// formats 1 and 2 are header fields, twins are one command.
    V3,
    /// Format 3's record, and one rule more: a claim's answer carries each claimed row's
    /// creation time ([`crate::wire::outcome::Outcome::Dated`]), the ingest time a worker hands
    /// to its handlers. A rule, not a layout: the answer is part of the replicated state (a
    /// remembered answer), so a node of a build before it must never apply such an entry.
    V4,
}

impl LogFormat {
    /// The newest format this build writes and reads.
    pub const NEWEST: LogFormat = LogFormat::V4;
    /// Every format this build reads, oldest first.
    pub const READ: [LogFormat; 4] = [LogFormat::V1, LogFormat::V2, LogFormat::V3, LogFormat::V4];

    /// The numbers of [`Self::READ`]: what a node says it reads (`/raft/formats`,
    /// `GET /v1/cluster/log-format`).
    pub fn read_numbers() -> Vec<u32> {
        Self::READ.iter().map(|f| f.number()).collect()
    }

    /// The format's number, as the state, the API and the node-to-node calls name it.
    pub fn number(self) -> u32 {
        match self {
            LogFormat::V1 => 1,
            LogFormat::V2 => 2,
            LogFormat::V3 => 3,
            LogFormat::V4 => 4,
        }
    }

    /// The format numbered `n`, if this build knows it.
    pub fn from_number(n: u32) -> Option<Self> {
        match n {
            1 => Some(LogFormat::V1),
            2 => Some(LogFormat::V2),
            3 => Some(LogFormat::V3),
            4 => Some(LogFormat::V4),
            _ => None,
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// The first word of a format 2, 3 or 4 envelope, where format 1 has its `now_ms`: no clock reads it
/// (it is 584 million years after 1970), and format 1 refuses to write it. The record that follows says which it is.
pub const FORMAT_2_MARK: u64 = u64::MAX;
