//! Provider shapes of a [`BuildResult`]: OpenAI chat, Anthropic messages, plain text.

use serde_json::{Value, json};

use crate::error::{ErrorKind, Result};
use crate::memory::Role;
use crate::message::BuildResult;

/// `{"messages": [{"role", "content"}]}`, the system message first.
pub fn openai(result: &BuildResult) -> Value {
    let messages: Vec<Value> = result
        .messages
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
        .collect();
    json!({ "messages": messages })
}

/// `{"system": "…", "messages": [...]}`: the system message apart, the history
/// in strictly alternating roles starting with `user` (`system` is omitted
/// when there is none).
///
/// # Errors
///
/// [`ErrorKind::Option`] if the history starts with the assistant: build with
/// [`ContextBuilder::user_first`](crate::ContextBuilder::user_first) so the
/// fix is counted in the budget.
pub fn anthropic(result: &BuildResult) -> Result<Value> {
    let history = result.history();
    if history.first().is_some_and(|m| m.role != Role::User) {
        return Err(ErrorKind::Option {
            option: "user_first".into(),
            message: "Anthropic requires the history to start with a user message; build with \
                      user_first(true)"
                .into(),
        }
        .into());
    }
    // The builder merges neighbours of one role, so roles already alternate.
    let messages: Vec<Value> = history
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
        .collect();
    let mut out = serde_json::Map::new();
    if let Some(system) = result.system_message() {
        out.insert("system".into(), Value::String(system.content.clone()));
    }
    out.insert("messages".into(), Value::Array(messages));
    Ok(Value::Object(out))
}

/// Each message as `### role` followed by its content, separated by blank lines.
pub fn text(result: &BuildResult) -> String {
    let mut out = String::new();
    for (i, message) in result.messages.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str("### ");
        out.push_str(message.role.as_str());
        out.push('\n');
        out.push_str(&message.content);
    }
    out.push('\n');
    out
}
