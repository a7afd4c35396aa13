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

use super::rules::never_dropped;
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
        let covers = chunks[compaction].covers.as_deref()?;
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
