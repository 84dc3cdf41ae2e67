//! The leader's watch over its learners: once a second, remove those behind for longer than
//! their bound ([`crate::learners`] keeps the record and says why).

use crate::learners::Stalled;
use crate::node::{NodeInner, RaftNode};
use std::sync::Weak;
use std::time::{Duration, Instant};
use tokio::sync::watch::Receiver;

/// How often the leader looks at its learners.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The leader's watch over its learners, until `stop`: see the module documentation. Holds the
/// node weakly, so a node dropped without shutdown is not kept alive by it.
pub(crate) async fn watch(node: Weak<NodeInner>, stop: Receiver<bool>) {
    let mut ticks = crate::util::Ticks::new(WATCH_EVERY, stop);
    while ticks.next().await {
        let Some(inner) = node.upgrade() else { return };
        RaftNode { inner }.watch_learners().await;
    }
}

impl RaftNode {
    /// One look at the learners (on the leader; elsewhere nothing): remove those behind for
    /// longer than the bound. Skipped while a membership change holds the lock (an add waits
    /// for its own learner).
    async fn watch_learners(&self) {
        let Ok(_guard) = self.inner.membership_lock.try_lock() else {
            return;
        };
        let Ok(view) = self.view_for_rules() else {
            return;
        };
        let bound = Duration::from_millis(self.config().tuning.learner_catchup_timeout_ms.max(1));
        for (id, addr) in self.inner.learners.overdue(&view, bound, Instant::now()) {
            let stalled = Stalled::new(id, &addr, &view, bound);
            if let Err(e) = self.remove_stalled(&stalled).await {
                tracing::warn!(id = self.id(), learner = id, error = %e, "could not remove a stalled learner");
            }
        }
    }

    /// The learners this node removed because they did not catch up (for `GET /v1/cluster`).
    pub fn removed_learners(&self) -> Vec<Stalled> {
        self.inner.learners.recent()
    }
}
