//! Provider shapes of a [`BuildResult`]: in text mode OpenAI chat,
//! Anthropic messages and plain text; from a
//! [native](crate::render::Protocol::Native) build, complete request bodies
//! for OpenAI Chat Completions, OpenAI Responses and Anthropic Messages.
//!
//! ```
//! use agent_context::adapter::{NativeOptions, anthropic_request};
//! use agent_context::render::Protocol;
//! use agent_context::{ChunkKind, ContextBuilder, MemoryChunk, MemoryState, Role};
//!
//! let state = MemoryState::new()
//!     .with_system_prompt("You fix bugs.")
//!     .with_chunk(MemoryChunk::agent("u1", Role::User, "Why does add() fail?"))
//!     .with_chunk(
//!         MemoryChunk::new("c1", ChunkKind::Workflow)
//!             .with_tool("read_file")
//!             .with_call_id("call_1")
//!             .with_data(serde_json::json!({"path": "src/lib.rs"})),
//!     )
//!     .with_chunk(
//!         MemoryChunk::new("c2", ChunkKind::Environment)
//!             .with_call_id("call_1")
//!             .with_text("pub fn add(a: i32, b: i32) -> i32 { a - b }"),
//!     );
//! let mut builder = ContextBuilder::new();
//! builder
//!     .model("claude-sonnet-4-5")
//!     .max_tokens(8_000)
//!     .reserve_output(1_000)
//!     .protocol(Protocol::Native)
//!     .user_first(true);
//! let request = anthropic_request(&builder.build(&state)?, &NativeOptions::default())?;
//! let messages = &request.body["messages"];
//! assert_eq!(messages[0]["content"][0]["text"], "Why does add() fail?");
//! assert_eq!(messages[1]["content"][0]["type"], "tool_use");
//! assert_eq!(messages[1]["content"][0]["input"]["path"], "src/lib.rs");
//! assert_eq!(messages[2]["content"][0]["type"], "tool_result");
//! assert_eq!(messages[2]["content"][0]["tool_use_id"], "call_1");
//! assert!(request.token_count <= 7_000 && !request.token_count_exact);
//! # Ok::<(), agent_context::Error>(())
//! ```

mod ai_sdk;
mod ai_sdk_input;
mod anthropic_messages;
mod cache_breakpoints;
mod conversation;
pub(crate) mod explain;
pub mod html;
mod native_request;
mod openai_chat;
mod openai_responses;

pub use ai_sdk::ai_sdk_request;
pub use ai_sdk_input::{AiSdkHistory, from_ai_sdk, from_ai_sdk_at};
pub use anthropic_messages::anthropic_request;
pub use cache_breakpoints::CacheBreakpoint;
pub use native_request::{NativeOptions, NativeRequest};
pub use openai_chat::openai_chat_request;
pub use openai_responses::openai_responses_request;

use serde_json::{Value, json};

use crate::error::{ErrorKind, Result};
use crate::model::roles::Role;
use crate::output::message::ContextMessage;
use crate::output::result::BuildResult;

/// `{"messages": [{"role", "content"}]}`, the system message first, with
/// the role [`openai_chat_request`] gives it: `developer` for reasoning
/// models (`o1`, `o3`, `o4`, `gpt-5`…), else `system`.
pub fn openai(result: &BuildResult) -> Value {
    let messages: Vec<Value> = result
        .messages
        .iter()
        .map(|m| openai_message(m, &result.model))
        .collect();
    json!({ "messages": messages })
}

/// One message of [`openai`]'s `messages`: `{"role", "content"}`, the
/// system message's role as `model` takes it.
pub(crate) fn openai_message(message: &ContextMessage, model: &str) -> Value {
    let role = match message.role {
        Role::System => openai_system_role(model),
        role => role.as_str(),
    };
    json!({"role": role, "content": message.content})
}

/// The role OpenAI's Chat Completions API gives instructions for `model`:
/// reasoning models take them as `developer`, others as `system`.
fn openai_system_role(model: &str) -> &'static str {
    let reasoning = ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|family| model.starts_with(family));
    if reasoning { "developer" } else { "system" }
}

/// `{"system": "…", "messages": [...]}`: the system message apart, the history
/// in strictly alternating roles starting with `user` (`system` is omitted
/// when there is none).
///
/// # Errors
///
/// [`ErrorKind::EmptyHistory`] if there is no message besides the system
/// message, which the Messages API rejects (`"messages": []`): the session
/// needs a user turn, and inventing one would send the model a request
/// nobody made.
///
/// [`ErrorKind::Option`] if the history starts with the assistant: build with
/// [`ContextBuilder::user_first`](crate::ContextBuilder::user_first) so the
/// fix is counted in the budget.
pub fn anthropic(result: &BuildResult) -> Result<Value> {
    if result.history().len() == 0 {
        return Err(ErrorKind::EmptyHistory {
            provider: "Anthropic".into(),
        }
        .into());
    }
    if result
        .history()
        .next()
        .is_some_and(|m| m.role != Role::User)
    {
        return Err(ErrorKind::Option {
            option: "user_first".into(),
            message: "Anthropic requires the history to start with a user message; build with \
                      user_first(true)"
                .into(),
        }
        .into());
    }
    // The builder merges neighbours of one role, so roles already alternate.
    let messages: Vec<Value> = result
        .history()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
        .collect();
    let mut out = serde_json::Map::new();
    if let Some(system) = result.system_message() {
        out.insert("system".into(), Value::String(system.content.to_string()));
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
