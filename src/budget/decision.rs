//! [`ChunkDecision`]: what became of one chunk, the report's one record of
//! a chunk's fate ([`Decision`], with its [`DropReason`] or
//! [`StubReason`]). The report's `included`, `excluded` and `truncated`
//! are views of these.

use serde::{Deserialize, Serialize};

use super::policy::Policy;
use crate::model::chunk_id::ChunkId;
use crate::model::memory::MemoryChunk;
use crate::model::roles::ChunkKind;

/// Why a chunk was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DropReason {
    /// Excluded by the build's kind or id filters.
    Filtered,
    /// A tool result whose call is not in the prompt.
    Orphan,
    /// Unprotected history, dropped to fit the budget (lowest priority, then oldest).
    Budget,
    /// Folded by the compaction in effect: its summary stands for it.
    Compacted,
    /// Thinking removed by a `clear_thinking_20251015` edit.
    #[serde(rename = "clear_thinking_20251015")]
    ClearThinking,
}

/// Why a chunk was stubbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StubReason {
    /// A disposable body, stubbed to fit the budget (oldest first).
    Budget,
    /// A tool use cleared by a `clear_tool_uses_20250919` edit.
    #[serde(rename = "clear_tool_uses_20250919")]
    ClearToolUses,
}

/// What happened to a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// In the prompt as rendered.
    Kept,
    /// In the prompt with its body cut so the chunk fits its cap.
    Truncated {
        /// Tokens of the rendered chunk before.
        tokens_before: usize,
        /// Tokens of the rendered chunk after (counted alone, as
        /// [`ChunkDecision::tokens`]); at most `cap`.
        tokens_after: usize,
        /// The cap on the whole rendered chunk (raised to 64 tokens if set lower).
        cap: usize,
    },
    /// In the prompt as a stub that keeps tag, id and attributes.
    Stubbed {
        /// Tokens of the rendered chunk before (after any truncation).
        tokens_before: usize,
        /// Tokens of the stub.
        tokens_after: usize,
        /// Why.
        reason: StubReason,
    },
    /// Left out.
    Dropped {
        /// Why.
        reason: DropReason,
    },
}

/// The decision about one input chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChunkDecision {
    /// The chunk's id.
    pub id: ChunkId,
    /// The chunk's kind.
    pub kind: ChunkKind,
    /// Tokens the chunk costs in the prompt (its rendered tokens when it was
    /// dropped; 0 when filtered out before rendering).
    pub tokens: usize,
    /// The priority it was planned with (its unit's).
    pub priority: i64,
    /// Whether the chunk was protected from the budget's stubbing and
    /// dropping. A `context_management` edit may still clear a call of the
    /// newest tool use when its `keep` says so (see
    /// [`ContextManagement`](crate::budget::ContextManagement)).
    pub protected: bool,
    /// What happened.
    #[serde(flatten)]
    pub decision: Decision,
    /// Tokens of the rendered chunk before its cap cut it, when this build
    /// cut it and then stubbed or dropped it (the decision no longer says
    /// `truncated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_from: Option<usize>,
}

impl ChunkDecision {
    /// The decision on `chunk` (whose shared id is `id`) before anything
    /// else is known of it: left out by the filters, with its own
    /// priority. A build that selects the chunk says more.
    pub(crate) fn filtered(id: ChunkId, chunk: &MemoryChunk, policy: &Policy) -> Self {
        ChunkDecision {
            id,
            kind: chunk.kind,
            tokens: 0,
            priority: policy.priority_of(chunk),
            protected: false,
            decision: Decision::Dropped {
                reason: DropReason::Filtered,
            },
            truncated_from: None,
        }
    }

    /// Whether the chunk is in the prompt, in any form.
    pub fn is_included(&self) -> bool {
        !matches!(self.decision, Decision::Dropped { .. })
    }
}
