//! Fitting the prompt into the budget: what is protected, what moves together,
//! and one decision per chunk.
//!
//! The rules, in order:
//! * **Protected** content is never dropped: the system prompt and system
//!   chunks, pinned and `critical` chunks, and the latest user message with
//!   everything after it. If it alone does not fit, the build fails with
//!   [`ErrorKind::BudgetExceeded`](crate::ErrorKind::BudgetExceeded).
//! * **Units** are kept or dropped whole: a tool call with every result that
//!   shares its `call_id`. A result whose call is not in the session (or was
//!   filtered out) is an orphan and is never emitted.
//! * Unprotected units are **dropped oldest first** until the prompt fits; one
//!   `<elided_history chunks="N" tokens="T"/>` marker, in the user role, takes
//!   the place of the first dropped chunk.

mod planner;
mod truncate;
mod units;

use serde::Serialize;

pub(crate) use planner::{ELIDED_TAG, HISTORY_START_TAG, Layout, Planner, Slot, framing_table};
pub use truncate::{MIN_CAP, TruncatedBody, truncate_to_cap};
pub(crate) use units::{Item, group_units, is_orphan_result};

use crate::memory::ChunkKind;

/// Why a chunk was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DropReason {
    /// Excluded by the build's kind or id filters.
    Filtered,
    /// A tool result whose call is not in the prompt.
    Orphan,
    /// Older unprotected history, dropped to fit the budget.
    Budget,
}

/// What happened to a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// In the prompt as rendered.
    Kept,
    /// Left out.
    Dropped {
        /// Why.
        reason: DropReason,
    },
}

/// The decision about one input chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ChunkDecision {
    /// The chunk's id.
    pub id: String,
    /// The chunk's kind.
    pub kind: ChunkKind,
    /// Tokens of the rendered chunk (0 when filtered out before rendering).
    pub tokens: usize,
    /// Whether the chunk was protected from dropping.
    pub protected: bool,
    /// What happened.
    #[serde(flatten)]
    pub decision: Decision,
}
