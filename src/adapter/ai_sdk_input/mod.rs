//! The AI SDK's messages read as a session: a runtime that keeps its
//! history as `UIMessage`s or `ModelMessage`s builds from it directly.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::error::{ErrorKind, Result};
use crate::model::memory::MemoryState;

mod model_message;
mod ui_message;

/// A session read from the AI SDK's messages, and what it could not hold.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AiSdkHistory {
    /// The session: the system messages as its system prompt, every other
    /// part a chunk.
    pub state: MemoryState,
    /// One warning naming the parts left out, when some were (images,
    /// files, sources, data parts, approvals, a call still streaming).
    pub warnings: Vec<String>,
}

/// Reads the AI SDK's messages as a session.
///
/// `value` is an array of messages, or `{"system", "messages"}` (what
/// `--output ai-sdk` prints). Each message is judged by its shape: one
/// with `parts` is a `UIMessage`, one with `content` a `ModelMessage`.
///
/// - `system` messages, and `system`, make the system prompt (joined by
///   blank lines).
/// - A `text` part is an `agent` chunk of the message's role (blank text
///   is dropped: providers refuse it). A `reasoning` part is a `thinking`
///   chunk, signed when `providerOptions` (`providerMetadata` in a
///   `UIMessage`) hold `anthropic.signature`.
/// - A `tool-call` part is a `workflow` chunk (`tool`, `call_id`, its
///   `input` as `data`); a `tool-result` part an `environment` chunk with
///   the same `call_id`: a `text` or `error-text` output as `text`, `json`
///   or `error-json` as `data`, an error with `success: false`.
/// - A `UIMessage`'s tool part (`tool-NAME`, `dynamic-tool`) is its call
///   and, once it has an output or an error, its result; the results of a
///   step (up to the next `step-start`) follow its calls, as the SDK's
///   `convertToModelMessages` orders them.
///
/// Chunk ids follow the message's place: `m3.1` is part 1 of message 3
/// (a `UIMessage` with an `id` uses it: `msg_ab.1`), `….result` its
/// result, so a history that only grows keeps its ids turn after turn.
///
/// # Errors
///
/// [`ErrorKind::Session`] naming the message and part (`messages[3]
/// .content[1].toolCallId`) that is not what the SDK's types say; then
/// as [`MemoryState::from_json_value`].
pub fn from_ai_sdk(value: &Value) -> Result<AiSdkHistory> {
    from_ai_sdk_at(value, 0)
}

/// [`from_ai_sdk`] of the messages of a history from its message `first`
/// on: their chunk ids are those a read of the whole history gives them
/// (`m{first}.0` for the first), so a runtime appends each turn's new
/// messages to a session or a stored chat and its ids never meet.
///
/// # Errors
///
/// As [`from_ai_sdk`]; an error names the message by its place in `value`.
pub fn from_ai_sdk_at(value: &Value, first: usize) -> Result<AiSdkHistory> {
    let (system, messages) = split_input(value)?;
    let mut history = History {
        first,
        ..History::default()
    };
    history.system.extend(system);
    for (index, message) in messages.iter().enumerate() {
        history.message(index, message)?;
    }
    history.into_session()
}

/// The optional `system` and the messages of the input.
fn split_input(value: &Value) -> Result<(Option<String>, &[Value])> {
    match value {
        Value::Array(messages) => Ok((None, messages)),
        Value::Object(object) => {
            let messages = object
                .get("messages")
                .and_then(Value::as_array)
                .ok_or_else(|| invalid("messages", "expected an array of messages"))?;
            let system = match object.get("system") {
                None | Some(Value::Null) => None,
                Some(Value::String(text)) => Some(text.clone()),
                Some(_) => return Err(invalid("system", "expected a string")),
            };
            Ok((system, messages))
        }
        _ => Err(invalid(
            "messages",
            "expected an array of AI SDK messages, or {\"system\", \"messages\"}",
        )),
    }
}

/// The session being read.
#[derive(Default)]
struct History {
    system: Vec<String>,
    chunks: Vec<Value>,
    /// Part types left out, with how many of each.
    left_out: BTreeMap<String, usize>,
    /// The place in the whole history of the first message read.
    first: usize,
}

/// Where a part is: its chunk id and the path errors name.
struct Place {
    id: String,
    path: String,
}

impl History {
    fn message(&mut self, index: usize, message: &Value) -> Result<()> {
        let path = format!("messages[{index}]");
        let object = message
            .as_object()
            .ok_or_else(|| invalid(&path, "expected a message object"))?;
        let role = string_at(object, "role", &path)?;
        let number = index + self.first;
        if let Some(parts) = object.get("parts") {
            let parts = array_of(parts, &format!("{path}.parts"))?;
            let base = match object.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => format!("m{number}"),
            };
            return self.ui_message(role, &base, parts, &path);
        }
        match object.get("content") {
            Some(content) => self.model_message(role, number, content, &path),
            None => Err(invalid(
                &path,
                "a message needs `content` (a ModelMessage) or `parts` (a UIMessage)",
            )),
        }
    }

    fn text(&mut self, role: &str, text: &str, place: &Place) {
        if !text.trim().is_empty() {
            self.chunks
                .push(json!({"id": place.id, "kind": "agent", "role": role, "text": text}));
        }
    }

    /// A `reasoning` part, signed by the metadata under `metadata_key`.
    fn reasoning(
        &mut self,
        part: &Map<String, Value>,
        metadata_key: &str,
        place: &Place,
    ) -> Result<()> {
        let text = string_at(part, "text", &place.path)?;
        let signature = part
            .get(metadata_key)
            .and_then(|m| m.get("anthropic"))
            .and_then(|a| a.get("signature"))
            .and_then(Value::as_str);
        if text.trim().is_empty() && signature.is_none() {
            return Ok(());
        }
        let mut chunk = json!({"id": place.id, "kind": "thinking", "text": text});
        if let Some(signature) = signature {
            chunk["signature"] = Value::from(signature);
        }
        self.chunks.push(chunk);
        Ok(())
    }

    /// A call; a missing input is an empty object.
    fn call(&mut self, id: &str, call_id: &str, name: &str, input: Option<Value>) {
        let input = input.filter(|v| !v.is_null()).unwrap_or_else(|| json!({}));
        self.chunks.push(json!({
            "id": id, "kind": "workflow", "action": "tool_call", "tool": name,
            "call_id": call_id, "data": input,
        }));
    }

    fn leave_out(&mut self, kind: &str) {
        *self.left_out.entry(kind.to_owned()).or_default() += 1;
    }

    fn into_session(self) -> Result<AiSdkHistory> {
        let mut session = Map::new();
        if !self.system.is_empty() {
            session.insert(
                "system_prompt".into(),
                Value::String(self.system.join("\n\n")),
            );
        }
        session.insert("chunks".into(), Value::Array(self.chunks));
        let warnings = left_out_warning(&self.left_out).into_iter().collect();
        Ok(AiSdkHistory {
            state: MemoryState::from_json_value(Value::Object(session))?,
            warnings,
        })
    }
}

/// The body of a result chunk.
enum Body {
    Text(String),
    Data(Value),
}

fn result_chunk(id: &str, call_id: &str, name: &str, body: Body, failed: bool) -> Value {
    let mut chunk = json!({
        "id": id, "kind": "environment", "source": "tool", "tool": name, "call_id": call_id,
    });
    match body {
        Body::Text(text) => chunk["text"] = Value::String(text),
        Body::Data(data) => chunk["data"] = data,
    }
    if failed {
        chunk["success"] = Value::Bool(false);
    }
    chunk
}

/// What a denied execution says.
fn denied(reason: Option<&Value>) -> String {
    reason
        .and_then(Value::as_str)
        .unwrap_or("the tool's execution was denied")
        .to_owned()
}

/// The warning for the parts left out, or `None`.
fn left_out_warning(left_out: &BTreeMap<String, usize>) -> Option<String> {
    if left_out.is_empty() {
        return None;
    }
    let counts: Vec<String> = left_out
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    Some(format!(
        "parts of the AI SDK messages that no chunk holds were left out: {}",
        counts.join(", ")
    ))
}

/// An error of the input at `path`.
fn invalid(path: &str, message: &str) -> crate::Error {
    ErrorKind::Session {
        field: path.to_owned(),
        message: message.to_owned(),
    }
    .into()
}

/// `role` if it is one of `roles`.
fn check_role(role: &str, roles: &[&str], path: &str) -> Result<()> {
    if roles.contains(&role) {
        return Ok(());
    }
    let message = format!(
        "unknown role {role:?}; expected one of: {}",
        roles.join(", ")
    );
    Err(invalid(&format!("{path}.role"), &message))
}

fn object_at<'v>(value: &'v Value, path: &str) -> Result<&'v Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| invalid(path, "expected an object"))
}

fn array_of<'v>(value: &'v Value, path: &str) -> Result<&'v [Value]> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| invalid(path, "expected an array"))
}

fn string_at<'v>(object: &'v Map<String, Value>, key: &str, path: &str) -> Result<&'v str> {
    object
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(&format!("{path}.{key}"), "expected a string"))
}
