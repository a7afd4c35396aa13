//! OpenAI Chat Completions: `messages` with native `tool_calls` and `tool`
//! messages.

use serde_json::{Map, Value, json};

use super::native_request::{NativeRequest, Provider, prepare, reserve_into, text_of};
use super::openai_system_role;
use crate::error::Result;
use crate::model::roles::Role;
use crate::output::result::BuildResult;
use crate::render::Record;

/// A Chat Completions request body (`model`, `messages`, and
/// `max_completion_tokens` when the build reserved room for the reply)
/// from a [native](crate::render::Protocol::Native) build.
///
/// The system message goes first with role `developer` for reasoning
/// models (`o1`…, `gpt-5`…) and `system` otherwise. An assistant message
/// carries its text as `content` (`null` when it has none) and its calls
/// as `tool_calls`, whose `arguments` are the call's JSON object as a
/// string; every call is answered by one `tool` message right after it.
///
/// # Errors
///
/// As [`anthropic_request`](super::anthropic_request), but an OpenAI
/// history may start with the assistant and has no reserve to require.
pub fn openai_chat_request(result: &BuildResult) -> Result<NativeRequest> {
    let prepared = prepare(result, Provider::OpenAi)?;
    let mut messages = Vec::with_capacity(prepared.conversation.turns.len() + 1);
    if let Some(system) = &prepared.conversation.system {
        messages.push(json!({"role": openai_system_role(&result.model), "content": system}));
    }
    for turn in &prepared.conversation.turns {
        match turn.role {
            Role::Assistant => messages.push(assistant_message(&turn.items)),
            _ => user_messages(&turn.items, &mut messages),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::from(result.model.as_str()));
    body.insert("messages".into(), Value::Array(messages));
    reserve_into(&mut body, "max_completion_tokens", result.reserve_output);
    Ok(NativeRequest {
        body: Value::Object(body),
        ..prepared.request
    })
}

/// An assistant message: its text, then its calls.
fn assistant_message(items: &[Record]) -> Value {
    let text = joined_text(items);
    let calls: Vec<Value> = items
        .iter()
        .filter_map(|item| match item {
            Record::ToolCall {
                id,
                name,
                arguments,
            ..
            } => Some(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": Value::Object(arguments.clone()).to_string()},
            })),
            _ => None,
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

/// A user turn: one `tool` message per answered call, then the user's text.
fn user_messages(items: &[Record], messages: &mut Vec<Value>) {
    for item in items {
        if let Record::ToolResult { id, content, .. } = item {
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
        }
    }
    if let Some(text) = joined_text(items) {
        messages.push(json!({"role": "user", "content": text}));
    }
}

/// The text of `items`, joined by blank lines, or `None` when there is none.
pub(super) fn joined_text(items: &[Record]) -> Option<String> {
    let texts: Vec<&str> = items.iter().filter_map(text_of).collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}
