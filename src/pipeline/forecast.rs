//! Which chunk bodies a build will surely cut, known while it renders
//! them, so their text need not be held.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::budget::{Policy, PreviousCut, Timeline, protects_itself, tool_call};
use crate::model::chunk_id::ChunkId;
use crate::model::memory::MemoryChunk;

/// Fed chunks newest first. The ladder makes room by stubbing disposable
/// bodies oldest first, then dropping units lowest priority first, then
/// oldest, down to the low-water mark. So once the newer chunks alone
/// overflow the budget, a disposable body is cut (stubbed or dropped), and
/// any chunk is dropped when the newer chunks of its unit's priority or
/// higher, stubbed, reach the mark, unless its unit is protected. Units are
/// foreseen from chunk fields (a call id groups a call with its results).
/// A forecast can be wrong (the plan may keep more when protected content is
/// most of the budget): the build then renders the chunk again, and a
/// session counts it in [`BuildStats::chunks_restored`](crate::BuildStats).
pub(super) struct CutForecast<'a> {
    chunks: &'a [MemoryChunk],
    selected: &'a [bool],
    /// Steps (ages) and the chunks protected by their place.
    timeline: &'a Timeline,
    policy: &'a Policy,
    available: usize,
    previous: Option<&'a PreviousCut>,
    /// Per call id: the unit's highest priority, and whether it is
    /// protected. Made when first needed: only a long history needs it.
    units: Option<FxHashMap<&'a str, (i64, bool)>>,
    /// Tokens of the newer chunks as they stand before any stub step.
    newer: usize,
    /// Tokens of the newer chunks with every stub applied, by their own
    /// priority (a unit's may be higher: the sums can only fall short).
    newer_by_priority: BTreeMap<i64, usize>,
}

impl<'a> CutForecast<'a> {
    /// A forecast over `chunks`, of which the `selected` are planned with
    /// `timeline`'s steps, under `policy`, in `available` tokens, after
    /// the `previous` cut.
    pub(super) fn new(
        chunks: &'a [MemoryChunk],
        (selected, timeline): (&'a [bool], &'a Timeline),
        policy: &'a Policy,
        available: usize,
        previous: Option<&'a PreviousCut>,
    ) -> Self {
        CutForecast {
            chunks,
            selected,
            timeline,
            policy,
            available,
            previous,
            units: None,
            newer: 0,
            newer_by_priority: BTreeMap::new(),
        }
    }

    /// Whether the body of the chunk at `index` (with its id) will be cut,
    /// given the newer chunks fed so far; then counts the chunk among them.
    /// `tokens` are its body's, `stub` its stub's when it is disposable.
    pub(super) fn body_surely_cut(
        &mut self,
        (index, chunk, id): (usize, &MemoryChunk, &ChunkId),
        tokens: usize,
        stub: Option<usize>,
    ) -> bool {
        let own_priority = self.policy.priority_of(chunk);
        // What the previous build cut stays cut: dropped, it outlasts
        // nothing; stubbed, it stands as its stub.
        let previously = |cut: fn(&PreviousCut, usize, &ChunkId) -> bool| {
            self.previous
                .is_some_and(|previous| cut(previous, index, id))
        };
        let counted = !previously(PreviousCut::was_dropped);
        let stubbed_before = counted && previously(PreviousCut::was_stubbed);
        // Newer chunks over the budget mean it will be trimmed, to the
        // low-water mark (higher only when protected content is most of it).
        let trimmed = self.newer >= self.available;
        let cut = trimmed && {
            let (priority, protected) = match self.unit_of(chunk) {
                Some((unit_priority, unit_protected)) => {
                    (own_priority.max(unit_priority), unit_protected)
                }
                None => (own_priority, protects_itself(chunk)),
            };
            let protected = protected || self.timeline.anchors(index, chunk);
            let mark = (self.available as f64 * self.policy.low_water) as usize;
            let newer: usize = self
                .newer_by_priority
                .range(priority..)
                .map(|(_, t)| t)
                .sum();
            !protected && (stub.is_some() || newer >= mark)
        };
        if counted {
            let stub_tokens = stub.unwrap_or(tokens);
            self.newer += if stubbed_before { stub_tokens } else { tokens };
            *self.newer_by_priority.entry(own_priority).or_default() += stub_tokens;
        }
        cut
    }

    fn unit_of(&mut self, chunk: &MemoryChunk) -> Option<(i64, bool)> {
        let call = tool_call(chunk)?;
        let units = self.units.get_or_insert_with(|| {
            let mut units: FxHashMap<&str, (i64, bool)> = FxHashMap::default();
            for (index, chunk) in self.chunks.iter().enumerate() {
                if let (true, Some(call)) = (self.selected[index], tool_call(chunk)) {
                    let latest = self.timeline.anchors(index, chunk);
                    let unit = units.entry(call).or_insert((i64::MIN, false));
                    unit.0 = unit.0.max(self.policy.priority_of(chunk));
                    unit.1 |= latest || protects_itself(chunk);
                }
            }
            units
        });
        units.get(call).copied()
    }
}
