//! The small vocabularies every layer speaks: what a chunk records
//! ([`ChunkKind`]), who speaks a message ([`Role`]), how willingly a chunk
//! gives way ([`Retention`]), and the two together that decide a chunk's
//! default priority ([`ChunkClass`], which stores tally). They sit below
//! the memory types so the token counters, renderers and stores can name
//! them without the chunk model.

use serde::{Deserialize, Serialize};

/// What a chunk records; decides its default tag, role and budget treatment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkKind {
    /// Standing context about the task or environment (system message).
    System,
    /// A user or assistant turn.
    Agent,
    /// A tool or skill call made by the agent.
    Workflow,
    /// Work handed to, or returned by, a subagent.
    Delegation,
    /// What the environment returned: a tool result.
    Environment,
    /// The agent's reasoning.
    Thinking,
    /// The outcome of the task.
    Output,
    /// A summary standing for the history it folds (`covers` and all
    /// unprotected chunks before it; see `docs/compaction.md`).
    Compaction,
}

impl ChunkKind {
    /// Every kind, in declaration order.
    pub const ALL: [ChunkKind; 8] = [
        ChunkKind::System,
        ChunkKind::Agent,
        ChunkKind::Workflow,
        ChunkKind::Delegation,
        ChunkKind::Environment,
        ChunkKind::Thinking,
        ChunkKind::Output,
        ChunkKind::Compaction,
    ];

    /// The kind's name as written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkKind::System => "system",
            ChunkKind::Agent => "agent",
            ChunkKind::Workflow => "workflow",
            ChunkKind::Delegation => "delegation",
            ChunkKind::Environment => "environment",
            ChunkKind::Thinking => "thinking",
            ChunkKind::Output => "output",
            ChunkKind::Compaction => "compaction",
        }
    }

    /// Parses a kind name as written in JSON.
    pub fn from_name(name: &str) -> Option<ChunkKind> {
        ChunkKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// The speaker of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions and standing context.
    System,
    /// The user, and what the environment returns to the agent.
    User,
    /// The agent.
    Assistant,
}

impl Role {
    /// The role's name as providers spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// How willingly a chunk gives way when the budget is tight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retention {
    /// Never dropped, like a pinned chunk.
    Critical,
    /// May be shortened or dropped.
    Compressible,
    /// The first to go.
    Disposable,
}

/// A chunk's class: its kind and role, which decide its priority when it
/// sets none (see [`Policy::priority_of`](crate::budget::Policy::priority_of)). A
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
        assert_eq!(ChunkClass::COUNT, 32);

        for (index, class) in ChunkClass::all().enumerate() {
            assert_eq!(class.index(), index);
        }
        assert_eq!(ChunkClass::at(ChunkClass::COUNT), None);
    }
}
