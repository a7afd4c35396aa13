//! JSON -> [`MemoryState`] conversion with errors that name chunk and field.
//!
//! Done by hand rather than with `#[derive(Deserialize)]` because serde's
//! messages cannot say *which* chunk failed, and a caller with 10,000 chunks
//! needs the index and id to fix their input.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::content::{Block, blocks_from_value};
use crate::error::{ChunkLocation, ErrorKind, Result, json_type_name};
use crate::model::compaction::{CompactionFields, folded_from_value, native_from_value};
use crate::model::context_management::ContextManagement;
use crate::model::memory::{Covers, JsonObject, MemoryChunk, MemoryState};
use crate::model::roles::{ChunkKind, Retention, Role};
use crate::syntax::json_input::{self, Document, ParseOptions, value_from_deserializer};
use crate::syntax::json_text::JsonText;

const SESSION_FIELDS: &[&str] = &[
    "id",
    "system_prompt",
    "fragments",
    "chunks",
    "context_management",
];

const CHUNK_FIELDS: &[&str] = &[
    "id",
    "kind",
    "role",
    "action",
    "text",
    "data",
    "content",
    "tool",
    "call_id",
    "success",
    "agent_type",
    "subagent_id",
    "source",
    "status",
    "reason",
    "error",
    "signature",
    "covers",
    "native",
    "folded",
    "priority",
    "pinned",
    "retention",
    "created_at",
    "custom",
];

/// Reading a session from JSON lives beside the schema it checks.
impl MemoryState {
    /// Parses and validates a session from JSON text, strictly: see
    /// [`from_json_str_with`](MemoryState::from_json_str_with).
    ///
    /// # Errors
    ///
    /// As [`from_json_str_with`](MemoryState::from_json_str_with).
    pub fn from_json_str(json: &str) -> Result<MemoryState> {
        MemoryState::from_json_str_with(json, ParseOptions::default())
    }

    /// Parses and validates a session from JSON text.
    ///
    /// A leading byte-order mark is skipped; a key given twice in one object
    /// is an error (not the last value winning); arrays and objects may nest
    /// 256 levels deep. A lone UTF-16 surrogate escape is an error unless
    /// `options` asks for lossy Unicode:
    ///
    /// ```
    /// use agent_context::{MemoryState, ParseOptions};
    ///
    /// let cut = r#"{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "ok \ud83e"}]}"#;
    /// assert!(MemoryState::from_json_str(cut).is_err());
    /// let lossy = ParseOptions::new().lossy_unicode(true);
    /// let state = MemoryState::from_json_str_with(cut, lossy)?;
    /// assert_eq!(state.chunks[0].text.as_deref(), Some("ok \u{fffd}"));
    /// # Ok::<(), agent_context::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Json`] with line and column for malformed JSON;
    /// [`ErrorKind::JsonRejected`] with line, column, chunk and field for a
    /// duplicate key, nesting too deep or a lone surrogate;
    /// [`ErrorKind::Session`] or [`ErrorKind::Chunk`] (naming the chunk's
    /// index, id and field) for a schema violation.
    pub fn from_json_str_with(json: &str, options: ParseOptions) -> Result<MemoryState> {
        if json.trim_start_matches('\u{feff}').trim().is_empty() {
            return Err(ErrorKind::Json {
                line: 1,
                column: 1,
                message: "the input is empty; expected a session object".into(),
            }
            .into());
        }
        let value = json_input::read(json, options, Document::Session)?;
        MemoryState::from_json_value(value)
    }

    /// Validates a session from an already parsed JSON value.
    ///
    /// # Errors
    ///
    /// As [`MemoryState::from_json_str`], minus syntax errors.
    pub fn from_json_value(value: Value) -> Result<MemoryState> {
        session_from_value(value)
    }
}

/// Reads like [`MemoryState::from_json_str`] (a key given twice is an error),
/// with the deserializer's own errors and depth limit.
impl<'de> Deserialize<'de> for MemoryState {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = value_from_deserializer(deserializer)?;
        MemoryState::from_json_value(value).map_err(serde::de::Error::custom)
    }
}

/// Reads like a chunk of [`MemoryState::from_json_str`] (a key given twice is
/// an error).
impl<'de> Deserialize<'de> for MemoryChunk {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = value_from_deserializer(deserializer)?;
        chunk_from_value(0, value).map_err(serde::de::Error::custom)
    }
}

pub(crate) fn session_from_value(value: Value) -> Result<MemoryState> {
    session_from_value_with(value, Covers::Here)
}

/// A batch of chunks to append to a branch, read as a session: a
/// compaction may cover a chunk on the branch, which the append checks.
#[cfg_attr(not(feature = "command"), allow(dead_code))]
pub(crate) fn batch_from_value(value: Value) -> Result<MemoryState> {
    session_from_value_with(value, Covers::AlsoBefore)
}

fn session_from_value_with(value: Value, covers: Covers) -> Result<MemoryState> {
    let Value::Object(mut object) = value else {
        return Err(session_error(
            "(root)",
            format!("expected an object, found {}", json_type_name(&value)),
        ));
    };
    if let Some(field) = object
        .keys()
        .find(|k| !SESSION_FIELDS.contains(&k.as_str()))
    {
        return Err(session_error(
            field,
            format!(
                "unknown field; expected one of: {}",
                SESSION_FIELDS.join(", ")
            ),
        ));
    }
    let id = optional_session_string(&mut object, "id")?;
    let system_prompt = optional_session_string(&mut object, "system_prompt")?;
    let fragments = match object.remove("fragments") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => crate::fragment::fragments_from_json(value)?,
    };
    let chunks = match object.remove("chunks") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| chunk_from_value(index, item))
            .collect::<Result<Vec<_>>>()?,
        Some(other) => {
            return Err(session_error(
                "chunks",
                format!(
                    "expected an array of chunks, found {}",
                    json_type_name(&other)
                ),
            ));
        }
    };
    let context_management = match object.remove("context_management") {
        None | Some(Value::Null) => None,
        Some(value) => Some(context_management_from_value(value)?),
    };
    let state = MemoryState {
        id,
        system_prompt,
        fragments,
        chunks,
        context_management,
    };
    state.validate_with(covers)?;
    Ok(state)
}

/// The session's `context_management`, read as Anthropic writes it; an
/// error names the field inside it (`context_management.edits[0].keep`).
fn context_management_from_value(value: Value) -> Result<ContextManagement> {
    if !value.is_object() {
        // serde would read an array as the struct's fields in order.
        return Err(session_error(
            "context_management",
            format!(
                "expected an object, found {}; give Anthropic's object, e.g. {{\"edits\": []}}",
                json_type_name(&value)
            ),
        ));
    }
    if let Some((path, number)) = first_non_count(&value) {
        return Err(session_error(
            &format!("context_management.{path}"),
            format!(
                "expected a whole number from 0 to {}, found {number}",
                u64::MAX
            ),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|error| {
        let field = match error.path().to_string().as_str() {
            "." => "context_management".to_owned(),
            inner => format!("context_management.{inner}"),
        };
        let message = error.into_inner().to_string();
        match shape_hint(&message) {
            Some((inner, shape)) => {
                let said = without_type_name(&message);
                let field = match inner {
                    "" => field,
                    inner => format!("{field}.{inner}"),
                };
                session_error(&field, format!("{said}; {shape}"))
            }
            None => session_error(&field, message),
        }
    })
}

/// The first number in `value` (a `context_management` object, whose every
/// number is a count) that is not a `u64`, with its path (`edits[0].keep.value`).
///
/// serde reads Anthropic's tagged objects through a buffer in which a
/// number no native number holds (`18446744073709551616`, `1.50`) is a map,
/// and would say "expected u64, found map"; this says what was found.
fn first_non_count(value: &Value) -> Option<(String, &serde_json::Number)> {
    // A loop, not recursion: a `Value` built in Rust may nest without limit.
    let mut pending = vec![(String::new(), value)];
    while let Some((path, value)) = pending.pop() {
        match value {
            Value::Number(n) if n.as_u64().is_none() => return Some((path, n)),
            Value::Array(items) => pending.extend(
                items
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, item)| (format!("{path}[{i}]"), item)),
            ),
            Value::Object(map) => pending.extend(map.iter().rev().map(|(key, item)| {
                let path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                (path, item)
            })),
            _ => {}
        }
    }
    None
}

/// The field and JSON shape of the `context_management` value a serde
/// `message` is about, when it names one of our Rust types instead: the
/// writer of the session knows the JSON, not the types. serde cannot
/// follow a path into a tagged object, so the field is named here.
fn shape_hint(message: &str) -> Option<(&'static str, &'static str)> {
    const SHAPES: [(&str, &str, &str); 6] = [
        (
            "enum KeepThinking",
            "keep",
            r#"the `keep` of clear_thinking_20251015 is "all" or {"type": "thinking_turns", "value": N}"#,
        ),
        (
            "enum KeepToolUses",
            "keep",
            r#"the `keep` of clear_tool_uses_20250919 is {"type": "tool_uses", "value": N}"#,
        ),
        (
            "enum Trigger",
            "trigger",
            r#"`trigger` is {"type": "input_tokens", "value": N} or {"type": "tool_uses", "value": N}"#,
        ),
        (
            "enum InputTokens",
            "clear_at_least",
            r#"`clear_at_least` is {"type": "input_tokens", "value": N}"#,
        ),
        (
            "enum ClearToolInputs",
            "clear_tool_inputs",
            "`clear_tool_inputs` is true, false or a list of tool names",
        ),
        (
            "enum ContextEdit",
            "",
            r#"an edit is an object with a `type`: "clear_tool_uses_20250919" or "clear_thinking_20251015""#,
        ),
    ];
    SHAPES
        .iter()
        .find(|(name, ..)| message.ends_with(name))
        .map(|(_, field, shape)| (*field, *shape))
}

/// What serde said of a value, without the name of the Rust type it
/// expected (`invalid type: integer `3``, `invalid value`).
fn without_type_name(message: &str) -> &str {
    match message.rsplit_once(", expected ") {
        Some((said, _)) => said,
        None if message.starts_with("data did not match any variant") => "invalid value",
        None => message,
    }
}

pub(crate) fn chunk_from_value(index: usize, value: Value) -> Result<MemoryChunk> {
    let Value::Object(mut object) = value else {
        return Err(ErrorKind::Chunk {
            location: ChunkLocation { index, id: None },
            field: "(chunk)".into(),
            message: format!("expected an object, found {}", json_type_name(&value)),
        }
        .into());
    };
    let id = object.get("id").and_then(Value::as_str).map(str::to_owned);
    let mut fields = ChunkFields {
        object: &mut object,
        location: ChunkLocation { index, id },
    };
    fields.reject_unknown()?;
    let mut chunk = fields.id_and_kind()?;
    chunk.role = fields.role()?;
    fields.take_strings(&mut chunk)?;
    fields.take_flags(&mut chunk)?;
    Ok(chunk)
}

struct ChunkFields<'a> {
    object: &'a mut JsonObject,
    location: ChunkLocation,
}

impl ChunkFields<'_> {
    fn reject_unknown(&self) -> Result<()> {
        match self
            .object
            .keys()
            .find(|k| !CHUNK_FIELDS.contains(&k.as_str()))
        {
            Some(field) => Err(self.error(
                field,
                format!(
                    "unknown field; expected one of: {}",
                    CHUNK_FIELDS.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// The chunk its required `id` and `kind` make, every other field unset.
    fn id_and_kind(&mut self) -> Result<MemoryChunk> {
        let id = self.required_string("id")?;
        if id.is_empty() {
            return Err(self.error("id", "must be a non-empty string".into()));
        }
        let kind_name = self.required_string("kind")?;
        let kind = ChunkKind::from_name(&kind_name).ok_or_else(|| {
            let names: Vec<_> = ChunkKind::ALL.iter().map(|k| k.as_str()).collect();
            self.error(
                "kind",
                format!(
                    "unknown kind {kind_name:?}; expected one of: {}",
                    names.join(", ")
                ),
            )
        })?;
        Ok(MemoryChunk::new(id, kind))
    }

    fn role(&mut self) -> Result<Option<Role>> {
        match self.optional_string("role")?.as_deref() {
            None => Ok(None),
            Some("user") => Ok(Some(Role::User)),
            Some("assistant") => Ok(Some(Role::Assistant)),
            // Parsed so that validation can say what to use instead.
            Some("system") => Ok(Some(Role::System)),
            Some(other) => Err(self.error(
                "role",
                format!("unknown role {other:?}; expected \"user\" or \"assistant\""),
            )),
        }
    }

    /// The text fields after `role`, up to `success`, and the ones from
    /// `agent_type` to `error`, in the order they are checked.
    fn take_strings(&mut self, chunk: &mut MemoryChunk) -> Result<()> {
        chunk.action = self.optional_str("action")?;
        chunk.text = self.optional_string("text")?;
        chunk.data = self.optional_json("data");
        chunk.content = self.content()?;
        chunk.tool = self.optional_str("tool")?;
        chunk.call_id = self.optional_str("call_id")?;
        chunk.success = match self.take("success") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(b),
            Some(other) => return Err(self.wrong_type("success", "a boolean", &other)),
        };
        chunk.agent_type = self.optional_str("agent_type")?;
        chunk.subagent_id = self.optional_str("subagent_id")?;
        chunk.source = self.optional_str("source")?;
        chunk.status = self.optional_str("status")?;
        chunk.reason = self.optional_str("reason")?;
        chunk.error = self.optional_str("error")?;
        chunk.signature = self.optional_str("signature")?;
        let covers = self.optional_str("covers")?;
        let native = match self.take("native") {
            None | Some(Value::Null) => None,
            Some(value) => match native_from_value(value) {
                Ok(native) => Some(native),
                Err((field, message)) => return Err(self.error(&field, message)),
            },
        };
        let folded = match self.take("folded") {
            None | Some(Value::Null) => None,
            Some(value) => Some(folded_from_value(&value).map_err(|m| self.error("folded", m))?),
        };
        if covers.is_some() || native.is_some() || folded.is_some() {
            chunk.compaction = Some(Box::new(CompactionFields {
                covers,
                native,
                folded,
            }));
        }
        Ok(())
    }

    /// The fields that steer the budget, then `created_at` and `custom`.
    fn take_flags(&mut self, chunk: &mut MemoryChunk) -> Result<()> {
        chunk.priority = match self.take("priority") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
            Some(Value::Number(n)) => return Err(self.error("priority", priority_range(&n))),
            Some(other) => return Err(self.wrong_type("priority", "an integer", &other)),
        };
        chunk.pinned = match self.take("pinned") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(other) => return Err(self.wrong_type("pinned", "a boolean", &other)),
        };
        chunk.retention = self.retention()?;
        chunk.created_at = match self.take("created_at") {
            None | Some(Value::Null) => None,
            Some(v @ (Value::String(_) | Value::Number(_))) => Some(JsonText::from(v)),
            Some(other) => {
                return Err(self.wrong_type("created_at", "a string or a number", &other));
            }
        };
        chunk.custom = self.optional_json("custom");
        Ok(())
    }

    fn retention(&mut self) -> Result<Option<Retention>> {
        match self.optional_string("retention")?.as_deref() {
            None => Ok(None),
            Some("critical") => Ok(Some(Retention::Critical)),
            Some("compressible") => Ok(Some(Retention::Compressible)),
            Some("disposable") => Ok(Some(Retention::Disposable)),
            Some(other) => Err(self.error(
                "retention",
                format!(
                    "unknown retention {other:?}; expected \"critical\", \"compressible\" or \"disposable\""
                ),
            )),
        }
    }

    fn take(&mut self, field: &str) -> Option<Value> {
        self.object.remove(field)
    }

    fn required_string(&mut self, field: &str) -> Result<String> {
        self.optional_string(field)?
            .ok_or_else(|| self.error(field, "missing; every chunk needs it".into()))
    }

    fn optional_string(&mut self, field: &str) -> Result<Option<String>> {
        match self.take(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong_type(field, "a string", &other)),
        }
    }

    fn optional_str(&mut self, field: &str) -> Result<Option<Box<str>>> {
        Ok(self.optional_string(field)?.map(String::into_boxed_str))
    }

    /// Any JSON value but `null`, kept as text.
    /// The `content` blocks, an error naming the block and field inside.
    fn content(&mut self) -> Result<Option<Arc<[Block]>>> {
        let Some(value) = self.take("content").filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        match blocks_from_value(value) {
            Ok(blocks) => Ok(Some(blocks.into())),
            Err(error) => match error.kind() {
                ErrorKind::Content { path, message } => {
                    let field = format!("content{}", path.trim_start_matches('$'));
                    Err(self.error(&field, message.clone()))
                }
                _ => Err(error),
            },
        }
    }

    fn optional_json(&mut self, field: &str) -> Option<JsonText> {
        self.take(field)
            .filter(|v| !v.is_null())
            .map(JsonText::from)
    }

    fn wrong_type(&self, field: &str, expected: &str, found: &Value) -> crate::Error {
        self.error(
            field,
            format!("expected {expected}, found {}", json_type_name(found)),
        )
    }

    fn error(&self, field: &str, message: String) -> crate::Error {
        ErrorKind::Chunk {
            location: self.location.clone(),
            field: field.to_owned(),
            message,
        }
        .into()
    }
}

/// Why `n`, a number, is no priority: priorities are `i64`s.
fn priority_range(n: &serde_json::Number) -> String {
    // 2^63: the first whole number past i64::MAX, exact as an f64.
    const PAST_MAX: f64 = 9_223_372_036_854_775_808.0;
    let found = match n.as_f64() {
        _ if n.is_u64() => "a number above that range",
        Some(f) if f.fract() != 0.0 => "a number with a fraction",
        Some(f) if (-PAST_MAX..PAST_MAX).contains(&f) => {
            "a whole number written as a decimal or with an exponent; write its digits"
        }
        _ => "a number outside that range",
    };
    format!(
        "expected an integer from {} to {} (a 64-bit signed integer), found {found} ({n})",
        i64::MIN,
        i64::MAX
    )
}

fn optional_session_string(object: &mut JsonObject, field: &str) -> Result<Option<String>> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(session_error(
            field,
            format!("expected a string, found {}", json_type_name(&other)),
        )),
    }
}

fn session_error(field: &str, message: String) -> crate::Error {
    ErrorKind::Session {
        field: field.to_owned(),
        message,
    }
    .into()
}
