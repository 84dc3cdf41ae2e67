//! Taking work back: in-flight rows whose holder is gone return to pending, and live rows whose
//! destination or handler left the engine's registry are dead-lettered (docs/SPEC.md §4.5,
//! §14.2, §14.3, §14.9).

use super::Client;
use crate::error::ClientError;
use crate::routes;
use raftlane_contract::{
    Reclaimed, RecoverRequest, Recovered, ResetRows, Stage, StageScope, SweepRequest, Swept,
};

fn scope(stage: Option<Stage>) -> StageScope {
    StageScope { stage }
}

impl Client {
    /// `POST /v1/leases/reclaim`: in-flight rows (of `stage`; absent: every stage) whose lease
    /// expired, back to pending.
    pub async fn reclaim_expired(&self, stage: Option<Stage>) -> Result<Reclaimed, ClientError> {
        self.call(&routes::LEASES_RECLAIM, [])
            .json(&scope(stage))?
            .answer()
            .await
    }

    /// `POST /v1/leases/reset`: every in-flight row (of `stage`), whatever its lease, back to
    /// pending: for a single process starting up.
    pub async fn reset_inflight(&self, stage: Option<Stage>) -> Result<ResetRows, ClientError> {
        self.call(&routes::LEASES_RESET, [])
            .json(&scope(stage))?
            .answer()
            .await
    }

    /// `POST /v1/leases/recover`: a new leader (its claims under `owner`) takes back every
    /// other owner's in-flight rows and every lane lease not held by `lane_owner`.
    pub async fn recover_inflight(
        &self,
        owner: &str,
        lane_owner: Option<&str>,
    ) -> Result<Recovered, ClientError> {
        let body = RecoverRequest {
            owner: owner.to_string(),
            lane_owner: lane_owner.map(str::to_string),
        };
        self.call(&routes::LEASES_RECOVER, [])
            .json(&body)?
            .answer()
            .await
    }

    /// `POST /v1/dead-letters/sweep`: dead-letter the live rows of `stage` (`Outbound` by
    /// destination, `Routed` by handler) whose name is not in `keep`.
    pub async fn sweep_dead_letters(
        &self,
        stage: Stage,
        keep: &[String],
    ) -> Result<Swept, ClientError> {
        let body = SweepRequest {
            stage,
            keep: keep.to_vec(),
        };
        self.call(&routes::DEAD_LETTERS_SWEEP, [])
            .json(&body)?
            .answer()
            .await
    }
}
