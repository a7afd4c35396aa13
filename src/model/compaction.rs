//! What a `compaction` chunk carries besides its summary: the providers'
//! own compaction items, kept verbatim, and the figures of what it folds.
//!
//! A compaction chunk (`"kind": "compaction"`) names the last chunk it
//! stands for in `covers` and holds a portable summary in `text`; `native`
//! may hold Anthropic's compaction block and OpenAI's compaction item as
//! the APIs returned them, each written back verbatim by that provider's
//! native output. Which chunks it folds is the plan's rule
//! (`budget::fold`), written once.

use serde::Serialize;
use serde_json::Value;

use crate::error::json_type_name;
use crate::model::memory::MemoryChunk;
use crate::model::roles::ChunkKind;
use crate::syntax::json_text::JsonText;

/// The fields only a `compaction` chunk takes, kept apart so that every
/// other chunk pays one pointer for them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CompactionFields {
    /// The last chunk the compaction stands for (its id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub covers: Option<Box<str>>,
    /// The providers' own compaction items, kept verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native: Option<NativeCompaction>,
    /// What the compaction folds, as its plan counted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folded: Option<SpanSize>,
}

/// The providers' own compaction items of a compaction chunk, each the
/// JSON object the provider returned, kept byte for byte.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct NativeCompaction {
    /// A Messages API `compaction` block (`{"type": "compaction",
    /// "content": …}`), sent back in an assistant message by
    /// `--output anthropic-native`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anthropic: Option<JsonText>,
    /// A Responses API `compaction` item (`{"type": "compaction",
    /// "encrypted_content": …}`), sent back by `--output openai-responses`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai: Option<JsonText>,
}

impl NativeCompaction {
    /// The items a chunk's `native` object holds, checked as a session's
    /// chunk is; an error names the field (`native.anthropic.type`) and
    /// says what is wrong.
    pub fn from_value(value: Value) -> Result<NativeCompaction, (String, String)> {
        native_from_value(value)
    }

    /// The readable summary inside the Anthropic block: its `content`,
    /// when that is a non-empty string. An encrypted block has none.
    pub fn readable_text(&self) -> Option<String> {
        let block = self.anthropic.as_ref()?.to_value().ok()?;
        match block.get("content") {
            Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
            _ => None,
        }
    }
}

/// A number of chunks and what they cost, each rendered alone under the
/// chat's settings: what a compaction folds, or what is left to fold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SpanSize {
    /// How many chunks.
    pub chunks: u64,
    /// Their tokens.
    pub tokens: u64,
}

/// The providers a native compaction item may come from.
const PROVIDERS: &[&str] = &["anthropic", "openai"];

/// A chunk's `native` object read from JSON; an error names the field
/// inside it (`native.anthropic.type`) and says what is wrong.
pub(crate) fn native_from_value(value: Value) -> Result<NativeCompaction, (String, String)> {
    let Value::Object(object) = value else {
        return Err((
            "native".into(),
            format!(
                "expected an object such as {{\"anthropic\": {{\"type\": \"compaction\", …}}}}, \
                 found {}",
                json_type_name(&value)
            ),
        ));
    };
    let mut native = NativeCompaction::default();
    for (provider, item) in object {
        let slot = match provider.as_str() {
            "anthropic" => &mut native.anthropic,
            "openai" => &mut native.openai,
            _ => {
                return Err((
                    format!("native.{provider}"),
                    format!(
                        "unknown provider; expected one of: {}",
                        PROVIDERS.join(", ")
                    ),
                ));
            }
        };
        check_item(&provider, &item)?;
        *slot = Some(JsonText::from(item));
    }
    Ok(native)
}

/// Checks that a native item is the provider's compaction object.
fn check_item(provider: &str, item: &Value) -> Result<(), (String, String)> {
    let field = format!("native.{provider}");
    let Value::Object(object) = item else {
        return Err((
            field,
            format!(
                "expected the provider's compaction object, found {}",
                json_type_name(item)
            ),
        ));
    };
    match object.get("type") {
        Some(Value::String(kind)) if kind == "compaction" => Ok(()),
        Some(other) => Err((
            format!("{field}.type"),
            format!("expected \"compaction\", found {other}: only compaction items fold history"),
        )),
        None => Err((
            format!("{field}.type"),
            "missing; a compaction item has \"type\": \"compaction\"".into(),
        )),
    }
}

/// A chunk's `folded` object read from JSON: two counts.
pub(crate) fn folded_from_value(value: &Value) -> Result<SpanSize, String> {
    let count = |name: &str| match value.get(name) {
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    };
    let fields_known = value
        .as_object()
        .is_some_and(|o| o.keys().all(|k| k == "chunks" || k == "tokens"));
    match (count("chunks"), count("tokens")) {
        (Some(chunks), Some(tokens)) if fields_known => Ok(SpanSize { chunks, tokens }),
        _ => Err(format!(
            "expected {{\"chunks\": N, \"tokens\": T}} with two non-negative integers, found {value}"
        )),
    }
}

/// Checks where a compaction's `covers` points, given the chunk it names
/// (`covered`: its index and the chunk, if one before the compaction has
/// that id) and the compaction before it (`previous`: that chunk and the
/// index of what it covers). Returns the covered chunk's index.
///
/// Spans nest: a compaction folds the one before it, so it covers a chunk
/// after what that one covered, and never names a compaction itself.
pub(crate) fn check_covers(
    covers: &str,
    covered: Option<(usize, &MemoryChunk)>,
    previous: Option<(&MemoryChunk, usize)>,
) -> Result<usize, String> {
    let Some((index, chunk)) = covered else {
        return Err(format!(
            "covers {covers:?}, which is not a chunk before this one: a compaction stands for \
             chunks earlier on its path"
        ));
    };
    if chunk.kind == ChunkKind::Compaction {
        return Err(format!(
            "covers {covers:?}, which is a compaction: cover the last chunk of history it \
             stands for (earlier compactions are folded with it)"
        ));
    }
    match previous {
        Some((before, before_covers)) if index <= before_covers => Err(format!(
            "covers {covers:?}, which compaction {:?} already folds (it covers {:?}): a new \
             compaction folds the one before it, so it covers a later chunk",
            before.id,
            before.covers().unwrap_or_default()
        )),
        _ => Ok(index),
    }
}
