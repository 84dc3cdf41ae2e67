//! The one retention plan: which purges a retention run proposes, in which order, and how a
//! paged pass is walked page by page (docs/SPEC.md §8.6).
//!
//! Two callers run retention: the leader's retention timer ([`crate::timers`], from the
//! replicated config's ages and the node's deletion ages) and an operator's
//! `POST /v1/retention/purge` (the API crate, one kind at a time). Both build a
//! [`RetentionPlan`] here and walk each of its [`RetentionStep`]s with [`RetentionStep::run`],
//! so what a page is, what a pass counts and when a pass is over are said once. It lives in
//! this crate because the timer is here and the API depends on this crate, never the reverse.
//!
//! Message passes are paged (`RetentionPage`): one bounded entry at a time, never one command
//! that scans every message (a purge of 1,000,000 messages in one command once held every node
//! for 31 s). A pass is repeated until a page answers that nothing older than the cutoff is
//! left; the walk yields between pages so other proposals interleave.

use raftlane_statemachine::model::config::RetentionConfig;
use raftlane_statemachine::model::ids::Millis;
use raftlane_statemachine::wire::command::{
    PurgeState, RetentionPage, RetentionPass, MAX_RETENTION_PAGE,
};
use raftlane_statemachine::{Command, Outcome, Rejection, Response};
use std::future::Future;

/// How long ended messages are kept before retention deletes them, in ms (0 = keep forever).
/// From the node's `[tuning]` (`message_retention_ms`, `dead_letter_retention_ms`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeletePeriods {
    /// Messages that ended without error.
    pub messages_ms: u64,
    /// Messages that ended in error: dead letters and errors recorded by their producer.
    pub dead_letters_ms: u64,
}

/// What an operator's purge removes (`POST /v1/retention/purge`, its `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PurgeKind {
    /// The bodies of ended messages, failed ones included (`bodies`).
    Bodies,
    /// The payloads and errors of dead letters (`dead_letters`).
    DeadLetters,
    /// Transform state entries (`state`).
    State,
}

impl PurgeKind {
    /// The kind a request names: `bodies`, `dead_letters` or `state`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "bodies" => Some(Self::Bodies),
            "dead_letters" => Some(Self::DeadLetters),
            "state" => Some(Self::State),
            _ => None,
        }
    }
}

/// One purge of a plan: a paged pass, or the state purge (one bounded command of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetentionStep {
    /// `RetentionPage` of `pass`, repeated until a page answers that the pass is over.
    Paged {
        pass: RetentionPass,
        older_than: Millis,
    },
    /// `PurgeState`, proposed once.
    State { older_than: Millis },
}

impl RetentionStep {
    /// The command this step proposes (every page of a paged pass is the same command: a page
    /// starts from what the previous ones left).
    pub fn command(&self) -> Command {
        match *self {
            Self::Paged { pass, older_than } => Command::RetentionPage(RetentionPage {
                pass,
                older_than,
                limit: MAX_RETENTION_PAGE,
            }),
            Self::State { older_than } => Command::PurgeState(PurgeState { older_than }),
        }
    }

    /// Whether this is the one-time walk that indexes messages ended before the index existed:
    /// it purges nothing, so what it reports is not counted as purged.
    pub fn is_index_walk(&self) -> bool {
        matches!(
            self,
            Self::Paged {
                pass: RetentionPass::IndexEnded,
                ..
            }
        )
    }

    /// Walk this step: propose its command through `propose` (which answers the entry's log
    /// index and the state machine's response) page after page, yielding in between, until the
    /// pass is over or something stops it. Always answers what was done so far.
    pub async fn run<E, F, Fut>(&self, mut propose: F) -> StepRun<E>
    where
        F: FnMut(Command) -> Fut,
        Fut: Future<Output = Result<(u64, Response), E>>,
    {
        let mut run = StepRun {
            index: 0,
            purged: 0,
            pages: 0,
            end: StepEnd::Finished,
        };
        loop {
            let (index, response) = match propose(self.command()).await {
                Ok(answer) => answer,
                Err(e) => return run.ended(StepEnd::Failed(e)),
            };
            run.index = index;
            let more = match (self, response) {
                (Self::State { .. }, Ok(Outcome::Count(n))) => {
                    run.purged += n;
                    false
                }
                (Self::Paged { .. }, Ok(Outcome::RetentionPaged { purged, next, .. })) => {
                    run.pages += 1;
                    if !self.is_index_walk() {
                        run.purged += purged;
                    }
                    next.is_some()
                }
                (_, Ok(other)) => return run.ended(StepEnd::Unexpected(other)),
                (_, Err(rejection)) => return run.ended(StepEnd::Rejected(rejection)),
            };
            if !more {
                return run;
            }
            // Let other proposals in between pages: a purge is many small entries, not one.
            tokio::task::yield_now().await;
        }
    }
}

/// What walking one [`RetentionStep`] did, however it ended.
#[derive(Debug)]
pub struct StepRun<E> {
    /// The log index of the last entry the step committed (0: none).
    pub index: u64,
    /// Items purged: messages blanked or deleted, messages whose dead letters were blanked,
    /// state entries deleted (never the index walk's messages).
    pub purged: u64,
    /// Pages of a paged pass committed.
    pub pages: u64,
    pub end: StepEnd<E>,
}

impl<E> StepRun<E> {
    fn ended(mut self, end: StepEnd<E>) -> Self {
        self.end = end;
        self
    }
}

/// How a step's walk ended.
#[derive(Debug)]
pub enum StepEnd<E> {
    /// Nothing older than the cutoff is left (or the state purge applied).
    Finished,
    /// A proposal failed (`propose`'s error: lost leadership, no leader, ...).
    Failed(E),
    /// The state machine refused a page.
    Rejected(Rejection),
    /// An outcome of another shape than the command answers (a programming error).
    Unexpected(Outcome),
}

/// The purges of one retention run, in the order they are proposed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionPlan {
    steps: Vec<RetentionStep>,
}

impl RetentionPlan {
    /// The leader's retention tick at `now`: for every period that is set and non-zero, the
    /// period turned into an absolute cutoff (`older_than = now - period`, the form the state
    /// machine takes; `apply` has no clock). Unset periods mean "keep forever" and yield
    /// nothing. The message passes are led by the one-time walk that indexes messages ended
    /// before the index existed; deletions come before blanking, so nothing is blanked just
    /// before it is deleted; the state purge comes last.
    pub fn from_config(retention: &RetentionConfig, deletes: DeletePeriods, now: Millis) -> Self {
        let cutoff = |period: Option<u64>| period.filter(|p| *p > 0).map(|p| now.saturating_sub(p));
        let mut passes = Vec::new();
        if let Some(older_than) = cutoff(Some(deletes.messages_ms)) {
            passes.push((RetentionPass::DeleteEnded, older_than));
        }
        if let Some(older_than) = cutoff(Some(deletes.dead_letters_ms)) {
            passes.push((RetentionPass::DeleteFailed, older_than));
        }
        if let Some(older_than) = cutoff(retention.message_bodies_ms) {
            passes.push((RetentionPass::BlankBodies, older_than));
            passes.push((RetentionPass::BlankFailedBodies, older_than));
        }
        if let Some(older_than) = cutoff(retention.dead_letters_ms) {
            passes.push((RetentionPass::BlankDeadLetters, older_than));
        }
        let mut plan = Self::paged(&passes);
        if let Some(older_than) = cutoff(retention.state_ms) {
            plan.steps.push(RetentionStep::State { older_than });
        }
        plan
    }

    /// An operator's purge of `kind` for everything older than `older_than` (an absolute
    /// cutoff): the same passes the timer runs for that kind, led by the index walk.
    pub fn purge(kind: PurgeKind, older_than: Millis) -> Self {
        match kind {
            PurgeKind::Bodies => Self::paged(&[
                (RetentionPass::BlankBodies, older_than),
                (RetentionPass::BlankFailedBodies, older_than),
            ]),
            PurgeKind::DeadLetters => Self::paged(&[(RetentionPass::BlankDeadLetters, older_than)]),
            PurgeKind::State => Self {
                steps: vec![RetentionStep::State { older_than }],
            },
        }
    }

    /// `passes` led by the index walk (nothing at all when there is no pass).
    fn paged(passes: &[(RetentionPass, Millis)]) -> Self {
        let walk = RetentionStep::Paged {
            pass: RetentionPass::IndexEnded,
            older_than: 0,
        };
        let steps = passes
            .iter()
            .map(|&(pass, older_than)| RetentionStep::Paged { pass, older_than });
        Self {
            steps: (!passes.is_empty())
                .then_some(walk)
                .into_iter()
                .chain(steps)
                .collect(),
        }
    }

    /// The steps, in the order they run.
    pub fn steps(&self) -> &[RetentionStep] {
        &self.steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(pass: RetentionPass, older_than: Millis) -> Command {
        Command::RetentionPage(RetentionPage {
            pass,
            older_than,
            limit: MAX_RETENTION_PAGE,
        })
    }

    fn commands(plan: &RetentionPlan) -> Vec<Command> {
        plan.steps().iter().map(RetentionStep::command).collect()
    }

    #[test]
    fn the_timers_plan_follows_the_config() {
        let now = 1_000_000;
        let none = DeletePeriods::default();
        let plan = |r: &RetentionConfig, d| commands(&RetentionPlan::from_config(r, d, now));
        assert!(plan(&RetentionConfig::default(), none).is_empty());
        // Zero counts as unset, like the interval settings.
        let zero = RetentionConfig {
            message_bodies_ms: Some(0),
            dead_letters_ms: Some(0),
            state_ms: Some(0),
            dedupe_window_ms: Some(5),
        };
        assert!(plan(&zero, none).is_empty());
        let all = RetentionConfig {
            message_bodies_ms: Some(1_000),
            dead_letters_ms: Some(20_000),
            state_ms: Some(300_000),
            dedupe_window_ms: None,
        };
        let deletes = DeletePeriods {
            messages_ms: 100_000,
            dead_letters_ms: 200_000,
        };
        assert_eq!(
            plan(&all, deletes),
            vec![
                page(RetentionPass::IndexEnded, 0),
                page(RetentionPass::DeleteEnded, 900_000),
                page(RetentionPass::DeleteFailed, 800_000),
                page(RetentionPass::BlankBodies, 999_000),
                page(RetentionPass::BlankFailedBodies, 999_000),
                page(RetentionPass::BlankDeadLetters, 980_000),
                Command::PurgeState(PurgeState {
                    older_than: 700_000
                }),
            ]
        );
        let only_state = RetentionConfig {
            state_ms: Some(2 * now),
            ..RetentionConfig::default()
        };
        // A period longer than the clock saturates at 0: nothing is older than that. No
        // message pass, so no indexing walk either.
        assert_eq!(
            plan(&only_state, none),
            vec![Command::PurgeState(PurgeState { older_than: 0 })]
        );
        let only_deletes = DeletePeriods {
            messages_ms: 1_000,
            dead_letters_ms: 0,
        };
        assert_eq!(
            plan(&RetentionConfig::default(), only_deletes),
            vec![
                page(RetentionPass::IndexEnded, 0),
                page(RetentionPass::DeleteEnded, 999_000),
            ]
        );
    }

    #[test]
    fn an_operators_purge_runs_the_passes_of_its_kind() {
        let purge = |kind| commands(&RetentionPlan::purge(kind, 77));
        assert_eq!(
            purge(PurgeKind::Bodies),
            vec![
                page(RetentionPass::IndexEnded, 0),
                page(RetentionPass::BlankBodies, 77),
                page(RetentionPass::BlankFailedBodies, 77),
            ]
        );
        assert_eq!(
            purge(PurgeKind::DeadLetters),
            vec![
                page(RetentionPass::IndexEnded, 0),
                page(RetentionPass::BlankDeadLetters, 77),
            ]
        );
        assert_eq!(
            purge(PurgeKind::State),
            vec![Command::PurgeState(PurgeState { older_than: 77 })]
        );
        assert_eq!(
            PurgeKind::parse("dead_letters"),
            Some(PurgeKind::DeadLetters)
        );
        assert_eq!(PurgeKind::parse("everything"), None);
    }

    fn paged(purged: u64, more: bool) -> Response {
        let next = more.then_some(raftlane_statemachine::model::retention::RetentionCursor {
            at: 1,
            message_id: raftlane_statemachine::MessageId(1),
        });
        Ok(Outcome::RetentionPaged {
            examined: purged,
            purged,
            next,
        })
    }

    /// Answers `responses` in turn, at log indexes 1, 2, ...
    async fn walk(step: RetentionStep, responses: Vec<Response>) -> (StepRun<()>, usize) {
        let mut answers = responses.into_iter();
        let mut proposed = 0;
        let run = step
            .run(|command| {
                assert_eq!(command, step.command());
                proposed += 1;
                let answer = answers.next().map(|r| (proposed as u64, r)).ok_or(());
                async move { answer }
            })
            .await;
        (run, proposed)
    }

    #[tokio::test]
    async fn a_pass_is_walked_until_a_page_says_it_is_over() {
        let blank = RetentionStep::Paged {
            pass: RetentionPass::BlankBodies,
            older_than: 5,
        };
        let (run, proposed) =
            walk(blank, vec![paged(3, true), paged(4, true), paged(0, false)]).await;
        assert_eq!((run.index, run.purged, run.pages, proposed), (3, 7, 3, 3));
        assert!(matches!(run.end, StepEnd::Finished));

        // The index walk's pages are counted as pages, never as purged.
        let walk_step = RetentionPlan::purge(PurgeKind::Bodies, 5).steps()[0];
        assert!(walk_step.is_index_walk());
        let (run, _) = walk(walk_step, vec![paged(9, true), paged(1, false)]).await;
        assert_eq!((run.purged, run.pages), (0, 2));

        // The state purge is one command answering a count.
        let state = RetentionStep::State { older_than: 5 };
        let (run, proposed) = walk(state, vec![Ok(Outcome::Count(6))]).await;
        assert_eq!((run.index, run.purged, proposed), (1, 6, 1));

        // A failed proposal, a rejection and an outcome of another shape each end the walk,
        // keeping what was done before.
        let (run, _) = walk(blank, vec![paged(2, true)]).await;
        assert_eq!((run.index, run.purged), (1, 2));
        assert!(matches!(run.end, StepEnd::Failed(())));
        let refused = Err(Rejection::Invalid {
            field: "older_than".into(),
            reason: "no".into(),
        });
        let (run, _) = walk(blank, vec![paged(2, true), refused]).await;
        assert_eq!(run.purged, 2);
        assert!(matches!(
            run.end,
            StepEnd::Rejected(Rejection::Invalid { .. })
        ));
        let (run, proposed) = walk(blank, vec![Ok(Outcome::Count(1)), paged(1, false)]).await;
        assert_eq!((run.purged, proposed), (0, 1));
        assert!(matches!(run.end, StepEnd::Unexpected(Outcome::Count(1))));
    }
}
