//! Chunks a session's last build dropped that this build will drop again
//! exactly as they are: it reports them without planning them.

use rustc_hash::FxHashMap;

use crate::budget::{Policy, PreviousCut, tool_call};
use crate::memory::{MemoryChunk, MemoryState, Retention};

/// Which chunks are frozen, with their units' priorities.
///
/// A chunk is frozen when the previous build dropped it for the budget, it
/// is selected, unprotected (not pinned or critical, before the latest user
/// turn), still cached as rendered then, and so is every member of its tool
/// unit: the repeated cut drops such a unit whatever else happens. The
/// oldest such unit stays in the plan, so the elided-history marker sits
/// where it would; the others only add their count and tokens to it. Not
/// done with custom renderers (a role may differ) or a summarizer (which
/// reads the dropped chunks).
pub(super) struct Frozen {
    /// For each chunk, its unit's priority when frozen.
    pub(super) priority: Vec<Option<i64>>,
}

impl Frozen {
    pub(super) fn none() -> Self {
        Frozen {
            priority: Vec::new(),
        }
    }

    pub(super) fn get(&self, index: usize) -> Option<i64> {
        self.priority.get(index).copied().flatten()
    }

    /// `eligible(index)` says whether the chunk at `index`, on its own, may
    /// be frozen (dropped before, cached, not an orphan).
    pub(super) fn find(
        state: &MemoryState,
        selected: &[bool],
        turns_after: &[usize],
        policy: &Policy,
        previous: &PreviousCut,
        eligible: impl Fn(usize) -> bool,
    ) -> Self {
        let chunks = &state.chunks;
        let latest_user = (0..chunks.len()).rfind(|&i| selected[i] && chunks[i].is_user_turn());
        let alone = |index: usize, chunk: &MemoryChunk| {
            selected[index]
                && latest_user.is_some_and(|latest| index < latest)
                && !chunk.pinned
                && policy.retention_of(chunk, turns_after[index]) != Retention::Critical
                && matches!(previous, PreviousCut::ByPosition { .. })
                && previous.was_dropped_at(index)
                && eligible(index)
        };
        // A tool unit is frozen whole or not at all.
        let mut units: FxHashMap<&str, (bool, i64)> = FxHashMap::default();
        for (index, chunk) in chunks.iter().enumerate() {
            if let Some(call) = tool_call(chunk).filter(|_| selected[index]) {
                let unit = units.entry(call).or_insert((true, i64::MIN));
                unit.0 &= alone(index, chunk);
                unit.1 = unit.1.max(policy.priority_of(chunk));
            }
        }
        let mut priority: Vec<Option<i64>> = chunks
            .iter()
            .enumerate()
            .map(|(index, chunk)| match tool_call(chunk) {
                Some(call) => units
                    .get(call)
                    .filter(|unit| unit.0 && selected[index])
                    .map(|unit| unit.1),
                None => alone(index, chunk).then(|| policy.priority_of(chunk)),
            })
            .collect();
        // The oldest frozen unit stays in the plan to place the marker.
        if let Some(oldest) = priority.iter().position(Option::is_some) {
            match tool_call(&chunks[oldest]) {
                Some(call) => {
                    for (index, chunk) in chunks.iter().enumerate() {
                        if tool_call(chunk) == Some(call) {
                            priority[index] = None;
                        }
                    }
                }
                None => priority[oldest] = None,
            }
        }
        Frozen { priority }
    }
}
