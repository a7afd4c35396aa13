//! Compaction of a stored chat: planned from the branch as stored, and
//! applied in one save (see [`crate::compaction`]).
//!
//! Once the branch holds a compaction that states what it folds, a plan
//! reads back only to the chunk that compaction covers (and its task):
//! what came before is folded already and no new span reaches it, so
//! planning and applying cost what the history since the last compaction
//! costs, whatever the chat's length. The first compaction reads the
//! whole branch.

use super::ContextEngine;
use super::load::decode_chunk;
use crate::budget::Summarizer;
use crate::compaction::{
    AppliedCompaction, CompactionOptions, CompactionPlan, CompactionSummary, Scope,
};
use crate::error::{ErrorKind, Result};
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::session::ContextSession;
use crate::store::{NodeId, StoredChunk};

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
        let mut chunk = made.chunk;
        chunk.id = self.free_id(chunk.id)?;
        applied.compaction = chunk.id.clone();
        if self.nodes.is_none() {
            self.refuse_stored_ids(std::slice::from_ref(&chunk))?;
        }
        self.session.push_applied(chunk)?;
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

    /// Plans a compaction, asks `summarizer` for the summary of the chunks
    /// it folds, and applies it in one save (see
    /// [`ContextSession::compact_with`]). `None` when there is nothing to
    /// fold or the summarizer declines.
    ///
    /// # Errors
    ///
    /// As [`plan_compaction`](ContextEngine::plan_compaction) and
    /// [`apply_compaction`](ContextEngine::apply_compaction).
    pub fn compact_with(
        &mut self,
        summarizer: &dyn Summarizer,
        options: &CompactionOptions,
    ) -> Result<Option<AppliedCompaction>> {
        let summary =
            self.in_scope(|session, scope| session.summarized(summarizer, options, scope))?;
        match summary {
            Some((plan, summary)) => self.apply_compaction(&plan, summary).map(Some),
            None => Ok(None),
        }
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
        let name = format!("{}\u{1e}{}", self.chat, self.branch);
        if let Some((mut session, nodes)) = self.since_compaction()? {
            let place = |index: usize| nodes.get(index).map_or(u64::MAX, |&n| n as u64);
            return work(
                &mut session,
                &Scope {
                    name,
                    place: &place,
                },
            );
        }
        self.load_chunks()?;
        let nodes = self.nodes.clone().unwrap_or_default();
        let place = |index: usize| nodes.get(index).map_or(u64::MAX, |&n| n as u64);
        work(
            &mut self.session,
            &Scope {
                name,
                place: &place,
            },
        )
    }

    /// `id`, or the first of `id-2`, `id-3`… that no chunk on the branch
    /// has (the plan read only part of it).
    fn free_id(&self, id: String) -> Result<String> {
        let Some(head) = self.head else {
            return Ok(id);
        };
        for n in 1.. {
            let candidate = if n == 1 {
                id.clone()
            } else {
                format!("{id}-{n}")
            };
            let pending = self.held().chunks.iter().any(|c| c.id == candidate);
            if !pending
                && self
                    .nodes()
                    .find_chunk(&self.chat, head, &candidate)?
                    .is_none()
            {
                return Ok(candidate);
            }
        }
        Ok(id)
    }

    /// A session of the chunks a plan reads once the branch holds a
    /// compaction with its figures: the task it kept, then every chunk
    /// from the one it covers to the head, with their nodes. `None` when
    /// the whole branch must be read (no such compaction, counts under a
    /// caller's counter, or a read that does not make a valid session).
    fn since_compaction(&self) -> Result<Option<(ContextSession, Vec<NodeId>)>> {
        let (Some(head), Some(key)) = (self.head, self.session.count_key()) else {
            return Ok(None);
        };
        match self.read_to_covered(head, &key)? {
            Some(read) => self.session_of(read, &key),
            None => Ok(None),
        }
    }

    /// The session of `read` (newest first, ending at the covered chunk)
    /// after the task the compaction kept, seeded with the stored counts.
    fn session_of(
        &self,
        mut read: Vec<(StoredChunk, MemoryChunk)>,
        key: &str,
    ) -> Result<Option<(ContextSession, Vec<NodeId>)>> {
        let location = self.store.location();
        let covered = read.last().map(|(stored, _)| stored.node);
        let summary = match covered {
            Some(node) => self.nodes().path_summary(&self.chat, node, key)?,
            None => None,
        };
        if let Some(task) = summary
            .and_then(|s| s.last_user)
            .filter(|&t| Some(t) != covered)
        {
            for stored in self.nodes().read_nodes(&self.chat, &[task], Some(key))? {
                let chunk = decode_chunk(stored.position, &stored, &location)?;
                read.push((stored, chunk));
            }
        }
        read.reverse();
        let nodes: Vec<NodeId> = read.iter().map(|(stored, _)| stored.node).collect();
        let counts: Vec<Option<String>> = read.iter().map(|(s, _)| s.counts.clone()).collect();
        let mut state = MemoryState::new();
        state.chunks = read.into_iter().map(|(_, chunk)| chunk).collect();
        let Ok(mut session) = ContextSession::with_config(self.session.config().clone(), state)
        else {
            return Ok(None);
        };
        let counted = counts.iter().enumerate();
        session.seed_counts(counted.filter_map(|(i, c)| Some((i, c.as_deref()?))));
        Ok(Some((session, nodes)))
    }
}
