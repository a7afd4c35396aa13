//! Protection and atomic units over the rendered history.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::memory::{ChunkKind, MemoryChunk, Role};
use crate::tokens::parts::CountedText;

/// A rendered history chunk as the planner sees it.
#[derive(Debug)]
pub(crate) struct Item {
    /// Index of the chunk in the session.
    pub(crate) chunk: usize,
    pub(crate) role: Role,
    pub(crate) part: CountedText,
    pub(crate) protected: bool,
}

/// Chunks that are kept or dropped together, oldest first by their first item.
#[derive(Debug)]
pub(crate) struct Unit {
    /// Indexes into the item list, ascending.
    pub(crate) items: SmallVec<[usize; 2]>,
    pub(crate) protected: bool,
}

/// Groups `items` into units (a tool call with its results) and spreads
/// protection over each unit, so that a pair is never split. Items are the
/// session's history chunks in order; `chunks` is the session.
pub(crate) fn group_units(items: &mut [Item], chunks: &[MemoryChunk]) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::with_capacity(items.len());
    let mut by_call: FxHashMap<&str, usize> = FxHashMap::default();
    for (index, item) in items.iter().enumerate() {
        let chunk = &chunks[item.chunk];
        let call = match chunk.kind {
            ChunkKind::Workflow | ChunkKind::Environment => chunk.call_id.as_deref(),
            _ => None,
        };
        match call.and_then(|c| by_call.get(c).copied()) {
            Some(unit) => units[unit].items.push(index),
            None => {
                if let Some(call) = call {
                    by_call.insert(call, units.len());
                }
                units.push(Unit {
                    items: SmallVec::from_elem(index, 1),
                    protected: false,
                });
            }
        }
    }
    for unit in &mut units {
        unit.protected = unit.items.iter().any(|&i| items[i].protected);
        for &i in &unit.items {
            items[i].protected = unit.protected;
        }
    }
    units
}

/// Whether `chunk` is a tool result whose call is not among `calls`.
pub(crate) fn is_orphan_result(chunk: &MemoryChunk, calls: &rustc_hash::FxHashSet<&str>) -> bool {
    chunk.kind == ChunkKind::Environment
        && chunk
            .call_id
            .as_deref()
            .is_some_and(|id| !calls.contains(id))
}
