//! The chunks a previous build stubbed or dropped to fit its budget: the
//! next build repeats that cut first, so trimming only ever extends it.

use rustc_hash::FxHashMap;

use crate::budget::{ChunkDecision, Decision, DropReason, Fate, StubReason};
use crate::model::chunk_id::ChunkId;
use crate::model::rows::Rows;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PreviousCut {
    /// Looked up by the ids' 64-bit fingerprints and confirmed by comparing
    /// the ids: a one-shot builder may be handed a build of another state.
    ById {
        stubbed: FxHashMap<u64, ChunkId>,
        dropped: FxHashMap<u64, ChunkId>,
    },
    /// One fate per chunk position: a session keeps them aligned with its
    /// chunks, which spares every turn thousands of hash lookups. Chunks
    /// past the end were added since: cut only if a chunk with their id was
    /// cut and then removed (`removed`), as a lookup by id would say.
    ByPosition {
        marks: Vec<Fate>,
        removed: FxHashMap<Box<str>, Fate>,
    },
}

impl PreviousCut {
    /// The cut of a build's `decisions`, by id.
    pub(crate) fn by_id(decisions: &Rows<ChunkDecision>) -> Self {
        let (mut stubbed, mut dropped) = (FxHashMap::default(), FxHashMap::default());
        for decision in decisions {
            let map = match fate_of(decision) {
                Fate::Stubbed => &mut stubbed,
                Fate::Dropped => &mut dropped,
                Fate::Kept => continue,
            };
            map.insert(decision.id.fingerprint(), decision.id.clone());
        }
        PreviousCut::ById { stubbed, dropped }
    }

    /// The cut of a build's `decisions` (one per chunk, in order), by position.
    pub(crate) fn by_position(decisions: &Rows<ChunkDecision>) -> Self {
        PreviousCut::ByPosition {
            marks: decisions.iter().map(fate_of).collect(),
            removed: FxHashMap::default(),
        }
    }

    /// The fate of each chunk by position, for a cut kept by position
    /// with no chunk removed since.
    pub(crate) fn marks(&self) -> Option<&[Fate]> {
        match self {
            PreviousCut::ByPosition { marks, removed } if removed.is_empty() => Some(marks),
            _ => None,
        }
    }

    /// Records what a build decided for the chunk at `index` (by position).
    pub(crate) fn record(&mut self, index: usize, decision: &ChunkDecision) {
        if let PreviousCut::ByPosition { marks, .. } = self {
            if marks.len() <= index {
                marks.resize(index + 1, Fate::Kept);
            }
            marks[index] = fate_of(decision);
        }
    }

    /// Keeps positions aligned when the chunk at `index`, with `id`, is
    /// removed, and remembers its mark should the id come back.
    pub(crate) fn remove(&mut self, index: usize, id: &str) {
        if let PreviousCut::ByPosition { marks, removed } = self
            && index < marks.len()
        {
            let mark = marks.remove(index);
            if mark != Fate::Kept {
                removed.insert(id.into(), mark);
            }
        }
    }

    /// Keeps positions aligned when the chunk at `index`, with `old_id`,
    /// is replaced by one with `new_id`: the new chunk was cut only if a
    /// chunk with its id was cut and then removed.
    pub(crate) fn replace(&mut self, index: usize, old_id: &str, new_id: &str) {
        if let PreviousCut::ByPosition { marks, removed } = self
            && index < marks.len()
            && old_id != new_id
        {
            let mark = marks[index];
            if mark != Fate::Kept {
                removed.insert(old_id.into(), mark);
            }
            marks[index] = removed.get(new_id).copied().unwrap_or_default();
        }
    }

    /// Whether the chunk at `index`, with `id`, was stubbed.
    pub(crate) fn was_stubbed(&self, index: usize, id: &ChunkId) -> bool {
        self.fate(index, id) == Fate::Stubbed
    }

    /// Whether the chunk at `index` was dropped, by position only.
    pub(crate) fn was_dropped_at(&self, index: usize) -> bool {
        match self {
            PreviousCut::ByPosition { marks, .. } => marks.get(index) == Some(&Fate::Dropped),
            PreviousCut::ById { .. } => false,
        }
    }

    /// Whether the chunk at `index`, with `id`, was dropped.
    pub(crate) fn was_dropped(&self, index: usize, id: &ChunkId) -> bool {
        self.fate(index, id) == Fate::Dropped
    }

    fn fate(&self, index: usize, id: &ChunkId) -> Fate {
        match self {
            PreviousCut::ById { stubbed, dropped } => {
                let is = |map: &FxHashMap<u64, ChunkId>| {
                    map.get(&id.fingerprint()).is_some_and(|cut| cut == id)
                };
                if is(stubbed) {
                    Fate::Stubbed
                } else if is(dropped) {
                    Fate::Dropped
                } else {
                    Fate::Kept
                }
            }
            PreviousCut::ByPosition { marks, removed } => match marks.get(index) {
                Some(&mark) => mark,
                None if removed.is_empty() => Fate::Kept,
                None => removed.get(id.as_str()).copied().unwrap_or_default(),
            },
        }
    }
}

/// What a build made of a chunk, as the next one repeats it: only cuts
/// made for the budget repeat (a filtered or orphaned chunk, or one an
/// edit cleared, is judged afresh).
pub(crate) fn fate_of(decision: &ChunkDecision) -> Fate {
    match decision.decision {
        Decision::Stubbed {
            reason: StubReason::Budget,
            ..
        } => Fate::Stubbed,
        Decision::Dropped {
            reason: DropReason::Budget,
        } => Fate::Dropped,
        _ => Fate::Kept,
    }
}
