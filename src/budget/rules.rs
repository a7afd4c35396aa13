//! The plan's rules about one chunk on its own, written once for every
//! path that plans: a one-shot build, a session's warm turn, and a stored
//! chat's build from its newest chunks, which asks them of what the store
//! tallied when the chunk was saved.
//!
//! The rules about a chunk's place (the latest user message, the newest
//! tool use, ages) are the [`Timeline`](super::Timeline)'s; a chunk's
//! priority is the [`Policy`](super::Policy)'s, by its [`ChunkClass`] when
//! it sets none.

use crate::memory::MemoryChunk;
use crate::roles::{ChunkKind, Retention, Role};

/// Whether `chunk` protects itself (and its unit) wherever it sits:
/// pinned, or `critical`. Only an explicit retention is critical, so
/// neither the policy nor the chunk's age matters.
pub(crate) fn protects_itself(chunk: &MemoryChunk) -> bool {
    chunk.pinned || chunk.retention == Some(Retention::Critical)
}

/// Whether `chunk` joins the system message under the default renderers
/// (a system chunk, or one spoken by the system), where no budget trims it.
pub(crate) fn joins_system(chunk: &MemoryChunk) -> bool {
    chunk.kind == ChunkKind::System || chunk.role == Some(Role::System)
}

/// Whether no budget ever drops `chunk` under the default renderers,
/// wherever it sits: it protects itself or joins the system message.
pub(crate) fn never_dropped(chunk: &MemoryChunk) -> bool {
    protects_itself(chunk) || joins_system(chunk)
}

/// A chunk's class: its kind and role, which decide its priority when it
/// sets none (see [`Policy::priority_of`](super::Policy::priority_of)). A
/// store tallies the chunks on a path by class, each class at its
/// [`index`](ChunkClass::index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChunkClass {
    /// The chunk's kind.
    pub kind: ChunkKind,
    /// The chunk's role, if it has one.
    pub role: Option<Role>,
}

/// The roles a class may have, in the order of its index.
const ROLES: [Option<Role>; 4] = [
    None,
    Some(Role::System),
    Some(Role::User),
    Some(Role::Assistant),
];

impl ChunkClass {
    /// How many classes there are: every kind with every role or none.
    pub const COUNT: usize = ChunkKind::ALL.len() * ROLES.len();

    /// The class of `chunk`.
    pub fn of(chunk: &MemoryChunk) -> Self {
        ChunkClass {
            kind: chunk.kind,
            role: chunk.role,
        }
    }

    /// The class's place among all, below [`COUNT`](ChunkClass::COUNT):
    /// kinds in declaration order, each with no role, then system, user
    /// and assistant. Stores keep tallies at these places, so the order
    /// never changes.
    pub fn index(self) -> usize {
        let kind = ChunkKind::ALL
            .iter()
            .position(|k| *k == self.kind)
            .unwrap_or(0);
        let role = ROLES.iter().position(|r| *r == self.role).unwrap_or(0);
        kind * ROLES.len() + role
    }

    /// The class at `index`, if there is one.
    pub fn at(index: usize) -> Option<Self> {
        Some(ChunkClass {
            kind: *ChunkKind::ALL.get(index / ROLES.len())?,
            role: ROLES[index % ROLES.len()],
        })
    }

    /// Every class, in the order of their indexes.
    pub fn all() -> impl Iterator<Item = ChunkClass> {
        (0..Self::COUNT).filter_map(Self::at)
    }
}

impl Default for ChunkClass {
    /// The class at index 0.
    fn default() -> Self {
        ChunkClass {
            kind: ChunkKind::ALL[0],
            role: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_keep_their_stored_indexes() {
        // Stores wrote these indexes: they must not move.
        let class = |kind, role| ChunkClass { kind, role }.index();
        assert_eq!(class(ChunkKind::System, None), 0);
        assert_eq!(class(ChunkKind::Agent, Some(Role::User)), 6);
        assert_eq!(class(ChunkKind::Agent, Some(Role::Assistant)), 7);
        assert_eq!(class(ChunkKind::Output, None), 24);
        assert_eq!(ChunkClass::COUNT, 28);
        for (index, class) in ChunkClass::all().enumerate() {
            assert_eq!(class.index(), index);
        }
        assert_eq!(ChunkClass::at(ChunkClass::COUNT), None);
    }
}
