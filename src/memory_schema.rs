//! JSON -> [`MemoryState`] conversion with errors that name chunk and field.
//!
//! Done by hand rather than with `#[derive(Deserialize)]` because serde's
//! messages cannot say *which* chunk failed, and a caller with 10,000 chunks
//! needs the index and id to fix their input.

use serde_json::Value;

use crate::error::{ChunkLocation, ErrorKind, Result, json_type_name};
use crate::json_text::JsonText;
use crate::memory::{ChunkKind, JsonObject, MemoryChunk, MemoryState, Retention, Role};

const SESSION_FIELDS: &[&str] = &["id", "system_prompt", "fragments", "chunks"];

const CHUNK_FIELDS: &[&str] = &[
    "id",
    "kind",
    "role",
    "action",
    "text",
    "data",
    "tool",
    "call_id",
    "success",
    "agent_type",
    "subagent_id",
    "source",
    "status",
    "reason",
    "error",
    "priority",
    "pinned",
    "retention",
    "created_at",
    "custom",
];

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
    let state = MemoryState {
        id,
        system_prompt,
        fragments,
        chunks,
    };
    state.validate()?;
    Ok(state)
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

    let id = fields.required_string("id")?;
    if id.is_empty() {
        return Err(fields.error("id", "must be a non-empty string".into()));
    }
    let kind_name = fields.required_string("kind")?;
    let kind = ChunkKind::from_name(&kind_name).ok_or_else(|| {
        let names: Vec<_> = ChunkKind::ALL.iter().map(|k| k.as_str()).collect();
        fields.error(
            "kind",
            format!(
                "unknown kind {kind_name:?}; expected one of: {}",
                names.join(", ")
            ),
        )
    })?;
    let mut chunk = MemoryChunk::new(id, kind);
    chunk.role = match fields.optional_string("role")?.as_deref() {
        None => None,
        Some("user") => Some(Role::User),
        Some("assistant") => Some(Role::Assistant),
        // Parsed so that validation can say what to use instead.
        Some("system") => Some(Role::System),
        Some(other) => {
            return Err(fields.error(
                "role",
                format!("unknown role {other:?}; expected \"user\" or \"assistant\""),
            ));
        }
    };
    chunk.action = fields.optional_str("action")?;
    chunk.text = fields.optional_string("text")?;
    chunk.data = fields.optional_json("data");
    chunk.tool = fields.optional_str("tool")?;
    chunk.call_id = fields.optional_str("call_id")?;
    chunk.success = match fields.take("success") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(b),
        Some(other) => return Err(fields.wrong_type("success", "a boolean", &other)),
    };
    chunk.agent_type = fields.optional_str("agent_type")?;
    chunk.subagent_id = fields.optional_str("subagent_id")?;
    chunk.source = fields.optional_str("source")?;
    chunk.status = fields.optional_str("status")?;
    chunk.reason = fields.optional_str("reason")?;
    chunk.error = fields.optional_str("error")?;
    chunk.priority = match fields.take("priority") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
        Some(other) => return Err(fields.wrong_type("priority", "an integer", &other)),
    };
    chunk.pinned = match fields.take("pinned") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(fields.wrong_type("pinned", "a boolean", &other)),
    };
    chunk.retention = match fields.optional_string("retention")?.as_deref() {
        None => None,
        Some("critical") => Some(Retention::Critical),
        Some("compressible") => Some(Retention::Compressible),
        Some("disposable") => Some(Retention::Disposable),
        Some(other) => {
            return Err(fields.error(
                "retention",
                format!("unknown retention {other:?}; expected \"critical\", \"compressible\" or \"disposable\""),
            ));
        }
    };
    chunk.created_at = match fields.take("created_at") {
        None | Some(Value::Null) => None,
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(JsonText::from(v)),
        Some(other) => return Err(fields.wrong_type("created_at", "a string or a number", &other)),
    };
    chunk.custom = fields.optional_json("custom");
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
    use crate::{ErrorKind, MemoryState};

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
}
