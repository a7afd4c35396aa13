//! Compaction of a stored chat: planned from the branch as stored, and
//! applied in one save (see [`crate::compaction`]).

use super::ContextEngine;
use crate::compaction::{
    AppliedCompaction, CompactionOptions, CompactionPlan, CompactionSummary, Scope,
};
use crate::error::{ErrorKind, Result};
use crate::session::ContextSession;

impl ContextEngine {
    /// Plans a compaction of the branch (see
    /// [`ContextSession::plan_compaction`](crate::ContextSession::plan_compaction)):
    /// the plan names the branch and the stored node it covers, so it
    /// applies there only, and only while that node is on the branch.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Compaction`] while the engine holds unsaved changes;
    /// as `ContextSession::plan_compaction`, and [`ErrorKind::Store`] if
    /// the store fails.
    pub fn plan_compaction(&mut self, options: &CompactionOptions) -> Result<CompactionPlan> {
        self.in_scope(|session, scope| session.plan_compaction_in(options, scope))
    }

    /// Applies `plan` with `summary`: appends the compaction chunk and
    /// saves it, alone, in one transaction. Chunks saved after the plan
    /// stay after the span.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Compaction`] for a plan that no longer holds on the
    /// branch (its covered chunk rewound away, another compaction applied
    /// since), a summary that is empty or no smaller than what it folds,
    /// or unsaved changes; [`ErrorKind::Conflict`] if another writer saved
    /// first; [`ErrorKind::Store`] if the store fails. Nothing is written
    /// on error.
    pub fn apply_compaction(
        &mut self,
        plan: &str,
        summary: impl Into<CompactionSummary>,
    ) -> Result<AppliedCompaction> {
        let summary = summary.into();
        let made = self.in_scope(|session, scope| session.compaction_of(plan, summary, scope))?;
        let mut applied = made.applied();
        self.push(made.chunk)?;
        if let Err(error) = self.save() {
            // Nothing was written: drop the chunk with the rest.
            self.reload()?;
            return Err(error);
        }
        applied.chat = Some(self.chat.clone());
        applied.branch = Some(self.branch.clone());
        applied.head = self.head;
        Ok(applied)
    }

    /// Runs `work` on the session of the whole branch, in the scope of
    /// this branch's plans, whose chunks are told apart by their nodes.
    /// Refuses unsaved changes, whose chunks have no node a plan could
    /// name.
    fn in_scope<T>(
        &mut self,
        work: impl FnOnce(&mut ContextSession, &Scope<'_>) -> Result<T>,
    ) -> Result<T> {
        if self.has_pending() {
            return Err(ErrorKind::Compaction {
                message: "the engine holds unsaved changes: save them (or reload) before \
                          planning or applying a compaction"
                    .into(),
            }
            .into());
        }
        self.load_chunks()?;
        let nodes = self.nodes.clone().unwrap_or_default();
        let place = |index: usize| nodes.get(index).map_or(u64::MAX, |&n| n as u64);
        let scope = Scope {
            name: format!("{}\u{1e}{}", self.chat, self.branch),
            place: &place,
        };
        work(&mut self.session, &scope)
    }
}
