//! A work row as it is now, and the fenced row actions: one at a time or many in one request.

use super::Client;
use crate::error::{encode_error, ClientError};
use crate::routes;
use raftlane_contract::{
    ClaimNext, ClaimedRow, DoneBody, FifoClaim, RowAction, RowActionItem, RowActionResult,
    RowActionResults, RowActionsRequest, RowAnswer, RowDetail, RowId,
};

impl Client {
    /// `GET /v1/rows/{id}`: the row as it is now, payload decrypted.
    pub async fn row_detail(&self, row: RowId) -> Result<RowDetail, ClientError> {
        self.call(&routes::ROW, [&row.to_string()])
            .reads_state()
            .answer()
            .await
    }

    /// A fenced row action: `POST /v1/rows/{row_id}/{action}` with the action's body. Answers
    /// the action's own answer (e.g. [`RowAnswer::HandedOff`] for a hand-off).
    pub async fn row(&self, row_id: u64, action: RowAction) -> Result<RowAnswer, ClientError> {
        let body = action.body().map_err(encode_error)?;
        self.call(&routes::ROW_ACTION, [&row_id.to_string(), action.name()])
            .json(&body)?
            .answer()
            .await
    }

    /// Many fenced row actions in one request (each on a different row, no `done` with
    /// `claim_next`). Answers one result per action, in order: the action's own answer, or
    /// [`RowActionResult::Refused`] for an action the cluster refused (bad input refuses the
    /// whole request instead).
    pub async fn row_actions(
        &self,
        actions: &[RowActionItem],
    ) -> Result<Vec<RowActionResult>, ClientError> {
        let body = RowActionsRequest {
            actions: actions.to_vec(),
        };
        let answer: RowActionResults = self
            .call(&routes::ROW_ACTIONS, [])
            .json(&body)?
            .answer()
            .await?;
        Ok(answer.results)
    }

    pub async fn done(&self, row: &ClaimedRow) -> Result<RowAnswer, ClientError> {
        self.row(row.row_id.0, RowAction::Done(DoneBody::new(row.fence)))
            .await
    }

    /// Mark `row` done and claim the next row of its lane for `owner`, in one write.
    pub async fn done_then_claim_next(
        &self,
        row: &ClaimedRow,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<FifoClaim, ClientError> {
        let action = RowAction::Done(DoneBody {
            fence: row.fence,
            claim_next: Some(ClaimNext {
                owner: owner.to_string(),
                ttl_ms,
            }),
        });
        match self.row(row.row_id.0, action).await? {
            RowAnswer::Done {
                next: Some(next), ..
            } => Ok(next),
            other => Err(ClientError::Decode(format!(
                "a done with claim_next answered without next: {other:?}"
            ))),
        }
    }
}
