//! Protection, atomic units, and the order in which room is made.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use super::rules::{answered_call, call_id_of};
use crate::budget::PreviousCut;
use crate::model::chunk_id::ChunkId;
use crate::model::memory::MemoryChunk;
use crate::model::roles::Role;
use crate::tokens::parts::CountedText;

/// A rendered history chunk as the planner sees it.
#[derive(Debug)]
pub(crate) struct Item {
    /// Index of the chunk in the session.
    pub(crate) chunk: usize,
    pub(crate) role: Role,
    pub(crate) part: Arc<CountedText>,
    /// The stub that may replace the part; only for disposable chunks whose
    /// stub is smaller.
    pub(crate) stub: Option<Arc<CountedText>>,
    pub(crate) protected: bool,
    /// The chunk's own priority; after [`group_units`], its unit's.
    pub(crate) priority: i64,
}

/// Chunks that are kept or dropped together.
#[derive(Debug)]
pub(crate) struct Unit {
    /// Indexes into the item list, ascending.
    pub(crate) items: SmallVec<[usize; 2]>,
    pub(crate) protected: bool,
    pub(crate) priority: i64,
}

/// One way of making room, applied in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Replace an item's body by its stub.
    Stub(usize),
    /// Drop a unit.
    Drop(usize),
}

/// Groups `items` into units (a tool call with its results) and spreads
/// protection and priority (the highest member's) over each unit, so a pair
/// is never split. Items are the session's history chunks in order.
pub(crate) fn group_units(
    items: &mut [Item],
    chunks: &[MemoryChunk],
    calls: &mut Calls<'_>,
) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let call = tool_call(&chunks[item.chunk]);
        let next = units.len();
        // Calls are known up front; a result's call is there (orphans are
        // not items). Either takes the next unit when it has none yet.
        let unit = match call.and_then(|call| calls.get_mut(call)) {
            Some(unit) if *unit == NO_UNIT => {
                *unit = next;
                next
            }
            Some(unit) => *unit,
            None => next,
        };
        if unit == next {
            units.push(Unit {
                items: SmallVec::from_elem(index, 1),
                protected: false,
                priority: i64::MIN,
            });
        } else {
            units[unit].items.push(index);
        }
    }
    for unit in &mut units {
        unit.protected = unit.items.iter().any(|&i| items[i].protected);
        unit.priority = unit
            .items
            .iter()
            .map(|&i| items[i].priority)
            .max()
            .unwrap_or(0);
        for &i in &unit.items {
            items[i].protected = unit.protected;
            items[i].priority = unit.priority;
        }
    }
    units
}

/// The order in which room is made, and how many leading steps every
/// layout takes: `first` (the stubs of tool uses an edit cleared), then
/// the previous build's cut, so that trimming only ever extends it; then
/// stubs of disposable bodies, oldest first; then whole units, lowest
/// priority first, then oldest.
pub(crate) fn plan_steps<'a>(
    items: &[Item],
    units: &[Unit],
    (id_of, previous): (impl Fn(usize) -> &'a ChunkId, Option<&PreviousCut>),
    first: &[Step],
) -> (Vec<Step>, usize) {
    let id = |item: usize| id_of(items[item].chunk);
    let mut steps = first.to_vec();
    let mut unit_taken = vec![false; units.len()];
    let mut item_unit = vec![0; items.len()];
    for (u, unit) in units.iter().enumerate() {
        for &i in &unit.items {
            item_unit[i] = u;
        }
    }
    if let Some(previous) = previous {
        for (u, unit) in units.iter().enumerate() {
            if !unit.protected
                && unit
                    .items
                    .iter()
                    .any(|&i| previous.was_dropped(items[i].chunk, id(i)))
            {
                unit_taken[u] = true;
            }
        }
        for (i, item) in items.iter().enumerate() {
            let unit = item_unit[i];
            if unit_taken[unit] && units[unit].items[0] == i {
                steps.push(Step::Drop(unit));
            } else if !unit_taken[unit]
                && item.stub.is_some()
                && !item.protected
                && previous.was_stubbed(items[i].chunk, id(i))
            {
                steps.push(Step::Stub(i));
            }
        }
    }
    let sticky = steps.len();
    let already_stubbed: FxHashSet<usize> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Stub(i) => Some(*i),
            Step::Drop(_) => None,
        })
        .collect();
    for (i, item) in items.iter().enumerate() {
        if item.stub.is_some()
            && !item.protected
            && !unit_taken[item_unit[i]]
            && !already_stubbed.contains(&i)
        {
            steps.push(Step::Stub(i));
        }
    }
    let mut droppable: Vec<usize> = (0..units.len())
        .filter(|&u| !units[u].protected && !unit_taken[u])
        .collect();
    droppable.sort_by_key(|&u| (units[u].priority, units[u].items[0]));
    steps.extend(droppable.into_iter().map(Step::Drop));
    (steps, sticky)
}

/// Whether `chunk` is a tool result whose call is not among `calls`.
/// The call ids of a build's tool calls, each with its unit once grouped.
pub(crate) type Calls<'s> = FxHashMap<&'s str, usize>;

/// A call whose unit is not known yet.
pub(crate) const NO_UNIT: usize = usize::MAX;

pub(crate) fn is_orphan_result(chunk: &MemoryChunk, calls: &Calls<'_>) -> bool {
    answered_call(chunk).is_some_and(|id| !calls.contains_key(id))
}

/// The call id that groups a tool call or result into a unit.
pub(crate) fn tool_call(chunk: &MemoryChunk) -> Option<&str> {
    call_id_of(chunk).or_else(|| answered_call(chunk))
}
