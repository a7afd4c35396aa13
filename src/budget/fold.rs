//! What a compaction folds, written once for every path that plans: a
//! one-shot build, a session's turn, a stored chat's build, and the plan
//! that makes the next compaction.
//!
//! The newest `compaction` chunk stands for every chunk up to and
//! including the one it `covers`, and for every compaction before it
//! (spans nest: see `model::compaction`), except what the span protects:
//! the chunks no budget drops (system chunks, pinned and `critical` ones:
//! see [`never_dropped`]) and the span's *task*, its newest user message.
//! The task is fixed by the span alone, so what a compaction folds never
//! changes as the chat grows: an autonomous run of a thousand steps after
//! one instruction compacts its steps and keeps the instruction.
//!
//! The summary takes the place of the span, right after the chunks the
//! span keeps, so the prompt reads: system, protected chunks and the task,
//! the summary, then the history after `covers`.

use super::Timeline;
use super::rules::{answered_call, call_id_of, never_dropped};
use crate::model::memory::MemoryChunk;
use crate::model::roles::ChunkKind;

/// The compaction in effect in a list of chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fold {
    /// The index of the newest compaction chunk.
    pub(crate) compaction: usize,
    /// The index of the chunk it covers, the last of its span.
    pub(crate) covers: usize,
    /// The index of the span's task, its newest user message, if any.
    pub(crate) task: Option<usize>,
}

impl Fold {
    /// The fold of `chunks`, found from the newest: `None` without a
    /// compaction, or when the newest one's `covers` names no chunk before
    /// it (a session whose covered chunk was since removed or renamed:
    /// the summary then shows where it sits, folding nothing).
    pub(crate) fn of(chunks: &[MemoryChunk]) -> Option<Fold> {
        let compaction = chunks.iter().rposition(is_compaction)?;
        let covers = chunks[compaction].covers()?;
        let covered = chunks[..compaction].iter().rposition(|c| c.id == covers)?;
        Some(Fold {
            compaction,
            covers: covered,
            task: task_of(&chunks[..=covered]),
        })
    }

    /// Whether this fold folds `chunk`, the `index`-th: an earlier
    /// compaction, or an unprotected chunk of the span.
    pub(crate) fn folds(&self, index: usize, chunk: &MemoryChunk) -> bool {
        if is_compaction(chunk) {
            return index != self.compaction;
        }
        index <= self.covers && !never_dropped(chunk) && Some(index) != self.task
    }
}

/// The task of a span (`chunks` up to the one covered): its newest user
/// message, which the compaction keeps.
pub(crate) fn task_of(chunks: &[MemoryChunk]) -> Option<usize> {
    chunks.iter().rposition(MemoryChunk::is_user_turn)
}

/// Whether `chunk` is a compaction's summary.
pub(crate) fn is_compaction(chunk: &MemoryChunk) -> bool {
    chunk.kind == ChunkKind::Compaction
}

impl Fold {
    /// The fold of a compaction appended after `chunks` that covers the
    /// chunk at `covers`, after `previous` (the compaction in effect):
    /// only the chunks after `previous`'s span are searched for the task.
    pub(crate) fn covering(chunks: &[MemoryChunk], covers: usize, previous: Option<Fold>) -> Fold {
        let start = previous.map_or(0, |f| f.covers + 1);
        let task = match task_of(&chunks[start..=covers]) {
            Some(offset) => Some(start + offset),
            None => previous.and_then(|f| f.task),
        };
        Fold {
            compaction: chunks.len(),
            covers,
            task,
        }
    }

    /// What this fold folds that `previous` (the compaction in effect
    /// before it) did not, in the order the prompt showed them: the task
    /// `previous` kept if this one folds it, `previous` itself, then the
    /// chunks after its span. Every chunk at or before `end` is read.
    pub(crate) fn newly_folded(
        &self,
        chunks: &[MemoryChunk],
        previous: Option<Fold>,
    ) -> Vec<usize> {
        let mut folded = Vec::new();
        let start = match previous {
            Some(previous) => {
                let task = previous.task.filter(|&t| self.folds(t, &chunks[t]));
                folded.extend(task);
                folded.push(previous.compaction);
                previous.covers + 1
            }
            None => 0,
        };
        let after = (start..=self.covers).filter(|&i| !is_compaction(&chunks[i]));
        folded.extend(after.filter(|&i| self.folds(i, &chunks[i])));
        folded
    }
}

/// Where a new compaction's span may end in `chunks`, oldest first: the
/// last chunk of each whole step after the span of `previous` (the
/// compaction in effect) and before `limit`, so no tool use is parted
/// from its results. The step of the newest tool use always stays.
pub(crate) fn span_ends(
    chunks: &[MemoryChunk],
    timeline: &Timeline,
    previous: Option<Fold>,
    limit: usize,
) -> Vec<usize> {
    let first = previous.map_or(0, |f| f.covers + 1);
    let limit = timeline.newest_use_start().map_or(limit, |s| s.min(limit));
    // The last result of each call: a span ending between them would
    // part them.
    let mut reach = rustc_hash::FxHashMap::default();
    for (index, chunk) in chunks.iter().enumerate().take(limit) {
        if let Some(call) = answered_call(chunk) {
            reach.insert(call, index);
        }
    }
    let mut furthest = 0;
    let mut ends = Vec::new();
    let mut starts = timeline.step_starts().peekable();
    for (index, chunk) in chunks.iter().enumerate().take(limit) {
        if let Some(call) = call_id_of(chunk) {
            furthest = furthest.max(reach.get(call).copied().unwrap_or(index));
        }
        while starts.next_if(|&s| s <= index).is_some() {}
        let next_starts_a_step = starts.peek() == Some(&(index + 1));
        if index >= first && next_starts_a_step && furthest <= index {
            ends.push(index);
        }
    }
    ends
}

/// Where the newest `keep_tokens` of the history `fold` leaves start:
/// the smallest suffix of unprotected, unfolded chunks that holds at
/// least that many tokens (`tokens_of` each, alone) starts there; the
/// start of the history when it all holds less.
pub(crate) fn kept_from(
    chunks: &[MemoryChunk],
    fold: Option<Fold>,
    keep_tokens: usize,
    mut tokens_of: impl FnMut(usize) -> crate::error::Result<usize>,
) -> crate::error::Result<usize> {
    let mut kept = 0;
    for index in (0..chunks.len()).rev() {
        if kept >= keep_tokens {
            return Ok(index + 1);
        }
        let chunk = &chunks[index];
        let shown = !never_dropped(chunk) && !fold.is_some_and(|f| f.folds(index, chunk));
        if shown && !is_compaction(chunk) {
            kept += tokens_of(index)?;
        }
    }
    Ok(0)
}
