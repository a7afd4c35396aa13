//! Which chunk bodies a build will surely cut, known while it renders
//! them, so their text need not be held.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::budget::{Policy, PreviousCut};
use crate::chunk_id::ChunkId;
use crate::memory::{ChunkKind, MemoryChunk, Retention};

/// Fed chunks newest first. The ladder makes room by stubbing disposable
/// bodies oldest first, then dropping units lowest priority first, then
/// oldest, down to the low-water mark. So once the newer chunks alone
/// overflow the budget, a disposable body is cut (stubbed or dropped), and
/// any chunk is dropped when the newer chunks of its unit's priority or
/// higher, stubbed, reach the mark, unless its unit is protected. Units are foreseen from chunk fields (a
/// call id groups a call with its results).
pub(super) struct CutForecast<'a> {
    policy: &'a Policy,
    available: usize,
    previous: Option<&'a PreviousCut>,
    /// Per call id: the unit's highest priority, and whether it is protected.
    units: FxHashMap<&'a str, (i64, bool)>,
    /// Everything from the latest user turn on is protected.
    latest_user: Option<usize>,
    /// Tokens of the newer chunks as they stand before any stub step.
    newer: usize,
    /// Tokens of the newer chunks with every stub applied, by priority.
    newer_by_priority: BTreeMap<i64, usize>,
}

impl<'a> CutForecast<'a> {
    /// `retention(index)` is the retention of the selected chunk at `index`.
    pub(super) fn new(
        chunks: &'a [MemoryChunk],
        selected: &[bool],
        policy: &'a Policy,
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
            policy,
            available,
            previous,
            units,
            latest_user,
            newer: 0,
            newer_by_priority: BTreeMap::new(),
        }
    }

    /// Whether the body of the chunk at `index` will be cut, given the newer
    /// chunks fed so far; then counts the chunk among them. `tokens` are
    /// its body's, `stub` its stub's when it is disposable.
    pub(super) fn body_surely_cut(
        &mut self,
        index: usize,
        chunk: &MemoryChunk,
        id: &ChunkId,
        retention: Retention,
        tokens: usize,
        stub: Option<usize>,
    ) -> bool {
        let priority = self.policy.priority_of(chunk);
        let (priority, protected) = match self.unit_of(chunk) {
            Some(&(unit_priority, unit_protected)) => (priority.max(unit_priority), unit_protected),
            None => (priority, protects(chunk, retention)),
        };
        let protected = protected || self.latest_user.is_some_and(|latest| index >= latest);
        // Newer chunks over the budget mean it will be trimmed, to the
        // low-water mark (higher only when protected content is most of it).
        let trimmed = self.newer >= self.available;
        let mark = (self.available as f64 * self.policy.low_water) as usize;
        let stubbed = stub.is_some() && trimmed;
        let newer: usize = self
            .newer_by_priority
            .range(priority..)
            .map(|(_, t)| t)
            .sum();
        let dropped = trimmed && newer >= mark;
        // What the previous build cut stays cut: dropped, it outlasts
        // nothing; stubbed, it stands as its stub.
        let previously = |cut: fn(&PreviousCut, &ChunkId) -> bool| {
            self.previous.is_some_and(|previous| cut(previous, id))
        };
        if !previously(PreviousCut::was_dropped) {
            let stub_tokens = stub.unwrap_or(tokens);
            self.newer += if previously(PreviousCut::was_stubbed) {
                stub_tokens
            } else {
                tokens
            };
            *self.newer_by_priority.entry(priority).or_default() += stub_tokens;
        }
        !protected && (stubbed || dropped)
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
