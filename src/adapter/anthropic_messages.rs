//! Anthropic Messages: content blocks `text`, `thinking`, `tool_use` and
//! `tool_result`, with `cache_control` on the stable prefix.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::cache::{breakpoints, min_cacheable_tokens};
use super::conversation::Conversation;
use super::native::{NativeOptions, NativeRequest, Provider, added_tokens, prepare, within_budget};
use crate::error::{ErrorKind, Result};
use crate::message::BuildResult;
use crate::render::Record;
use crate::roles::Role;

/// A Messages request body (`model`, `max_tokens` = the build's reserve,
/// `system` as text blocks, `messages` of content blocks) from a
/// [native](crate::render::Protocol::Native) build.
///
/// Roles alternate, starting with `user`; every `tool_use` is answered by
/// a `tool_result` first in the next user message; thinking with a
/// signature is a `thinking` block. Ids outside `[a-zA-Z0-9_-]` (which
/// the API refuses) are written as `h_` and the id's bytes in hex, and
/// so are ids that start with `h_`, so two ids never meet. With
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
/// prompt; [`ErrorKind::BudgetExceeded`] if sending an unpaired call as
/// text would overflow the budget.
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
    let token_count = within_budget(
        result,
        prepared.request.token_count + added_tokens(result, rewritten_ids(conversation))?,
    )?;
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
        token_count,
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
        Record::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        Record::ToolCall {
            id,
            name,
            arguments,
        } => json!({"type": "tool_use", "id": tool_id(id), "name": name, "input": arguments}),
        Record::ToolResult {
            id,
            content,
            is_error,
            ..
        } => {
            let mut block = json!({"type": "tool_result", "tool_use_id": tool_id(id)});
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

/// `id` as the API accepts it (`^[a-zA-Z0-9_-]+$`), one to one.
fn tool_id(id: &str) -> String {
    let valid = !id.is_empty()
        && !id.starts_with(HEX_PREFIX)
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        return id.to_owned();
    }
    let mut out = String::with_capacity(HEX_PREFIX.len() + 2 * id.len());
    out.push_str(HEX_PREFIX);
    for byte in id.bytes() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Each id the request writes in hex, once per block it is in, beside
/// what it was: the longer id costs tokens the build did not count.
fn rewritten_ids(conversation: &Conversation) -> std::vec::IntoIter<(String, String)> {
    let ids = conversation.turns.iter().flat_map(|turn| &turn.items);
    ids.filter_map(|item| match item {
        Record::ToolCall { id, .. } | Record::ToolResult { id, .. } => {
            let written = tool_id(id);
            (written != *id).then(|| (id.clone(), written))
        }
        _ => None,
    })
    .collect::<Vec<_>>()
    .into_iter()
}

/// What starts an id written in hex.
const HEX_PREFIX: &str = "h_";
