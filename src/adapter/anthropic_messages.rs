//! Anthropic Messages: content blocks `text`, `thinking`, `tool_use` and
//! `tool_result`, with `cache_control` on the stable prefix.

use serde_json::{Map, Value, json};

use super::cache_breakpoints::{breakpoints, min_cacheable_tokens};
use super::native_request::{NativeOptions, NativeRequest, Provider, prepare};
use crate::error::{ErrorKind, Result};
use crate::model::roles::Role;
use crate::output::result::BuildResult;
use crate::render::Record;

/// A Messages request body (`model`, `max_tokens` = the build's reserve,
/// `system` as text blocks, `messages` of content blocks) from a
/// [native](crate::render::Protocol::Native) build.
///
/// Roles alternate, starting with `user`; every `tool_use` is answered by
/// a `tool_result` first in the next user message; thinking with a
/// signature is a `thinking` block. With
/// `options.cache_breakpoints`, blocks where the prompt is unchanged since
/// the previous build carry `cache_control` (see
/// [`NativeRequest::cache_breakpoints`]).
///
/// # Errors
///
/// [`ErrorKind::Option`] if `result` is not a native build, if the build
/// reserved no room for the reply (`max_tokens` must be positive), or if
/// the history starts with the assistant (build with
/// [`user_first`](crate::ContextBuilder::user_first));
/// [`ErrorKind::EmptyHistory`] if there is no message besides the system
/// prompt.
pub fn anthropic_request(result: &BuildResult, options: &NativeOptions) -> Result<NativeRequest> {
    let prepared = prepare(result, Provider::Anthropic)?;
    let conversation = &prepared.conversation;
    check_shape(result, conversation.turns.first().map(|t| t.role))?;
    let mut system = conversation
        .system
        .as_ref()
        .map(|text| vec![json!({"type": "text", "text": text})]);
    let mut messages: Vec<Value> = conversation
        .turns
        .iter()
        .map(|turn| {
            let role = if turn.role == Role::Assistant {
                "assistant"
            } else {
                "user"
            };
            let content: Vec<Value> = turn.items.iter().map(block).collect();
            json!({"role": role, "content": content})
        })
        .collect();
    trim_prefill(&mut messages);
    let marks = if options.cache_breakpoints {
        breakpoints(
            conversation,
            result.stable_prefix_tokens,
            min_cacheable_tokens(&result.model),
        )
    } else {
        Vec::new()
    };
    for mark in &marks {
        let block = match (mark.message, system.as_mut()) {
            (None, Some(system)) => system.get_mut(mark.block),
            (Some(message), _) => messages
                .get_mut(message)
                .and_then(|m| m["content"].get_mut(mark.block)),
            (None, None) => None,
        };
        if let Some(block) = block {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::from(result.model.as_str()));
    body.insert("max_tokens".into(), Value::from(result.reserve_output));
    if let Some(system) = system {
        body.insert("system".into(), Value::Array(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    Ok(NativeRequest {
        body: Value::Object(body),
        cache_breakpoints: marks,
        ..prepared.request
    })
}

/// Trims the end of a final assistant message's last text: Anthropic
/// continues that message (a prefill) and refuses one ending in whitespace.
fn trim_prefill(messages: &mut [Value]) {
    let Some(last) = messages.last_mut().filter(|m| m["role"] == "assistant") else {
        return;
    };
    let Some(block) = last["content"].as_array_mut().and_then(|c| c.last_mut()) else {
        return;
    };
    if block["type"] == "text" {
        let trimmed = block["text"].as_str().map(|t| t.trim_end().to_owned());
        if let Some(text) = trimmed {
            block["text"] = Value::String(text);
        }
    }
}

/// Refuses what the Messages API refuses: no reserve, no turn, an
/// assistant first.
fn check_shape(result: &BuildResult, first: Option<Role>) -> Result<()> {
    if result.reserve_output == 0 {
        return Err(ErrorKind::Option {
            option: "reserve_output".into(),
            message: "Anthropic requires max_tokens, which is the build's reserve: build with a \
                      reserve above 0 (--reserve N)"
                .into(),
        }
        .into());
    }
    match first {
        None => Err(ErrorKind::EmptyHistory {
            provider: "Anthropic".into(),
        }
        .into()),
        Some(Role::Assistant) => Err(ErrorKind::Option {
            option: "user_first".into(),
            message: "Anthropic requires the history to start with a user message; build with \
                      user_first(true)"
                .into(),
        }
        .into()),
        Some(_) => Ok(()),
    }
}

/// The content block of a record.
fn block(record: &Record) -> Value {
    match record {
        Record::Text { text } => json!({"type": "text", "text": text}),
        Record::Compaction {
            anthropic: Some(block),
            ..
        } => block.clone(),
        Record::Compaction { text, .. } => json!({"type": "text", "text": text}),
        Record::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        Record::ToolCall {
            id,
            name,
            arguments,
            ..
        } => json!({"type": "tool_use", "id": id, "name": name, "input": arguments}),
        Record::ToolResult {
            id,
            content,
            is_error,
            ..
        } => {
            let mut block = json!({"type": "tool_result", "tool_use_id": id});
            if !content.is_empty() {
                block["content"] = Value::from(content.as_str());
            }
            if *is_error {
                block["is_error"] = Value::Bool(true);
            }
            block
        }
    }
}
