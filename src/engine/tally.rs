//! What the store's path tallies need of each chunk (see
//! `store::tally`), and what they say back under a policy.

use crate::budget::{Policy, tool_call};
use crate::memory::MemoryChunk;
use crate::roles::{ChunkKind, Retention, Role};
use crate::store::{CLASSES, ChunkMeta, ClassTally};

const ROLES: [Option<Role>; 4] = [
    None,
    Some(Role::System),
    Some(Role::User),
    Some(Role::Assistant),
];

/// A chunk's class: its kind and role, which decide its priority when it
/// sets none.
fn class_of(chunk: &MemoryChunk) -> u8 {
    let kind = ChunkKind::ALL
        .iter()
        .position(|k| *k == chunk.kind)
        .unwrap_or(0);
    let role = ROLES.iter().position(|r| *r == chunk.role).unwrap_or(0);
    u8::try_from(kind * ROLES.len() + role).unwrap_or(0)
}

/// What the store keeps of `chunk` for its path's tallies.
pub(super) fn meta_of(chunk: &MemoryChunk) -> ChunkMeta {
    ChunkMeta {
        class: class_of(chunk),
        // A system chunk (or one spoken by the system) joins the system
        // message: no budget drops it, like a pinned or critical one.
        protected: chunk.pinned
            || chunk.retention == Some(Retention::Critical)
            || chunk.kind == ChunkKind::System
            || chunk.role == Some(Role::System),
        priority: chunk.priority,
        user_turn: chunk.is_user_turn(),
        tool_call: chunk.kind == ChunkKind::Workflow,
        call_id: tool_call(chunk).map(str::to_owned),
        orphan: false,
    }
}

/// The highest priority `policy` gives a chunk the tally counts, if it
/// counts any.
pub(super) fn highest_priority(classes: &ClassTally, policy: &Policy) -> Option<i64> {
    let by_class = (0..CLASSES)
        .filter(|&c| classes.counts[c] > 0)
        .map(|class| {
            let kind = ChunkKind::ALL[(class / ROLES.len()) % ChunkKind::ALL.len()];
            let mut chunk = MemoryChunk::new("", kind);
            chunk.role = ROLES[class % ROLES.len()];
            policy.priority_of(&chunk)
        });
    by_class.chain(classes.max_priority).max()
}

/// The tally with one chunk of `chunk`'s class fewer.
pub(super) fn without(mut classes: ClassTally, chunk: &MemoryChunk) -> ClassTally {
    if chunk.priority.is_none() {
        let class = usize::from(class_of(chunk));
        classes.counts[class] = classes.counts[class].saturating_sub(1);
    }
    classes
}
