//! The plan's rules about one chunk on its own, written once for every
//! path that plans: a one-shot build, a session's warm turn, and a stored
//! chat's build from its newest chunks, which asks them of what the store
//! tallied when the chunk was saved.
//!
//! The rules about a chunk's place (the latest user message, the newest
//! tool use, ages) are the [`Timeline`](super::Timeline)'s; a chunk's
//! priority is the [`Policy`](super::Policy)'s, by its
//! [`ChunkClass`] when it sets none.

use crate::model::memory::MemoryChunk;
use crate::model::roles::{ChunkClass, ChunkKind, Retention, Role};

/// Whether `chunk` protects itself (and its unit) wherever it sits:
/// pinned, `critical`, or a compaction's summary (which only a newer
/// compaction folds: see [`super::Fold`]). Only an explicit retention is
/// critical, so neither the policy nor the chunk's age matters.
pub(crate) fn protects_itself(chunk: &MemoryChunk) -> bool {
    chunk.pinned
        || chunk.retention == Some(Retention::Critical)
        || chunk.kind == ChunkKind::Compaction
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

/// The class of `chunk`, which decides its priority when it sets none.
pub(crate) fn class_of(chunk: &MemoryChunk) -> ChunkClass {
    ChunkClass {
        kind: chunk.kind,
        role: chunk.role,
    }
}

/// Whether `chunk` is a tool use: the assistant's call of a tool, which
/// ends the steps that came before it and heads a unit with the results
/// that answer it.
pub(crate) fn is_tool_use(chunk: &MemoryChunk) -> bool {
    chunk.kind == ChunkKind::Workflow
}

/// The call id of a tool call, by which its results find it: a tool use
/// that names one.
pub(crate) fn call_id_of(chunk: &MemoryChunk) -> Option<&str> {
    chunk.call_id.as_deref().filter(|_| is_tool_use(chunk))
}

/// Whether `chunk` is a tool result: what the environment answered.
pub(crate) fn is_tool_result(chunk: &MemoryChunk) -> bool {
    chunk.kind == ChunkKind::Environment
}

/// The call id a tool result answers, when it names one: it joins the
/// call's unit, or is an orphan if no call on the branch has that id.
pub(crate) fn answered_call(chunk: &MemoryChunk) -> Option<&str> {
    chunk.call_id.as_deref().filter(|_| is_tool_result(chunk))
}
