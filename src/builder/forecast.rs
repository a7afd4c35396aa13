//! Which chunks a build will surely cut, known while it renders them, so
//! their text need not be held.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::budget::{Policy, PreviousCut};
use crate::chunk_id::ChunkId;
use crate::memory::{ChunkKind, MemoryChunk, Retention};

/// Fed chunks newest first. The ladder makes room by dropping units lowest
/// priority first, then oldest, after stubbing; so a chunk is cut when the
/// newer chunks of its unit's priority or higher (stubs counted as stubs)
/// already fill the budget, unless its unit is protected. Units are
/// foreseen from chunk fields (a call id groups a call with its results).
pub(super) struct CutForecast<'a> {
    available: usize,
    previous: Option<&'a PreviousCut>,
    /// Per call id: the unit's highest priority, and whether it is protected.
    units: FxHashMap<&'a str, (i64, bool)>,
    /// Everything from the latest user turn on is protected.
    latest_user: Option<usize>,
    newer_by_priority: BTreeMap<i64, usize>,
}

impl<'a> CutForecast<'a> {
    /// `retention(index)` is the retention of the selected chunk at `index`.
    pub(super) fn new(
        chunks: &'a [MemoryChunk],
        selected: &[bool],
        policy: &Policy,
        retention: impl Fn(usize) -> Retention,
        available: usize,
        previous: Option<&'a PreviousCut>,
    ) -> Self {
        let mut units: FxHashMap<&str, (i64, bool)> = FxHashMap::default();
        for (index, chunk) in chunks.iter().enumerate() {
            if let (true, Some(call), ChunkKind::Workflow | ChunkKind::Environment) =
                (selected[index], chunk.call_id.as_deref(), chunk.kind)
            {
                let unit = units.entry(call).or_insert((i64::MIN, false));
                unit.0 = unit.0.max(policy.priority_of(chunk));
                unit.1 |= protects(chunk, retention(index));
            }
        }
        let latest_user = (0..chunks.len()).rfind(|&i| selected[i] && chunks[i].is_user_turn());
        CutForecast {
            available,
            previous,
            units,
            latest_user,
            newer_by_priority: BTreeMap::new(),
        }
    }

    /// Whether the chunk at `index` will be cut, given the newer chunks fed
    /// so far; then counts it (as `tokens`) among them.
    pub(super) fn surely_cut(
        &mut self,
        index: usize,
        chunk: &MemoryChunk,
        id: &ChunkId,
        priority: i64,
        retention: Retention,
        tokens: usize,
    ) -> bool {
        let (priority, protected) = match self.unit_of(chunk) {
            Some(&(unit_priority, unit_protected)) => (priority.max(unit_priority), unit_protected),
            None => (priority, protects(chunk, retention)),
        };
        let protected = protected || self.latest_user.is_some_and(|latest| index >= latest);
        let newer: usize = self
            .newer_by_priority
            .range(priority..)
            .map(|(_, t)| t)
            .sum();
        // What the previous build dropped stays dropped: it outlasts nothing.
        if !self.previous.is_some_and(|cut| cut.was_dropped(id)) {
            *self.newer_by_priority.entry(priority).or_default() += tokens;
        }
        !protected && newer >= self.available
    }

    fn unit_of(&self, chunk: &MemoryChunk) -> Option<&(i64, bool)> {
        match chunk.kind {
            ChunkKind::Workflow | ChunkKind::Environment => {
                self.units.get(chunk.call_id.as_deref()?)
            }
            _ => None,
        }
    }
}

fn protects(chunk: &MemoryChunk, retention: Retention) -> bool {
    chunk.pinned || retention == Retention::Critical
}
