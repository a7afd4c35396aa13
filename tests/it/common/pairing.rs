//! What each provider's API accepts of a request body's structure, written
//! once and checked by every native-request test: the tool-call pairing
//! rules above all (every call answered once, right after it; no orphan
//! answer), and the shape rules a body can break on its own (roles, ids,
//! empty text, cache marks).
//!
//! Each checker returns the first rule broken, with where it was broken.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// Most `cache_control` marks an Anthropic request may carry.
pub const ANTHROPIC_MAX_MARKS: usize = 4;

type Check = Result<(), String>;

fn object<'v>(value: &'v Value, at: &str) -> Result<&'v Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{at}: not an object: {value}"))
}

fn array<'v>(value: Option<&'v Value>, at: &str) -> Result<&'v Vec<Value>, String> {
    value
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{at}: missing or not an array"))
}

fn string<'v>(map: &'v Map<String, Value>, key: &str, at: &str) -> Result<&'v str, String> {
    map.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{at}: `{key}` missing or not a string"))
}

fn non_empty<'v>(map: &'v Map<String, Value>, key: &str, at: &str) -> Result<&'v str, String> {
    let text = string(map, key, at)?;
    if text.is_empty() {
        return Err(format!("{at}: `{key}` is empty"));
    }
    Ok(text)
}

/// Only `allowed` keys (a typo'd or stray key is refused by the SDK types).
fn keys_within(map: &Map<String, Value>, allowed: &[&str], at: &str) -> Check {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(format!("{at}: unexpected key `{key}`")),
        None => Ok(()),
    }
}

/// A positive integer under `key`, when present (or required).
fn positive(map: &Map<String, Value>, key: &str, required: bool) -> Check {
    match map.get(key) {
        None if !required => Ok(()),
        Some(v) if v.as_u64().is_some_and(|n| n > 0) => Ok(()),
        other => Err(format!("`{key}` must be a positive integer, got {other:?}")),
    }
}

/// `arguments` as OpenAI sends them: a string holding a JSON object.
fn arguments_object(text: &str, at: &str) -> Check {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_)) => Ok(()),
        _ => Err(format!(
            "{at}: arguments are not a JSON object string: {text:?}"
        )),
    }
}

/// Checks an OpenAI Chat Completions body.
///
/// Rules: `model` and a non-empty `messages`; a system or developer
/// message only first; an assistant message has string content or `null`
/// with `tool_calls`; each tool call has a unique id (within its message),
/// type `function`, a name and arguments that are a JSON object string;
/// the messages right after an assistant message with calls are `tool`
/// messages answering each of its calls exactly once, nothing else, before
/// the next message of another role; a `tool` message anywhere else is an
/// orphan.
pub fn check_openai_chat(body: &Value) -> Check {
    let top = object(body, "body")?;
    keys_within(top, &["model", "messages", "max_completion_tokens"], "body")?;
    non_empty(top, "model", "body")?;
    positive(top, "max_completion_tokens", false)?;
    let messages = array(top.get("messages"), "body.messages")?;
    if messages.is_empty() {
        return Err("body.messages is empty".into());
    }
    let mut i = 0;
    while i < messages.len() {
        let at = format!("messages[{i}]");
        let message = object(&messages[i], &at)?;
        let role = string(message, "role", &at)?;
        match role {
            "system" | "developer" => {
                keys_within(message, &["role", "content"], &at)?;
                if i != 0 {
                    return Err(format!("{at}: a {role} message after the first"));
                }
                string(message, "content", &at)?;
            }
            "user" => {
                keys_within(message, &["role", "content"], &at)?;
                string(message, "content", &at)?;
            }
            "tool" => return Err(format!("{at}: orphan tool message (no call right before)")),
            "assistant" => {
                keys_within(message, &["role", "content", "tool_calls"], &at)?;
                let calls = match message.get("tool_calls") {
                    None => Vec::new(),
                    Some(calls) => {
                        let calls = array(Some(calls), &format!("{at}.tool_calls"))?;
                        if calls.is_empty() {
                            return Err(format!("{at}: empty tool_calls"));
                        }
                        calls.clone()
                    }
                };
                match message.get("content") {
                    Some(Value::String(_)) => {}
                    Some(Value::Null) if !calls.is_empty() => {}
                    other => {
                        return Err(format!(
                            "{at}: assistant content {other:?} (a string, or null with calls)"
                        ));
                    }
                }
                let mut pending: Vec<String> = Vec::new();
                for (c, call) in calls.iter().enumerate() {
                    let at = format!("{at}.tool_calls[{c}]");
                    let call = object(call, &at)?;
                    keys_within(call, &["id", "type", "function"], &at)?;
                    let id = non_empty(call, "id", &at)?;
                    if string(call, "type", &at)? != "function" {
                        return Err(format!("{at}: type is not `function`"));
                    }
                    let function = object(
                        call.get("function").unwrap_or(&Value::Null),
                        &format!("{at}.function"),
                    )?;
                    keys_within(function, &["name", "arguments"], &at)?;
                    non_empty(function, "name", &at)?;
                    arguments_object(string(function, "arguments", &at)?, &at)?;
                    if pending.iter().any(|p| p == id) {
                        return Err(format!("{at}: call id {id:?} twice in one message"));
                    }
                    pending.push(id.to_owned());
                }
                // The calls' answers: the tool messages right after.
                while let Some(next) = messages.get(i + 1) {
                    let at = format!("messages[{}]", i + 1);
                    let next = object(next, &at)?;
                    if next.get("role").and_then(Value::as_str) != Some("tool") {
                        break;
                    }
                    keys_within(next, &["role", "tool_call_id", "content"], &at)?;
                    string(next, "content", &at)?;
                    let id = string(next, "tool_call_id", &at)?;
                    match pending.iter().position(|p| p == id) {
                        Some(p) => {
                            pending.remove(p);
                        }
                        None => {
                            return Err(format!(
                                "{at}: tool message for {id:?}, which the assistant message \
                                 before did not call (or answered twice)"
                            ));
                        }
                    }
                    i += 1;
                }
                if let Some(id) = pending.first() {
                    return Err(format!("{at}: call {id:?} has no tool message right after"));
                }
            }
            other => return Err(format!("{at}: unknown role {other:?}")),
        }
        i += 1;
    }
    Ok(())
}

/// Checks an OpenAI Responses body.
///
/// Rules: `model` and a non-empty `input` of `message`, `function_call` and
/// `function_call_output` items; a developer or system message only first.
/// Pairing: the input is cut at every `message` item into runs of call
/// items; within each run every `function_call` is answered by exactly one
/// `function_call_output` with its `call_id`, after it, and every output
/// answers a call earlier in the same run (no orphan output, no output
/// before its call). A `call_id` may come again in a run only once its
/// earlier call is answered (else an output could answer either).
pub fn check_openai_responses(body: &Value) -> Check {
    let top = object(body, "body")?;
    keys_within(top, &["model", "input", "max_output_tokens"], "body")?;
    non_empty(top, "model", "body")?;
    positive(top, "max_output_tokens", false)?;
    let input = array(top.get("input"), "body.input")?;
    if input.is_empty() {
        return Err("body.input is empty".into());
    }
    // Calls of the current run: id -> answered.
    let mut run: Vec<(String, bool)> = Vec::new();
    let close_run = |run: &mut Vec<(String, bool)>, at: &str| -> Check {
        if let Some((id, _)) = run.iter().find(|(_, answered)| !answered) {
            return Err(format!(
                "function_call {id:?} has no function_call_output before {at}"
            ));
        }
        run.clear();
        Ok(())
    };
    for (i, item) in input.iter().enumerate() {
        let at = format!("input[{i}]");
        let item = object(item, &at)?;
        match string(item, "type", &at)? {
            "message" => {
                close_run(&mut run, &at)?;
                keys_within(item, &["type", "role", "content"], &at)?;
                let role = string(item, "role", &at)?;
                match role {
                    "developer" | "system" if i != 0 => {
                        return Err(format!("{at}: a {role} message after the first"));
                    }
                    "developer" | "system" | "user" | "assistant" => {}
                    other => return Err(format!("{at}: unknown role {other:?}")),
                }
                string(item, "content", &at)?;
            }
            "function_call" => {
                keys_within(item, &["type", "call_id", "name", "arguments"], &at)?;
                let id = non_empty(item, "call_id", &at)?;
                non_empty(item, "name", &at)?;
                arguments_object(string(item, "arguments", &at)?, &at)?;
                // A repeat after the earlier call was answered pairs
                // unambiguously; before, an output could answer either.
                if run.iter().any(|(p, answered)| p == id && !answered) {
                    return Err(format!(
                        "{at}: call id {id:?} repeated while its earlier call is unanswered"
                    ));
                }
                run.push((id.to_owned(), false));
            }
            "function_call_output" => {
                keys_within(item, &["type", "call_id", "output"], &at)?;
                string(item, "output", &at)?;
                let id = string(item, "call_id", &at)?;
                // The latest call with the id answers it.
                match run.iter_mut().rev().find(|(p, _)| p == id) {
                    Some((_, answered)) if !*answered => *answered = true,
                    Some(_) => return Err(format!("{at}: second output for call {id:?}")),
                    None => {
                        return Err(format!(
                            "{at}: orphan output for {id:?} (no function_call before it since \
                             the last message)"
                        ));
                    }
                }
            }
            other => return Err(format!("{at}: unknown item type {other:?}")),
        }
    }
    close_run(&mut run, "the end of the input")
}

/// Whether `id` is a tool id Anthropic accepts: `^[a-zA-Z0-9_-]+$`.
pub fn anthropic_id_ok(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks an Anthropic Messages body.
///
/// Rules: `model`, a positive `max_tokens`, `system` (if any) an array of
/// non-empty text blocks, and a non-empty `messages` whose roles strictly
/// alternate starting with `user`, each with a non-empty array of blocks:
/// `text`, `thinking` (assistant only, with a signature), `tool_use`
/// (assistant only) and `tool_result` (user only). Pairing: every
/// `tool_use` of an assistant message is answered by exactly one
/// `tool_result` in the very next message, which is a user message whose
/// tool results all come before its other blocks; a `tool_result` answers
/// a `tool_use` of the message right before it. Tool ids match
/// `^[a-zA-Z0-9_-]+$` and no two `tool_use` blocks share an id. No text
/// block is empty, and a whitespace-only text block needs a
/// non-whitespace text block beside it; the final message, when it is the
/// assistant's, does not end with whitespace. At most four blocks carry
/// `cache_control` (`{"type": "ephemeral"}`), never a thinking block.
pub fn check_anthropic(body: &Value) -> Check {
    let top = object(body, "body")?;
    keys_within(top, &["model", "max_tokens", "system", "messages"], "body")?;
    non_empty(top, "model", "body")?;
    positive(top, "max_tokens", true)?;
    let mut marks = 0;
    if let Some(system) = top.get("system") {
        let system = array(Some(system), "body.system")?;
        if system.is_empty() {
            return Err("body.system is an empty array".into());
        }
        for (b, block) in system.iter().enumerate() {
            let at = format!("system[{b}]");
            let block = object(block, &at)?;
            keys_within(block, &["type", "text", "cache_control"], &at)?;
            if string(block, "type", &at)? != "text" {
                return Err(format!("{at}: not a text block"));
            }
            non_empty(block, "text", &at)?;
            marks += cache_mark(block, &at)?;
        }
    }
    let messages = array(top.get("messages"), "body.messages")?;
    if messages.is_empty() {
        return Err("body.messages is empty".into());
    }
    let mut tool_use_ids: HashSet<String> = HashSet::new();
    // The tool_use ids of the previous (assistant) message, still unanswered.
    let mut calls: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let message = object(message, &at)?;
        keys_within(message, &["role", "content"], &at)?;
        let role = string(message, "role", &at)?;
        let expected = if i % 2 == 0 { "user" } else { "assistant" };
        if role != expected {
            return Err(format!(
                "{at}: role {role:?} where {expected:?} is due (roles alternate from user)"
            ));
        }
        let blocks = array(message.get("content"), &format!("{at}.content"))?;
        if blocks.is_empty() {
            return Err(format!("{at}: no content blocks"));
        }
        let mut answered: HashMap<String, usize> = HashMap::new();
        let mut past_results = false;
        let mut new_calls: Vec<String> = Vec::new();
        let mut text_with_content = false;
        let mut blank_texts = 0;
        for (b, block) in blocks.iter().enumerate() {
            let at = format!("{at}.content[{b}]");
            let block = object(block, &at)?;
            marks += cache_mark(block, &at)?;
            let kind = string(block, "type", &at)?;
            if kind != "tool_result" {
                past_results = true;
            }
            match (role, kind) {
                (_, "text") => {
                    keys_within(block, &["type", "text", "cache_control"], &at)?;
                    let text = non_empty(block, "text", &at)?;
                    if text.trim().is_empty() {
                        blank_texts += 1;
                    } else {
                        text_with_content = true;
                    }
                }
                ("assistant", "thinking") => {
                    keys_within(block, &["type", "thinking", "signature"], &at)
                        .map_err(|e| format!("{e} (thinking blocks cannot carry cache_control)"))?;
                    string(block, "thinking", &at)?;
                    non_empty(block, "signature", &at)?;
                }
                ("assistant", "tool_use") => {
                    keys_within(
                        block,
                        &["type", "id", "name", "input", "cache_control"],
                        &at,
                    )?;
                    let id = string(block, "id", &at)?;
                    if !anthropic_id_ok(id) {
                        return Err(format!("{at}: tool_use id {id:?} outside [a-zA-Z0-9_-]+"));
                    }
                    if !tool_use_ids.insert(id.to_owned()) {
                        return Err(format!(
                            "{at}: tool_use id {id:?} used twice in the request"
                        ));
                    }
                    non_empty(block, "name", &at)?;
                    if !block.get("input").is_some_and(Value::is_object) {
                        return Err(format!("{at}: tool_use input is not an object"));
                    }
                    new_calls.push(id.to_owned());
                }
                ("user", "tool_result") => {
                    keys_within(
                        block,
                        &[
                            "type",
                            "tool_use_id",
                            "content",
                            "is_error",
                            "cache_control",
                        ],
                        &at,
                    )?;
                    if past_results {
                        return Err(format!(
                            "{at}: tool_result after another block (tool results come first)"
                        ));
                    }
                    let id = string(block, "tool_use_id", &at)?;
                    if !anthropic_id_ok(id) {
                        return Err(format!("{at}: tool_use_id {id:?} outside [a-zA-Z0-9_-]+"));
                    }
                    if let Some(content) = block.get("content")
                        && !content.is_string()
                    {
                        return Err(format!("{at}: tool_result content is not a string"));
                    }
                    if let Some(flag) = block.get("is_error")
                        && !flag.is_boolean()
                    {
                        return Err(format!("{at}: is_error is not a boolean"));
                    }
                    if !calls.iter().any(|c| c == id) {
                        return Err(format!(
                            "{at}: tool_result for {id:?}, which the previous message did not \
                             call"
                        ));
                    }
                    *answered.entry(id.to_owned()).or_default() += 1;
                }
                (role, kind) => return Err(format!("{at}: a {kind:?} block in a {role} message")),
            }
        }
        if blank_texts > 0 && !text_with_content {
            return Err(format!(
                "{at}: whitespace-only text with no other text in the message"
            ));
        }
        for id in &calls {
            match answered.get(id) {
                Some(1) => {}
                Some(n) => return Err(format!("{at}: {n} tool_results for {id:?}")),
                None => {
                    return Err(format!(
                        "{at}: tool_use {id:?} of the previous message is not answered here"
                    ));
                }
            }
        }
        calls = new_calls;
    }
    if let Some(id) = calls.first() {
        return Err(format!(
            "the last message's tool_use {id:?} is never answered"
        ));
    }
    let last = messages.last().and_then(Value::as_object);
    if let Some(last) = last
        && last.get("role").and_then(Value::as_str) == Some("assistant")
        && let Some(text) = last["content"]
            .as_array()
            .and_then(|b| b.last())
            .filter(|b| b["type"] == "text")
            .and_then(|b| b["text"].as_str())
        && text.ends_with(char::is_whitespace)
    {
        return Err(format!(
            "the final assistant message ends with whitespace: {:?}",
            &text[text.len().saturating_sub(40)..]
        ));
    }
    if marks > ANTHROPIC_MAX_MARKS {
        return Err(format!(
            "{marks} cache_control marks (at most {ANTHROPIC_MAX_MARKS})"
        ));
    }
    Ok(())
}

/// 1 if `block` carries a valid `cache_control` mark, 0 if none.
fn cache_mark(block: &Map<String, Value>, at: &str) -> Result<usize, String> {
    match block.get("cache_control") {
        None => Ok(0),
        Some(mark) if mark.get("type").and_then(Value::as_str) == Some("ephemeral") => {
            keys_within(object(mark, at)?, &["type", "ttl"], at)?;
            Ok(1)
        }
        Some(other) => Err(format!("{at}: cache_control {other} is not ephemeral")),
    }
}

/// `value` without any `cache_control` key, at any depth.
pub fn without_cache_control(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

/// How many `cache_control` keys `value` holds, at any depth.
pub fn count_cache_control(value: &Value) -> usize {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| usize::from(k == "cache_control") + count_cache_control(v))
            .sum(),
        Value::Array(items) => items.iter().map(count_cache_control).sum(),
        _ => 0,
    }
}
