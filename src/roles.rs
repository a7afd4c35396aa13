//! The small vocabularies every layer speaks: what a chunk records
//! ([`ChunkKind`]), who speaks a message ([`Role`]), and how willingly a
//! chunk gives way ([`Retention`]). They sit below the memory types so the
//! token counters and renderers can name a role without the chunk model.

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
}

impl ChunkKind {
    /// Every kind, in declaration order.
    pub const ALL: [ChunkKind; 7] = [
        ChunkKind::System,
        ChunkKind::Agent,
        ChunkKind::Workflow,
        ChunkKind::Delegation,
        ChunkKind::Environment,
        ChunkKind::Thinking,
        ChunkKind::Output,
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
