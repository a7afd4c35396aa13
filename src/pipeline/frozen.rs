//! Chunks a session's last build dropped that this build will drop again
//! exactly as they are: it reports them without planning them.

use rustc_hash::FxHashMap;

use crate::budget::{Policy, PreviousCut, Timeline, protects_itself, tool_call};
use crate::model::memory::MemoryState;

/// Which chunks are frozen, with their units' priorities.
///
/// A chunk is frozen when the previous build dropped it for the budget, it
/// is selected, unprotected (not pinned or critical, not the latest user
/// message or the newest tool use), still cached as rendered then, and so is every member of its tool
/// unit: the repeated cut drops such a unit whatever else happens. The
/// oldest such unit stays in the plan, so the elided-history marker sits
/// where it would; the others only add their count and tokens to it. Not
/// done with a renderer that is not deterministic (its chunks are rendered
/// again, and may come out otherwise) or a summarizer (which reads the
/// dropped chunks).
pub(super) struct Frozen {
    /// For each chunk, when frozen, its unit's priority and its tokens.
    chunks: Vec<Option<(i64, usize)>>,
}

impl Frozen {
    pub(super) fn none() -> Self {
        Frozen { chunks: Vec::new() }
    }

    /// The unit's priority and the tokens of the chunk at `index`, when frozen.
    pub(super) fn get(&self, index: usize) -> Option<(i64, usize)> {
        self.chunks.get(index).copied().flatten()
    }

    /// The frozen chunks of `state`, of which the `selected` are planned
    /// with `timeline`'s steps. `cached(index)` gives the tokens of the
    /// chunk at `index` when it may be frozen as far as its rendering goes
    /// (cached under its cap, not in the system role, not an orphan).
    pub(super) fn find(
        state: &MemoryState,
        (selected, timeline): (&[bool], &Timeline),
        policy: &Policy,
        previous: &PreviousCut,
        cached: impl Fn(usize) -> Option<usize>,
    ) -> Self {
        let chunks = &state.chunks;
        // Each chunk on its own: its tokens when it could be frozen.
        let alone: Vec<Option<usize>> = chunks
            .iter()
            .enumerate()
            .map(|(index, chunk)| {
                let unprotected = !timeline.anchors(index, chunk) && !protects_itself(chunk);
                (selected[index] && unprotected && previous.was_dropped_at(index))
                    .then(|| cached(index))
                    .flatten()
            })
            .collect();
        // A tool unit is frozen whole or not at all.
        let mut units: FxHashMap<&str, (bool, i64)> = FxHashMap::default();
        for (index, chunk) in chunks.iter().enumerate() {
            if let Some(call) = tool_call(chunk).filter(|_| selected[index]) {
                let unit = units.entry(call).or_insert((true, i64::MIN));
                unit.0 &= alone[index].is_some();
                unit.1 = unit.1.max(policy.priority_of(chunk));
            }
        }
        let mut frozen: Vec<Option<(i64, usize)>> = chunks
            .iter()
            .zip(&alone)
            .map(|(chunk, &tokens)| {
                let priority = match tool_call(chunk) {
                    Some(call) => units.get(call).filter(|unit| unit.0).map(|unit| unit.1),
                    None => Some(policy.priority_of(chunk)),
                };
                priority.zip(tokens)
            })
            .collect();
        // The oldest frozen unit stays in the plan to place the marker.
        if let Some(oldest) = frozen.iter().position(Option::is_some) {
            match tool_call(&chunks[oldest]) {
                Some(call) => {
                    for (index, chunk) in chunks.iter().enumerate() {
                        if tool_call(chunk) == Some(call) {
                            frozen[index] = None;
                        }
                    }
                }
                None => frozen[oldest] = None,
            }
        }
        Frozen { chunks: frozen }
    }
}
