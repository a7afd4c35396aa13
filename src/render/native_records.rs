//! The native protocol: tool calls, their results and signed thinking as
//! the provider's own structures rather than tagged text.
//!
//! In native mode every chunk of the history renders to one [`Record`]: a
//! line of compact JSON that a provider adapter later maps to a message,
//! a content block or an input item. A record holds only what the provider
//! is sent (the strings the model reads, JSON-escaped, with a few keys
//! around them), so the planner counts each chunk as it is sent, and the
//! counts of a build are an upper bound on the request (see
//! docs/native.md). Compact JSON never holds a raw line break, so the
//! blank line that joins the chunks of a message parts its records again.
//!
//! Chunks in the system role keep their tagged text: the system prompt is
//! text in every provider's request.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::protocol::Protocol;
use crate::model::memory::MemoryChunk;
use crate::model::roles::{ChunkKind, Role};
use crate::render::{ChunkRenderer, DefaultRenderer, RenderContext, body_text};
use crate::tokens::parts::SEPARATOR;

/// One chunk of the history in native mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Record {
    /// Text the model reads as the message's own words.
    Text { text: String },
    /// A tool call with its arguments object. Providers name the function
    /// again in the call's result (harmony's `functions.NAME` header), so
    /// the call's record holds the name twice: counted here, where the
    /// name is known, rather than in a result that may not say it.
    ToolCall {
        id: String,
        name: String,
        result_name: String,
        arguments: Map<String, Value>,
    },
    /// What a tool call returned.
    ToolResult {
        id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// Reasoning with the provider's signature.
    Thinking { thinking: String, signature: String },
    /// A compaction's summary with the providers' own items, each sent
    /// verbatim to its provider; `text` (the tagged summary) goes to a
    /// provider whose item it lacks.
    Compaction {
        id: String,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        anthropic: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        openai: Option<Value>,
    },
}

impl Record {
    /// Appends this record as one line of compact JSON.
    pub(crate) fn write(&self, out: &mut String) {
        // Serializing plain strings and maps into memory cannot fail.
        if let Ok(json) = serde_json::to_string(self) {
            out.push_str(&json);
        }
    }
}

/// The key a call's body goes under when it is not a JSON object.
const ARGUMENTS_TEXT_KEY: &str = "text";

/// The body a stub shows in place of `elided_tokens` tokens.
fn stub_note(elided_tokens: usize) -> String {
    format!("[{elided_tokens} tokens elided]")
}

/// The default table in native mode.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NativeRenderer;

impl ChunkRenderer for NativeRenderer {
    fn can_render(&self, _chunk: &MemoryChunk) -> bool {
        true
    }

    /// A compaction with Anthropic's block speaks as the assistant, where
    /// the Messages API takes the block back.
    fn role(&self, chunk: &MemoryChunk) -> Role {
        let anthropic = chunk.native().is_some_and(|n| n.anthropic.is_some());
        match chunk.kind {
            ChunkKind::Compaction if anthropic => Role::Assistant,
            _ => DefaultRenderer.role(chunk),
        }
    }

    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        if let Some(record) = compaction_record(chunk, ctx) {
            return record.write(out);
        }
        match native_record(chunk) {
            Some(record) => record.write(out),
            None => write_as_text(&DefaultRenderer, chunk, ctx, out),
        }
    }

    /// A native chunk's stub keeps its structure (the call, the result)
    /// with the body replaced by a note; other chunks stub as in text mode.
    fn render_stub(
        &self,
        chunk: &MemoryChunk,
        elided_tokens: usize,
        ctx: &RenderContext<'_>,
        out: &mut String,
    ) -> bool {
        if native_record(chunk).is_none() {
            return stub_as_text(&DefaultRenderer, chunk, elided_tokens, ctx, out);
        }
        let mut stub = chunk.clone();
        stub.data = None;
        stub.text = Some(stub_note(elided_tokens));
        // A signature vouches for the whole text: a stubbed one is plain text.
        stub.signature = None;
        self.render(&stub, ctx, out);
        true
    }

    fn tags(&self) -> Vec<String> {
        DefaultRenderer.tags()
    }
}

/// A custom renderer in native mode: what it writes is sent as text.
pub(crate) struct TextRecords(pub(crate) Arc<dyn ChunkRenderer>);

impl ChunkRenderer for TextRecords {
    fn can_render(&self, chunk: &MemoryChunk) -> bool {
        self.0.can_render(chunk)
    }

    fn role(&self, chunk: &MemoryChunk) -> Role {
        self.0.role(chunk)
    }

    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        write_as_text(self.0.as_ref(), chunk, ctx, out);
    }

    fn render_stub(
        &self,
        chunk: &MemoryChunk,
        elided_tokens: usize,
        ctx: &RenderContext<'_>,
        out: &mut String,
    ) -> bool {
        stub_as_text(self.0.as_ref(), chunk, elided_tokens, ctx, out)
    }

    fn tags(&self) -> Vec<String> {
        self.0.tags()
    }

    fn deterministic(&self) -> bool {
        self.0.deterministic()
    }
}

/// `renderer`'s text for `chunk`, placed by [`place_text`].
fn write_as_text(
    renderer: &dyn ChunkRenderer,
    chunk: &MemoryChunk,
    ctx: &RenderContext<'_>,
    out: &mut String,
) {
    let mut text = String::new();
    renderer.render(chunk, ctx, &mut text);
    place_text(renderer.role(chunk), text, out);
}

/// `renderer`'s stub of `chunk`, placed by [`place_text`].
fn stub_as_text(
    renderer: &dyn ChunkRenderer,
    chunk: &MemoryChunk,
    elided_tokens: usize,
    ctx: &RenderContext<'_>,
    out: &mut String,
) -> bool {
    let mut text = String::new();
    if !renderer.render_stub(chunk, elided_tokens, ctx, &mut text) {
        return false;
    }
    place_text(renderer.role(chunk), text, out);
    true
}

/// Tagged `text` of a chunk in `role`: as is in the system message (text
/// in every provider's request), a text record in the history.
fn place_text(role: Role, text: String, out: &mut String) {
    if role == Role::System {
        out.push_str(&text);
    } else {
        Record::Text { text }.write(out);
    }
}

/// The record of a compaction with a provider's own item: the items
/// verbatim, and the tagged summary for the providers without one. `None`
/// for any other chunk, and a compaction with no item (its tagged text).
fn compaction_record(chunk: &MemoryChunk, ctx: &RenderContext<'_>) -> Option<Record> {
    let native = chunk
        .native()
        .filter(|_| chunk.kind == ChunkKind::Compaction)?;
    let item = |json: &Option<crate::syntax::json_text::JsonText>| {
        json.as_ref().and_then(|j| j.to_value().ok())
    };
    let (anthropic, openai) = (item(&native.anthropic), item(&native.openai));
    if anthropic.is_none() && openai.is_none() {
        return None;
    }
    let mut text = String::new();
    DefaultRenderer.render(chunk, ctx, &mut text);
    Some(Record::Compaction {
        id: chunk.id.clone(),
        text,
        anthropic,
        openai,
    })
}

/// The record of a chunk the providers have a structure for, or `None`
/// for one sent as its tagged text. Agent chunks are the message's own
/// words (a blank one keeps its tag); a call or result needs a `call_id`
/// to be paired; thinking needs the signature the provider checks, which
/// a cut or stubbed body no longer matches.
fn native_record(chunk: &MemoryChunk) -> Option<Record> {
    let body = || body_text(chunk).map(String::from).unwrap_or_default();
    match chunk.kind {
        // Providers refuse blank text: a blank turn keeps its tag.
        ChunkKind::Agent => Some(body())
            .filter(|text| !text.trim().is_empty())
            .map(|text| Record::Text { text }),
        ChunkKind::Workflow => Some(Record::ToolCall {
            id: wire_id(chunk.call_id.as_deref()?)?,
            name: call_name(chunk),
            result_name: call_name(chunk),
            arguments: arguments(chunk),
        }),
        ChunkKind::Environment => Some(Record::ToolResult {
            id: wire_id(chunk.call_id.as_deref()?)?,
            content: result_content(chunk),
            is_error: chunk.success == Some(false),
        }),
        // The signature first: unsigned thinking is text, its body unread.
        ChunkKind::Thinking => Some(Record::Thinking {
            signature: chunk.signature.as_deref()?.to_owned(),
            thinking: body(),
        }),
        _ => None,
    }
}

/// `id` as every provider accepts it (Anthropic allows only
/// `[a-zA-Z0-9_-]+`), one to one: any other id, and any id starting with
/// [`HEX_PREFIX`], is written as that prefix and its bytes in hex, so two
/// ids never meet. Written into the record, so the build counts it.
/// `None` for an empty id, which pairs nothing.
fn wire_id(id: &str) -> Option<String> {
    if id.is_empty() {
        return None;
    }
    let valid = !id.starts_with(HEX_PREFIX)
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        return Some(id.to_owned());
    }
    let mut out = String::with_capacity(HEX_PREFIX.len() + 2 * id.len());
    out.push_str(HEX_PREFIX);
    for byte in id.bytes() {
        let _ = write!(out, "{byte:02x}");
    }
    Some(out)
}

/// What starts an id written in hex.
const HEX_PREFIX: &str = "h_";

/// What a result says: its body, its `error`, or both (the error after
/// a blank line, labelled, as text mode shows it in an attribute).
fn result_content(chunk: &MemoryChunk) -> String {
    match (body_text(chunk), chunk.error.as_deref()) {
        (Some(body), Some(error)) => format!("{body}{SEPARATOR}error: {error}"),
        (Some(body), None) => body.into_owned(),
        (None, Some(error)) => error.to_owned(),
        (None, None) => String::new(),
    }
}

/// The function a call names: its `tool`, else its action.
fn call_name(chunk: &MemoryChunk) -> String {
    chunk
        .tool
        .as_deref()
        .or(chunk.action.as_deref())
        .unwrap_or("tool_call")
        .to_owned()
}

/// A call's arguments: its body when that is a JSON object (`data`, or
/// `text` that parses as one), else the body as text under
/// [`ARGUMENTS_TEXT_KEY`] (a cut or stubbed body is text).
fn arguments(chunk: &MemoryChunk) -> Map<String, Value> {
    let parsed = match (&chunk.data, &chunk.text) {
        (Some(data), _) => data.to_value().ok(),
        (None, Some(text)) => serde_json::from_str::<Value>(text).ok(),
        (None, None) => Some(Value::Object(Map::new())),
    };
    match parsed {
        Some(Value::Object(map)) => map,
        _ => {
            let text = body_text(chunk).map(String::from).unwrap_or_default();
            Map::from_iter([(ARGUMENTS_TEXT_KEY.to_owned(), Value::String(text))])
        }
    }
}

/// A note the builder writes into the history itself (the elided-history
/// marker, a summary, the history start), as `protocol` sends it.
pub(crate) fn history_note(protocol: Protocol, text: String) -> String {
    match protocol {
        Protocol::Text => text,
        Protocol::Native => {
            let mut out = String::with_capacity(text.len() + 24);
            Record::Text { text }.write(&mut out);
            out
        }
    }
}
