//! Raising the cluster's log format (docs/SPEC.md §2.8). The leader checks, before proposing,
//! that every member reads the new format; here only what the state can judge: the format is
//! one this build knows, and the log's format never goes back (entries of the higher format are
//! in the log already, and a build that reads only the lower one could not replay them).

use crate::apply::audit;
use crate::apply::{Apply, ApplyResult, Ctx};
use crate::tables::meta;
use crate::wire::command::SetLogFormat;
use crate::wire::log_format::LogFormat;
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

impl Apply for SetLogFormat {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let Some(target) = LogFormat::from_number(self.format) else {
            return Err(Rejection::invalid(
                "format",
                format!(
                    "this build writes log formats 1 to {}",
                    LogFormat::NEWEST.number()
                ),
            )
            .into());
        };
        let current = meta::log_format(cx.txn)?;
        if target.number() < current {
            return Err(Rejection::invalid(
                "format",
                format!("the log is in format {current} already; a format never goes back"),
            )
            .into());
        }
        if target.number() == current {
            return Ok(Outcome::Count(0));
        }
        meta::set_log_format(cx.txn, target);
        audit::record_default(
            cx,
            "cluster.log_format",
            None,
            format!("log format {current} -> {target}"),
        )?;
        Ok(Outcome::Count(1))
    }
}
