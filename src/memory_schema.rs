//! JSON -> [`MemoryState`] conversion with errors that name chunk and field.
//!
//! Done by hand rather than with `#[derive(Deserialize)]` because serde's
//! messages cannot say *which* chunk failed, and a caller with 10,000 chunks
//! needs the index and id to fix their input.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::content::{Block, blocks_from_value};
use crate::context_management::ContextManagement;
use crate::error::{ChunkLocation, ErrorKind, Result, json_type_name};
use crate::json_input::{self, Document, ParseOptions, value_from_deserializer};
use crate::json_text::JsonText;
use crate::memory::{JsonObject, MemoryChunk, MemoryState};
use crate::roles::{ChunkKind, Retention, Role};

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
    /// [`MAX_JSON_DEPTH`](crate::MAX_JSON_DEPTH) levels deep. A lone UTF-16
    /// surrogate escape is an error unless `options` asks for lossy Unicode:
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
    state.validate()?;
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
            Some(shape) => session_error(&field, format!("{message}; {shape}")),
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

/// The JSON shape of the `context_management` value a serde `message` is
/// about, when it names one of our Rust types instead: the writer of the
/// session knows the JSON, not the types.
fn shape_hint(message: &str) -> Option<&'static str> {
    const SHAPES: [(&str, &str); 5] = [
        (
            "enum KeepThinking",
            r#"the `keep` of clear_thinking_20251015 is "all" or {"type": "thinking_turns", "value": N}"#,
        ),
        (
            "enum KeepToolUses",
            r#"the `keep` of clear_tool_uses_20250919 is {"type": "tool_uses", "value": N}"#,
        ),
        (
            "enum Trigger",
            r#"`trigger` is {"type": "input_tokens", "value": N} or {"type": "tool_uses", "value": N}"#,
        ),
        (
            "enum InputTokens",
            r#"`clear_at_least` is {"type": "input_tokens", "value": N}"#,
        ),
        (
            "enum ClearToolInputs",
            "`clear_tool_inputs` is true, false or a list of tool names",
        ),
    ];
    SHAPES
        .iter()
        .find(|(name, _)| message.ends_with(name))
        .map(|(_, shape)| *shape)
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

#[cfg(test)]
mod tests {
    use crate::{
        ContextBuilder, ErrorKind, JsonProblem, MAX_JSON_DEPTH, MemoryState, ParseOptions,
    };

    fn error(json: &str) -> String {
        MemoryState::from_json_str(json).unwrap_err().to_string()
    }

    #[test]
    fn empty_input_and_line_starts_are_reported_plainly() {
        assert!(error("  \n").contains("the input is empty"));
        let truncated = MemoryState::from_json_str("{\"chunks\": [\n").unwrap_err();
        match truncated.kind() {
            ErrorKind::Json { line, column, .. } => assert_eq!((*line, *column), (2, 1)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_system_role_points_to_the_system_kind() {
        let agent = r#"{"chunks": [{"id": "a", "kind": "agent", "role": "system", "text": "x"}]}"#;
        assert!(
            error(agent).contains("use kind \"system\""),
            "{}",
            error(agent)
        );
        let system = r#"{"chunks": [{"id": "s", "kind": "system", "role": "system"}]}"#;
        assert!(
            error(system).contains("only agent chunks take a role"),
            "{}",
            error(system)
        );
    }

    #[test]
    fn a_priority_past_i64_is_named_as_written() {
        for number in ["9223372036854775808", "-9223372036854775809", "1.5"] {
            let chunk = format!(
                r#"{{"chunks": [{{"id": "a", "kind": "thinking", "priority": {number}}}]}}"#
            );
            let error = error(&chunk);
            assert!(
                error.starts_with(
                    "invalid chunk chunks[0] (id \"a\"): field `priority`: expected an integer \
                     from -9223372036854775808 to 9223372036854775807"
                ),
                "{error}"
            );
            assert!(error.ends_with(&format!("({number})")), "{error}");
        }
    }

    #[test]
    fn a_key_given_twice_names_the_chunk_and_the_key() {
        let text_twice = r#"{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "a", "text": "b"}]}"#;
        assert_eq!(
            error(text_twice),
            "invalid JSON at line 1, column 77, in chunks[0] (id \"u1\"): key `text` is given \
             twice in one object; give each key once (readers differ on which value wins)"
        );
        // Without this check the second id would win and the first chunk
        // would surface later as a baffling "duplicate id".
        let id_twice = r#"{"chunks": [{"id": "a", "kind": "system", "id": "b"}]}"#;
        assert!(
            error(id_twice).contains("in chunks[0] (id \"a\"): key `id` is given twice"),
            "{}",
            error(id_twice)
        );
        let chunks_twice = r#"{"chunks": [], "chunks": [{"id": "a", "kind": "system"}]}"#;
        assert!(
            error(chunks_twice).contains("at the top level: key `chunks` is given twice"),
            "{}",
            error(chunks_twice)
        );
        // Through serde too, for a session inside the caller's own types.
        let serde = serde_json::from_str::<MemoryState>(chunks_twice).unwrap_err();
        assert!(
            serde.to_string().starts_with("key `chunks` is given twice"),
            "{serde}"
        );
        let chunk = serde_json::from_str::<crate::MemoryChunk>(r#"{"id": "a", "id": "b"}"#);
        assert!(chunk.is_err());
    }

    #[test]
    fn context_management_is_read_and_written_back() {
        let json = r#"{"chunks":[],"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}}"#;
        let state = MemoryState::from_json_str(json).unwrap();
        let edits = &state.context_management.as_ref().unwrap().edits;
        assert_eq!(edits.len(), 1);
        assert_eq!(serde_json::to_string(&state).unwrap(), json);
        let null = MemoryState::from_json_str(r#"{"context_management": null}"#).unwrap();
        assert_eq!(null.context_management, None);
    }

    #[test]
    fn a_bad_context_management_names_the_field_inside_it() {
        assert_eq!(
            error(r#"{"context_management": {"edits": [{"type": "clear_all"}]}}"#),
            "invalid session: field `context_management.edits[0].type`: unknown variant \
             `clear_all`, expected `clear_tool_uses_20250919` or `clear_thinking_20251015`"
        );
        assert_eq!(
            error(
                r#"{"context_management": {"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": -1}}]}}"#
            ),
            "invalid session: field `context_management.edits[0].keep.value`: expected a whole \
             number from 0 to 18446744073709551615, found -1"
        );
        // Numbers no native number holds are named as written, not as serde's buffer sees them.
        for number in ["18446744073709551616", "1.50", "1e400"] {
            let trigger = format!(r#"{{"type": "input_tokens", "value": {number}}}"#);
            let text = format!(
                r#"{{"context_management": {{"edits": [{{"type": "clear_tool_uses_20250919", "trigger": {trigger}}}]}}}}"#
            );
            let written = number.replace("e4", "e+4");
            assert_eq!(
                error(&text),
                format!(
                    "invalid session: field `context_management.edits[0].trigger.value`: expected \
                     a whole number from 0 to 18446744073709551615, found {written}"
                )
            );
        }
        assert_eq!(
            error(r#"{"context_management": {"edit": []}}"#),
            "invalid session: field `context_management.edit`: unknown field `edit`, expected \
             `edits`"
        );
        // Where serde names a Rust type, the JSON shape is given.
        for (edit, shape) in [
            (
                r#"{"type": "clear_thinking_20251015", "keep": "most"}"#,
                r#"the `keep` of clear_thinking_20251015 is "all" or {"type": "thinking_turns", "value": N}"#,
            ),
            (
                r#"{"type": "clear_tool_uses_20250919", "keep": 3}"#,
                r#"the `keep` of clear_tool_uses_20250919 is {"type": "tool_uses", "value": N}"#,
            ),
            (
                r#"{"type": "clear_tool_uses_20250919", "trigger": 100000}"#,
                r#"`trigger` is {"type": "input_tokens", "value": N} or {"type": "tool_uses", "value": N}"#,
            ),
            (
                r#"{"type": "clear_tool_uses_20250919", "clear_at_least": 5000}"#,
                r#"`clear_at_least` is {"type": "input_tokens", "value": N}"#,
            ),
            (
                r#"{"type": "clear_tool_uses_20250919", "clear_tool_inputs": "bash"}"#,
                "`clear_tool_inputs` is true, false or a list of tool names",
            ),
        ] {
            let message = error(&format!(
                r#"{{"context_management": {{"edits": [{edit}]}}}}"#
            ));
            assert!(
                message.starts_with("invalid session: field `context_management.edits[0]`: ")
                    && message.ends_with(&format!("; {shape}")),
                "{message}"
            );
        }
        // serde alone would read an array as the object's fields in order.
        assert_eq!(
            error(r#"{"context_management": [[]]}"#),
            "invalid session: field `context_management`: expected an object, found an array; \
             give Anthropic's object, e.g. {\"edits\": []}"
        );
    }

    #[test]
    fn a_root_that_is_not_an_object_is_named() {
        assert_eq!(
            error(" [] "),
            "invalid session: field `(root)`: expected an object, found an array"
        );
    }

    #[test]
    fn a_byte_order_mark_is_not_an_error() {
        let state = MemoryState::from_json_str("\u{feff}{\"chunks\": []}").unwrap();
        assert!(state.chunks.is_empty());
        assert!(error("\u{feff}\n").contains("the input is empty"));
    }

    #[test]
    fn a_lone_surrogate_names_the_chunk_and_field_or_reads_as_replacement() {
        let cut =
            r#"{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "ok \ud83e"}]}"#;
        assert_eq!(
            error(cut),
            "invalid JSON at line 1, column 71, in chunks[0] (id \"u1\"), field `text`: lone \
             UTF-16 surrogate escape `\\ud83e` (half of a character, as left by a string cut \
             inside an emoji); fix the writer, or read the input with lossy Unicode to replace it \
             with U+FFFD"
        );
        let lossy = ParseOptions::new().lossy_unicode(true);
        let state = MemoryState::from_json_str_with(cut, lossy).unwrap();
        assert_eq!(state.chunks[0].text.as_deref(), Some("ok \u{fffd}"));
    }

    /// A session whose one chunk's `data` brings the nesting to `depth`.
    fn nested_session(depth: usize) -> String {
        let inner = depth - 3; // the session, `chunks` and the chunk
        let data = format!("{}{}", "[".repeat(inner), "]".repeat(inner));
        format!(r#"{{"chunks": [{{"id": "d", "kind": "system", "data": {data}}}]}}"#)
    }

    #[test]
    fn nesting_is_read_and_built_to_the_limit_and_named_one_past_it() {
        // An explicit stack, the CLI main thread's 8 MiB / 8: reading and
        // building at the limit measured under 640 KiB at opt-level 0 and
        // under 192 KiB at the test profile's opt-level 1, so this fails if
        // either grows towards the stack's end.
        let at_limit = nested_session(MAX_JSON_DEPTH);
        let built = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(move || {
                let state = MemoryState::from_json_str(&at_limit).map_err(|e| e.to_string())?;
                let result = ContextBuilder::new().max_tokens(100_000).build(&state);
                result.map(|r| r.messages.len()).map_err(|e| e.to_string())
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(built, Ok(1));

        let past = MemoryState::from_json_str(&nested_session(MAX_JSON_DEPTH + 1)).unwrap_err();
        match past.kind() {
            ErrorKind::JsonRejected {
                column,
                place,
                problem,
                ..
            } => {
                assert_eq!(
                    *problem,
                    JsonProblem::TooDeep {
                        limit: MAX_JSON_DEPTH
                    }
                );
                // The bracket that opens level 257.
                assert_eq!(*column, 50 + MAX_JSON_DEPTH - 2);
                assert_eq!(
                    place.to_string(),
                    "in chunks[0] (id \"d\"), field `data[0][0][0][0][0][0][0]…`"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    /// A session with one fragment nested `levels` deep, the innermost
    /// holding an object.
    fn nested_fragment(levels: usize) -> String {
        let mut fragment = r#"{"name": "leaf", "data": {"k": 1}}"#.to_owned();
        for _ in 1..levels {
            fragment = format!(r#"{{"name": "f", "data": [{fragment}]}}"#);
        }
        format!(r#"{{"fragments": [{fragment}], "chunks": []}}"#)
    }

    #[test]
    fn the_fragment_depth_limit_is_reached_before_the_json_one() {
        // 64 fragment levels are more JSON levels (130) than serde_json's
        // own limit of 128.
        let deepest = MemoryState::from_json_str(&nested_fragment(crate::format::MAX_DEPTH));
        assert!(deepest.is_ok(), "{deepest:?}");
        let past = MemoryState::from_json_str(&nested_fragment(crate::format::MAX_DEPTH + 1));
        match past.map_err(crate::Error::into_kind) {
            Err(ErrorKind::Fragment { path, message }) => {
                assert!(path.starts_with("fragments[0].data[0].data[0]"), "{path}");
                assert_eq!(message, "nested deeper than 64 levels; flatten the data");
            }
            other => panic!("{other:?}"),
        }
    }
}
