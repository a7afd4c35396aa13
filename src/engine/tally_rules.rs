//! What the store's path tallies need of each chunk (see
//! `store::tally`), and what they say back under a policy: the plan's
//! rules (`budget::rules`) asked of a chunk when it is saved, and of its
//! class when it is not read.

use crate::budget::{Policy, class_of, is_tool_use, never_dropped, tool_call};
use crate::model::memory::MemoryChunk;
use crate::model::roles::ChunkClass;
use crate::store::{ChunkMeta, ClassTally};

/// What the store keeps of `chunk` for its path's tallies.
pub(super) fn meta_of(chunk: &MemoryChunk) -> ChunkMeta {
    ChunkMeta {
        class: class_of(chunk),
        protected: never_dropped(chunk),
        priority: chunk.priority,
        user_turn: chunk.is_user_turn(),
        tool_call: is_tool_use(chunk),
        call_id: tool_call(chunk).map(str::to_owned),
        orphan: false,
    }
}

/// The highest priority `policy` gives a chunk the tally counts, if it
/// counts any.
pub(super) fn highest_priority(classes: &ClassTally, policy: &Policy) -> Option<i64> {
    let by_class = ChunkClass::all()
        .filter(|class| classes.counts[class.index()] > 0)
        .map(|class| policy.class_priority(class));
    by_class.chain(classes.max_priority).max()
}

/// The tally with one chunk of `chunk`'s class fewer.
pub(super) fn without(mut classes: ClassTally, chunk: &MemoryChunk) -> ClassTally {
    if chunk.priority.is_none() {
        let class = class_of(chunk).index();
        classes.counts[class] = classes.counts[class].saturating_sub(1);
    }
    classes
}
