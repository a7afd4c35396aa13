//! Fitting the prompt into the budget: what is protected, what moves together,
//! how room is made, and one decision per chunk.
//!
//! * **Protected** content is never stubbed or dropped: the system prompt,
//!   fragments and system chunks, pinned and `critical` chunks, the latest
//!   user message, and the newest tool use (the tool calls of the newest
//!   model call that made any, with their results).
//!   Everything between the latest user message and the newest tool use is
//!   history like any older history. The newest tool use's results may be
//!   cut below their cap, head and tail, down to 64 tokens each,
//!   to fit; if the protected content does not fit even then, the build
//!   fails with [`ErrorKind::BudgetExceeded`](crate::ErrorKind::BudgetExceeded).
//! * **Units** are kept or dropped whole: a tool call with every result that
//!   shares its `call_id`. A result whose call is not in the session (or was
//!   filtered out) is an orphan and is never emitted.
//! * **Caps** (see [`Policy`]) bound what a chunk costs, whether or not the
//!   session fits: a chunk whose rendering (tag, attributes, body) costs more
//!   than its cap has its body cut, exact head+tail truncation with the tail
//!   kept larger, until the whole rendered chunk, tag and marker included,
//!   costs at most the cap.
//! * When the prompt is over budget, room is made cheapest loss first:
//!   1. `disposable` chunks of at least 64 tokens (thinking, and tool
//!      results older than the policy's `recent_turns` model calls) become stubs
//!      (`<tool_result id=… elided="N tokens"/>`), oldest first;
//!   2. whole unprotected units are dropped, lowest priority first, then oldest.
//!
//!   Before any of this, a policy's (or session's) `context_management`
//!   edits clear old thinking and old tool uses as Anthropic documents them
//!   (see [`ContextManagement`]); the ladder runs after them only when the
//!   edited prompt does not fit.
//!
//!   Trimming goes down to the policy's low-water mark (80% of the budget by
//!   default) so the next turns append without changing the prompt's start;
//!   given the previous build, the builder keeps its cut while it still fits
//!   and only ever extends it. One `<elided_history chunks="N" tokens="T"/>`
//!   marker (or a [`Summarizer`]'s `<progress_summary>`) stands where the
//!   first dropped chunk was.

mod caps;
mod decision;
mod edit_tally;
pub(crate) mod elision;
mod fate;
mod fold;
pub(crate) mod planner;
mod policy;
mod previous_cut;
mod rules;
mod timeline;
mod truncate;
mod units;

pub use crate::model::context_management::{AppliedEdit, ContextManagement};
pub use caps::{CapTarget, Caps};
pub use decision::{ChunkDecision, Decision, DropReason, StubReason};
pub(crate) use edit_tally::{Tally, ToolUse, tool_uses};
pub(crate) use elision::Elision;
pub(crate) use fate::{Fate, fates_after};
pub(crate) use fold::{Fold, is_compaction, kept_from, span_ends};
pub(crate) use planner::{
    Layout, Planner, Slot, all_start_clean, elided_marker, fewest_steps_within, framing_table,
    trim_target,
};
pub use policy::{CompactAt, Policy, PriorityTarget, Summarizer};
pub(crate) use previous_cut::{PreviousCut, fate_of};
pub(crate) use rules::{
    answered_call, call_id_of, class_of, is_tool_result, is_tool_use, never_dropped,
    protects_itself,
};
pub(crate) use timeline::{Ages, Timeline, is_read};
pub(crate) use truncate::{MIN_BODY_CAP, MIN_CAP, cut_body, marker_only, truncate_to_cap};
pub(crate) use units::{
    Calls, Item, NO_UNIT, Step, Unit, group_units, is_orphan_result, plan_steps, tool_call,
};

pub(crate) use crate::render::{ELIDED_TAG, HISTORY_START_TAG, SUMMARY_TAG};
