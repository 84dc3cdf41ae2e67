//! The exit statuses of `raftlane node`, one per thing a supervisor must do differently.
//!
//! A node restarted on a still-full disk must be restarted again later, one that refused a
//! damaged raft log must not be: with one status for both, a supervisor could neither keep
//! restarting the first nor stop restarting the second. docs/OPERATIONS.md ("Exit statuses")
//! shows how systemd, compose and Kubernetes are told.

use raftlane_raft::StartError;

/// Why `raftlane node` ended, as its exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Anything else (status 1): restarting may help.
    Failed,
    /// EX_DATAERR (65): its data is damaged (`STATE DAMAGED`, `RAFT LOG DAMAGED`); restarting
    /// cannot help, an operator must act (`--rejoin`).
    Damaged,
    /// EX_TEMPFAIL (75): a condition that passes: the disk is full or the storage failed
    /// (free space, then it is restarted), or `--rejoin` found too few other members up.
    RetryLater,
    /// EX_CONFIG (78): the flags, environment, config file or a file they name are wrong;
    /// restarting with the same configuration cannot help.
    Config,
}

impl ExitStatus {
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Failed => 1,
            ExitStatus::Damaged => 65,
            ExitStatus::RetryLater => 75,
            ExitStatus::Config => 78,
        }
    }

    /// The status for a node that could not start with `error`.
    pub fn of_start_error(error: &anyhow::Error) -> Self {
        for cause in error.chain() {
            if let Some(e) = cause.downcast_ref::<StartError>() {
                match e {
                    StartError::LogDamaged(_) | StartError::StateDamaged(_) => {
                        return ExitStatus::Damaged
                    }
                    StartError::Config(_) => return ExitStatus::Config,
                    _ => {}
                }
            }
            if cause.downcast_ref::<ConfigProblem>().is_some()
                || cause.downcast_ref::<crate::tls::NodeTlsError>().is_some()
            {
                return ExitStatus::Config;
            }
        }
        if storage_full(&format!("{error:#}")) {
            return ExitStatus::RetryLater;
        }
        ExitStatus::Failed
    }
}

impl ExitStatus {
    /// The status for a node whose Raft core stopped by itself with `failure`: damaged data
    /// (a checksum failed while reading the state or the log) needs an operator, anything else
    /// is retried by a restart.
    pub fn of_core_failure(failure: &raftlane_raft::CoreFailure) -> Self {
        match failure {
            raftlane_raft::CoreFailure::Storage(m)
                if raftlane_statemachine::storage::verify::is_corruption(m) =>
            {
                ExitStatus::Damaged
            }
            _ => ExitStatus::RetryLater,
        }
    }
}

/// Whether an error's text is a full disk (ENOSPC, as std and RocksDB word it).
pub fn storage_full(text: &str) -> bool {
    text.contains("No space left on device") || text.contains("os error 28")
}

/// A start that failed on its configuration (wraps the error of resolving the flags, or of a
/// file they name), so that it exits [`ExitStatus::Config`].
#[derive(Debug, thiserror::Error)]
#[error("configuration: {0:#}")]
pub struct ConfigProblem(pub anyhow::Error);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_has_its_status() {
        let full = anyhow::anyhow!(
            "IO error: While appending to file: /d/log/000004.log: No space left on device"
        )
        .context("cannot start the raft replica");
        assert_eq!(ExitStatus::of_start_error(&full), ExitStatus::RetryLater);
        let config = anyhow::Error::new(ConfigProblem(anyhow::anyhow!("--id is required")));
        assert_eq!(ExitStatus::of_start_error(&config), ExitStatus::Config);
        let other = anyhow::anyhow!("cannot listen on 127.0.0.1:1");
        assert_eq!(ExitStatus::of_start_error(&other), ExitStatus::Failed);
        let damaged = anyhow::Error::new(StartError::StateDamaged(raftlane_raft::StateDamage {
            dir: "/d/sm".into(),
            damage: raftlane_statemachine::storage::verify::Damage {
                table: Some("rows"),
                file: Some("/d/sm/000012.sst".into()),
                detail: "Corruption: block checksum mismatch".into(),
            },
        }))
        .context("cannot start the raft replica");
        assert_eq!(ExitStatus::of_start_error(&damaged), ExitStatus::Damaged);
        assert_eq!(
            [
                ExitStatus::Failed,
                ExitStatus::Damaged,
                ExitStatus::RetryLater,
                ExitStatus::Config
            ]
            .map(ExitStatus::code),
            [1, 65, 75, 78]
        );
    }
}
