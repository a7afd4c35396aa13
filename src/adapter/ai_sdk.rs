//! The AI SDK's messages: `{system, messages}` of `ModelMessage`s, ready for
//! `generateText({system, messages})`.

use rustc_hash::FxHashMap;
use serde_json::{Map, Value, json};

use super::native_request::{NativeRequest, Provider, prepare};
use crate::error::Result;
use crate::model::roles::Role;
use crate::output::result::BuildResult;
use crate::render::Record;

/// `{"system": "…", "messages": [...]}` from a
/// [native](crate::render::Protocol::Native) build: the system message
/// apart (left out when there is none), the history as the AI SDK's
/// `ModelMessage`s.
///
/// - An assistant turn is one `assistant` message of `text`, `reasoning`
///   (a signed thinking chunk, its signature under
///   `providerOptions.anthropic.signature`, where the SDK's Anthropic
///   provider reads it) and `tool-call` parts (`toolCallId`, `toolName`,
///   `input`: the call's arguments object).
/// - A user turn is one `tool` message of `tool-result` parts, one per
///   call of the turn before, then a `user` message of `text` parts.
///   A result's `output` is `{"type": "json", "value"}` when its content
///   is an object or array written as a chunk's `data` is (pretty JSON,
///   two spaces), else `{"type": "text", "value"}`; a failed result
///   (`success: false`) is `error-json` or `error-text`.
///
/// Calls and results are paired as in every native request (a call
/// without its result is sent as text; see [`NativeRequest::unpaired`]);
/// the body is counted as the build counted its records, so
/// `token_count` is a bound, as for the providers' native requests.
///
/// # Errors
///
/// [`ErrorKind::Option`](crate::ErrorKind::Option) if `result` is not a
/// native build.
pub fn ai_sdk_request(result: &BuildResult) -> Result<NativeRequest> {
    let prepared = prepare(result, Provider::AiSdk)?;
    let conversation = prepared.conversation;
    // The records are read back for this request alone: their text moves
    // into the messages rather than being copied.
    let mut names = FxHashMap::default();
    let mut messages = Vec::with_capacity(conversation.turns.len() + 1);
    for turn in conversation.turns {
        match turn.role {
            Role::Assistant => messages.push(assistant_message(turn.items, &mut names)),
            _ => user_messages(turn.items, &names, &mut messages),
        }
    }
    let mut body = Map::new();
    if let Some(system) = conversation.system {
        body.insert("system".into(), Value::String(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    Ok(NativeRequest {
        body: Value::Object(body),
        ..prepared.request
    })
}

/// An assistant message; notes the name of each call, which its result
/// must repeat.
fn assistant_message(items: Vec<Record>, names: &mut FxHashMap<String, String>) -> Value {
    let content: Vec<Value> = items
        .into_iter()
        .map(|item| match item {
            Record::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                names.insert(id.clone(), name.clone());
                json!({"type": "tool-call", "toolCallId": id, "toolName": name, "input": arguments})
            }
            Record::Thinking {
                thinking,
                signature,
            } => json!({
                "type": "reasoning",
                "text": thinking,
                "providerOptions": {"anthropic": {"signature": signature}},
            }),
            other => text_part(other),
        })
        .collect();
    json!({"role": "assistant", "content": content})
}

/// A user turn: its results as one `tool` message, then its text as one
/// `user` message.
fn user_messages(items: Vec<Record>, names: &FxHashMap<String, String>, messages: &mut Vec<Value>) {
    let mut results = Vec::new();
    let mut texts = Vec::new();
    for item in items {
        match item {
            Record::ToolResult {
                id,
                content,
                is_error,
            } => {
                let name = names.get(&id).cloned().unwrap_or_default();
                results.push(json!({
                    "type": "tool-result",
                    "toolCallId": id,
                    "toolName": name,
                    "output": result_output(content, is_error),
                }));
            }
            other => texts.push(text_part(other)),
        }
    }
    if !results.is_empty() {
        messages.push(json!({"role": "tool", "content": results}));
    }
    if !texts.is_empty() {
        messages.push(json!({"role": "user", "content": texts}));
    }
}

/// A `text` part of any record sent as text: text, a compaction's tagged
/// summary, thinking in a user turn.
fn text_part(record: Record) -> Value {
    let text = match record {
        Record::Text { text } | Record::Compaction { text, .. } => text,
        Record::Thinking { thinking, .. } => thinking,
        other => {
            let mut text = String::new();
            other.write(&mut text);
            text
        }
    };
    json!({"type": "text", "text": text})
}

/// A result's `output`: JSON when `content` is an object or array exactly
/// as a chunk's `data` is written, else text.
fn result_output(content: String, is_error: bool) -> Value {
    let json = written_as_data(&content);
    let kind = match (&json, is_error) {
        (Some(_), false) => "json",
        (Some(_), true) => "error-json",
        (None, false) => "text",
        (None, true) => "error-text",
    };
    let value = json.unwrap_or(Value::String(content));
    json!({"type": kind, "value": value})
}

/// The object or array `content` is, when it is written as a chunk's
/// `data` is (pretty JSON). Only text that opens a bracket is parsed.
fn written_as_data(content: &str) -> Option<Value> {
    if !content.starts_with(['{', '[']) {
        return None;
    }
    serde_json::from_str::<Value>(content)
        .ok()
        .filter(|value| value.is_object() || value.is_array())
        .filter(|value| serde_json::to_string_pretty(value).is_ok_and(|p| p == content))
}
