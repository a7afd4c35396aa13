//! The default rendering of every chunk kind: the tag table of docs/rendering.md.

use std::borrow::Cow;

use smallvec::SmallVec;

use crate::model::memory::MemoryChunk;

use crate::model::roles::{ChunkKind, Role};
use crate::render::{ChunkRenderer, RenderContext};

const ID: &[&str] = &["id"];
const CALL: &[&str] = &["id", "tool", "call_id", "status"];
const SPAWN: &[&str] = &["id", "agent_type", "subagent_id"];
const MESSAGE: &[&str] = &["id", "subagent_id"];
const SUBAGENT_RESULT: &[&str] = &["id", "subagent_id", "success"];
const SUBAGENT_ERROR: &[&str] = &["id", "subagent_id", "error"];
const TOOL_RESULT: &[&str] = &["id", "tool", "call_id", "success", "error"];
const REASON: &[&str] = &["id", "reason"];
const COMPACTION: &[&str] = &["id", "covers", "chunks", "tokens"];

/// The tag, attribute names (in order) and role of a chunk under the default table.
fn table_row(chunk: &MemoryChunk) -> (&'static str, &'static [&'static str], Role) {
    let action = chunk.action.as_deref();
    match chunk.kind {
        ChunkKind::System => ("system_context", ID, Role::System),
        ChunkKind::Agent => match chunk.role {
            Some(Role::User) => ("user_message", ID, Role::User),
            _ => ("assistant_response", ID, Role::Assistant),
        },
        ChunkKind::Workflow => match action {
            Some("skill_call") => ("skill_call", CALL, Role::Assistant),
            _ => ("tool_call", CALL, Role::Assistant),
        },
        ChunkKind::Delegation => match action {
            Some("message_subagent") => ("message_to_subagent", MESSAGE, Role::Assistant),
            Some("subagent_result") => ("subagent_result", SUBAGENT_RESULT, Role::User),
            Some("subagent_error") => ("subagent_error", SUBAGENT_ERROR, Role::User),
            _ => ("spawn_subagent", SPAWN, Role::Assistant),
        },
        ChunkKind::Environment => ("tool_result", TOOL_RESULT, Role::User),
        ChunkKind::Thinking => ("thinking", ID, Role::Assistant),
        ChunkKind::Output => match action {
            Some("task_abandoned") => ("task_abandoned", REASON, Role::Assistant),
            Some("task_terminated") => ("task_terminated", REASON, Role::Assistant),
            _ => ("task_completed", ID, Role::Assistant),
        },
        ChunkKind::Compaction => (COMPACTION_TAG, COMPACTION, Role::User),
    }
}

/// The value of a well-known attribute of `chunk`.
fn attribute_value<'c>(chunk: &'c MemoryChunk, name: &str) -> Option<&'c str> {
    match name {
        "id" => Some(chunk.id.as_str()),
        "tool" => chunk.tool.as_deref(),
        "call_id" => chunk.call_id.as_deref(),
        "status" => chunk.status.as_deref(),
        "agent_type" => chunk.agent_type.as_deref(),
        "subagent_id" => chunk.subagent_id.as_deref(),
        "success" => chunk.success.map(|s| if s { "true" } else { "false" }),
        "error" => chunk.error.as_deref(),
        "reason" => chunk.reason.as_deref(),
        "covers" => chunk.covers(),
        _ => None,
    }
}

/// The attributes the default table writes for `chunk`, in order (absent ones omitted later).
pub(crate) fn default_attributes(
    chunk: &MemoryChunk,
) -> SmallVec<[(&'static str, Option<&str>); 5]> {
    table_row(chunk)
        .1
        .iter()
        .map(|name| (*name, attribute_value(chunk, name)))
        .collect()
}

/// The tag the default table gives `chunk`.
pub fn default_tag(chunk: &MemoryChunk) -> &'static str {
    table_row(chunk).0
}

/// Tag of a compaction's summary, where the history it folds was.
pub(crate) const COMPACTION_TAG: &str = "compaction_summary";
/// Tag of the marker that stands for dropped history.
pub(crate) const ELIDED_TAG: &str = "elided_history";
/// Tag of the user message put first when history would start with the assistant.
pub(crate) const HISTORY_START_TAG: &str = "history_start";
/// Tag of the summary that replaces dropped history when a summarizer is set.
pub(crate) const SUMMARY_TAG: &str = "progress_summary";

/// Every tag of the default table, plus the ones the builder itself emits.
const DEFAULT_TAGS: &[&str] = &[
    "system_context",
    "user_message",
    "assistant_response",
    "tool_call",
    "skill_call",
    "spawn_subagent",
    "message_to_subagent",
    "subagent_result",
    "subagent_error",
    "tool_result",
    "thinking",
    "task_completed",
    "task_abandoned",
    "task_terminated",
    COMPACTION_TAG,
    ELIDED_TAG,
    HISTORY_START_TAG,
    SUMMARY_TAG,
];

/// A chunk's body as the default renderers write it (before escaping).
pub(crate) fn body_text(chunk: &MemoryChunk) -> Option<Cow<'_, str>> {
    match (&chunk.text, &chunk.data) {
        (Some(text), _) => Some(Cow::Borrowed(text)),
        (None, Some(data)) => Some(Cow::Owned(data.to_pretty())),
        (None, None) => chunk.native()?.readable_text().map(Cow::Owned),
    }
}

/// The attributes of a compaction's summary: what it covers and, when
/// its plan counted them, how many chunks and tokens it folds.
fn compaction_attributes(chunk: &MemoryChunk) -> [(&'static str, Option<String>); 4] {
    let folded = chunk.folded();
    [
        ("id", Some(chunk.id.clone())),
        ("covers", chunk.covers().map(str::to_owned)),
        ("chunks", folded.map(|f| f.chunks.to_string())),
        ("tokens", folded.map(|f| f.tokens.to_string())),
    ]
}

/// Renders every chunk by the default table. Unknown actions fall back to the
/// kind's default row (`tool_call`, `spawn_subagent`, `task_completed`), so a
/// custom renderer can claim new actions while others still render.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultRenderer;

impl ChunkRenderer for DefaultRenderer {
    fn can_render(&self, _chunk: &MemoryChunk) -> bool {
        true
    }

    fn role(&self, chunk: &MemoryChunk) -> Role {
        table_row(chunk).2
    }

    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        let tag = default_tag(chunk);
        let body = body_text(chunk);
        if chunk.kind == ChunkKind::Compaction {
            let owned = compaction_attributes(chunk);
            let attributes: SmallVec<[(&str, Option<&str>); 4]> =
                owned.iter().map(|(n, v)| (*n, v.as_deref())).collect();
            ctx.write_element(out, tag, &attributes, body.as_deref());
            return;
        }
        let attributes = default_attributes(chunk);
        ctx.write_element(out, tag, &attributes, body.as_deref());
    }

    fn render_stub(
        &self,
        chunk: &MemoryChunk,
        elided_tokens: usize,
        ctx: &RenderContext<'_>,
        out: &mut String,
    ) -> bool {
        ctx.write_open_tag(out, default_tag(chunk), &default_attributes(chunk));
        out.push_str(" elided=\"");
        out.push_str(&elided_tokens.to_string());
        out.push_str(" tokens\"/>");
        true
    }

    fn tags(&self) -> Vec<String> {
        DEFAULT_TAGS.iter().map(|t| (*t).to_owned()).collect()
    }
}
