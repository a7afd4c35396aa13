//! OpenAI Responses: `input` items `message`, `function_call` and
//! `function_call_output`.

use serde_json::{Map, Value, json};

use super::native_request::{NativeRequest, Provider, prepare, reserve_into, text_of};
use crate::error::Result;
use crate::model::roles::Role;
use crate::output::result::BuildResult;
use crate::render::Record;

/// A Responses request body (`model`, `input`, and `max_output_tokens`
/// when the build reserved room for the reply) from a
/// [native](crate::render::Protocol::Native) build.
///
/// The system message is the first input item, a `developer` message;
/// each turn's text is one `message` item, its calls `function_call`
/// items (`arguments` the call's JSON object as a string), and every call
/// is answered by a `function_call_output` item right after its turn.
///
/// # Errors
///
/// As [`openai_chat_request`](super::openai_chat_request).
pub fn openai_responses_request(result: &BuildResult) -> Result<NativeRequest> {
    let prepared = prepare(result, Provider::OpenAiResponses)?;
    let mut input = Vec::new();
    if let Some(system) = &prepared.conversation.system {
        input.push(message("developer", system));
    }
    for turn in &prepared.conversation.turns {
        let role = match turn.role {
            Role::Assistant => "assistant",
            _ => "user",
        };
        turn_items(role, &turn.items, &mut input);
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::from(result.model.as_str()));
    body.insert("input".into(), Value::Array(input));
    reserve_into(&mut body, "max_output_tokens", result.reserve_output);
    Ok(NativeRequest {
        body: Value::Object(body),
        ..prepared.request
    })
}

/// A `message` input item.
fn message(role: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": text})
}

/// The input items of one turn: results first (they lead a user turn),
/// then the text as one message, then the calls.
fn turn_items(role: &str, items: &[Record], input: &mut Vec<Value>) {
    for item in items {
        if let Record::ToolResult { id, content, .. } = item {
            input.push(json!({"type": "function_call_output", "call_id": id, "output": content}));
        }
    }
    // A compaction item stands for the history before it, as the
    // Responses API returned it.
    for item in items {
        if let Record::Compaction {
            openai: Some(item), ..
        } = item
        {
            input.push(item.clone());
        }
    }
    let shown_as_text = |item: &&Record| {
        !matches!(
            item,
            Record::Compaction {
                openai: Some(_),
                ..
            }
        )
    };
    let texts: Vec<&str> = items
        .iter()
        .filter(shown_as_text)
        .filter_map(text_of)
        .collect();
    if !texts.is_empty() {
        input.push(message(role, &texts.join("\n\n")));
    }
    for item in items {
        if let Record::ToolCall {
            id,
            name,
            arguments,
            ..
        } = item
        {
            input.push(json!({
                "type": "function_call",
                "call_id": id,
                "name": name,
                "arguments": Value::Object(arguments.clone()).to_string(),
            }));
        }
    }
}
