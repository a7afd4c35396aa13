//! The AI SDK's messages both ways: `--output ai-sdk` pairs every call with
//! its result and names the tool twice; `--input ai-sdk` reads
//! `ModelMessage` and `UIMessage` histories; a history of the SDK's own
//! comes back as it went in.

use agent_context::adapter::{from_ai_sdk, from_ai_sdk_at};
use agent_context::command::{self, BuildOptions, Output};
use agent_context::{ErrorKind, MemoryState};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common;
use crate::common::cli::run;

/// `state` built with `max_tokens` into the AI SDK's `{system, messages}`.
fn ai_sdk(state: &MemoryState, max_tokens: usize) -> Value {
    let mut options = BuildOptions::default();
    options.max_tokens = Some(max_tokens);
    options.output = Output::AiSdk;
    match command::build(state, &options).expect("builds").body {
        command::Body::Json(value) => value,
        other => panic!("ai-sdk prints JSON, not {other:?}"),
    }
}

/// The messages of an `{system, messages}` body.
fn messages(body: &Value) -> &[Value] {
    body["messages"].as_array().expect("messages")
}

/// Every `tool-call` is answered in the very next message, a `tool`
/// message, by one `tool-result` with its id and tool name, and every
/// result answers a call of the message before; parts have the SDK's keys.
fn assert_paired(body: &Value) {
    let messages = messages(body);
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().expect("role");
        let parts = message["content"].as_array().expect("content parts");
        assert!(!parts.is_empty(), "message {i} has no parts");
        let calls: Vec<(&Value, &Value)> = parts
            .iter()
            .filter(|p| p["type"] == "tool-call")
            .map(|p| (&p["toolCallId"], &p["toolName"]))
            .collect();
        if !calls.is_empty() {
            assert_eq!(role, "assistant", "message {i}: calls are the assistant's");
            let next = &messages[i + 1];
            assert_eq!(
                next["role"],
                "tool",
                "message {}: answers message {i}",
                i + 1
            );
            let answers: Vec<(&Value, &Value)> = next["content"]
                .as_array()
                .expect("tool parts")
                .iter()
                .map(|p| (&p["toolCallId"], &p["toolName"]))
                .collect();
            assert_eq!(
                answers,
                calls,
                "message {}: one result per call, in order",
                i + 1
            );
        }
        if role == "tool" {
            let before = &messages[i - 1]["content"];
            for part in parts {
                assert_eq!(part["type"], "tool-result");
                let kind = part["output"]["type"].as_str().expect("output type");
                assert!(["text", "json", "error-text", "error-json"].contains(&kind));
                let answered = before
                    .as_array()
                    .expect("parts")
                    .iter()
                    .any(|p| p["type"] == "tool-call" && p["toolCallId"] == part["toolCallId"]);
                assert!(answered, "message {i}: a result of no call before it");
            }
        }
        for part in parts {
            let kind = part["type"].as_str().expect("part type");
            let text_ok = kind != "text" || !part["text"].as_str().expect("text").trim().is_empty();
            assert!(text_ok, "message {i}: a blank text part");
            assert!(["text", "reasoning", "tool-call", "tool-result"].contains(&kind));
        }
    }
}

#[test]
fn the_bundled_session_becomes_model_messages_with_every_call_answered() {
    let text = std::fs::read_to_string("data/coding-agent.json").expect("bundled data");
    let state = MemoryState::from_json_str(&text).expect("valid");
    for max_tokens in [4_000, 12_000, 200_000] {
        let body = ai_sdk(&state, max_tokens);
        assert_paired(&body);
        assert!(
            body["system"]
                .as_str()
                .is_some_and(|s| s.contains("Repository"))
        );
    }
    // Failed runs are error outputs, with their text.
    let body = ai_sdk(&state, 200_000);
    let failed = messages(&body)
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .find(|p| p["toolCallId"] == "call_01" && p["type"] == "tool-result")
        .expect("call_01's result");
    assert_eq!(failed["toolName"], "bash");
    assert_eq!(failed["output"]["type"], "error-text");
    let value = failed["output"]["value"].as_str().expect("text");
    assert!(
        value.ends_with("error: process exited with status 101"),
        "{value}"
    );
}

proptest! {
    #![proptest_config(common::proptest_config_with(common::proptest_cases(48)))]

    /// Whatever the session and the budget, calls and results arrive
    /// paired, as the SDK's providers need them.
    #[test]
    fn any_session_at_any_budget_arrives_paired(
        state in common::session(30),
        max_tokens in 300usize..6_000,
    ) {
        let mut options = BuildOptions::default();
        options.max_tokens = Some(max_tokens);
        options.output = Output::AiSdk;
        // A budget too small for the protected content fails, as every output.
        if let Ok(printed) = command::build(&state, &options) {
            let command::Body::Json(body) = printed.body else {
                panic!("ai-sdk prints JSON");
            };
            assert_paired(&body);
        }
    }

    /// A `ModelMessage` history of the SDK's own, read and built within a
    /// budget that holds it, comes back unchanged.
    #[test]
    fn a_model_message_history_comes_back_as_it_went_in(history in model_history()) {
        let read = from_ai_sdk(&history).expect("a valid history");
        prop_assert!(read.warnings.is_empty());
        let body = ai_sdk(&read.state, 1_000_000);
        prop_assert_eq!(&body, &history);
    }
}

/// A text the SDK would send: printable, not blank.
fn words() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,:<>/&\"'{}\\[\\]\n-]{0,40}[a-zA-Z0-9]".prop_map(String::from)
}

/// A JSON object of a few keys, as tools take and return them.
fn object() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        words().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ];
    let value = leaf.prop_recursive(2, 8, 3, |inner| {
        prop::collection::vec(inner, 0..3).prop_map(Value::from)
    });
    prop::collection::btree_map("[a-z_]{1,8}", value, 0..4)
        .prop_map(|map| Value::Object(map.into_iter().collect()))
}

/// One tool step of a history: a call and its result's output.
fn tool_step() -> impl Strategy<Value = (String, Value, Value)> {
    let output = prop_oneof![
        words().prop_map(|v| json!({"type": "text", "value": v})),
        object().prop_map(|v| json!({"type": "json", "value": v})),
        words().prop_map(|v| json!({"type": "error-text", "value": v})),
        object().prop_map(|v| json!({"type": "error-json", "value": v})),
    ];
    ("[a-z_]{1,12}", object(), output)
}

/// A turn of the assistant: optional signed reasoning (text, signature)
/// and text, then calls answered in one tool message.
type AssistantTurn = (
    Option<(String, String)>,
    Option<String>,
    Vec<(String, Value, Value)>,
);

fn assistant_turn() -> impl Strategy<Value = AssistantTurn> {
    (
        prop::option::of((words(), "[A-Za-z0-9+/]{8,24}")),
        prop::option::of(words()),
        prop::collection::vec(tool_step(), 0..3),
    )
        .prop_filter("an assistant message has a part", |(r, t, calls)| {
            r.is_some() || t.is_some() || !calls.is_empty()
        })
}

/// `{system, messages}`: user and assistant turns, calls answered.
fn model_history() -> impl Strategy<Value = Value> {
    (
        prop::option::of(words()),
        prop::collection::vec((words(), assistant_turn()), 1..6),
    )
        .prop_map(|(system, turns)| {
            let mut messages = Vec::new();
            let mut calls = 0;
            for (user, (reasoning, text, steps)) in turns {
                messages.push(json!({"role": "user", "content": [{"type": "text", "text": user}]}));
                let mut parts = Vec::new();
                if let Some((thinking, signature)) = reasoning {
                    parts.push(json!({"type": "reasoning", "text": thinking,
                        "providerOptions": {"anthropic": {"signature": signature}}}));
                }
                if let Some(text) = text {
                    parts.push(json!({"type": "text", "text": text}));
                }
                let mut results = Vec::new();
                for (name, input, output) in steps {
                    calls += 1;
                    let id = format!("call_{calls}");
                    parts.push(json!({"type": "tool-call", "toolCallId": id, "toolName": name, "input": input}));
                    results.push(json!({"type": "tool-result", "toolCallId": id, "toolName": name, "output": output}));
                }
                messages.push(json!({"role": "assistant", "content": parts}));
                if !results.is_empty() {
                    messages.push(json!({"role": "tool", "content": results}));
                }
            }
            let mut body = serde_json::Map::new();
            if let Some(system) = system {
                body.insert("system".into(), Value::String(system));
            }
            body.insert("messages".into(), Value::Array(messages));
            Value::Object(body)
        })
}

/// A `UIMessage` history as `useChat` keeps it.
fn ui_history() -> Value {
    json!([
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Paris?"}]},
        {"id": "a1", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "Use the tools.",
             "providerMetadata": {"anthropic": {"signature": "c2ln"}}},
            {"type": "tool-getWeather", "toolCallId": "c1", "state": "output-available",
             "input": {"city": "Paris"}, "output": {"celsius": 21}},
            {"type": "dynamic-tool", "toolName": "clock", "toolCallId": "c2",
             "state": "output-error", "input": {"tz": "CET"}, "errorText": "no clock"},
            {"type": "step-start"},
            {"type": "text", "text": "It is 21 degrees."},
            {"type": "source-url", "sourceId": "s1", "url": "https://example.com"}
        ]},
        {"id": "u2", "role": "user", "parts": [
            {"type": "text", "text": "Thanks."},
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA=="}
        ]}
    ])
}

#[test]
fn ui_messages_are_read_in_the_order_convert_to_model_messages_gives() {
    let read = from_ai_sdk(&ui_history()).expect("valid");
    assert_eq!(
        read.warnings,
        ["parts of the AI SDK messages that no chunk holds were left out: 1 file, 1 source-url"]
    );
    let ids: Vec<&str> = read.state.chunks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "u1.0",
            "a1.1",
            "a1.2",
            "a1.3",
            "a1.2.result",
            "a1.3.result",
            "a1.5",
            "u2.0"
        ]
    );
    let body = ai_sdk(&read.state, 100_000);
    assert_eq!(
        body,
        json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "reasoning", "text": "Use the tools.",
                 "providerOptions": {"anthropic": {"signature": "c2ln"}}},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "getWeather",
                 "input": {"city": "Paris"}},
                {"type": "tool-call", "toolCallId": "c2", "toolName": "clock", "input": {"tz": "CET"}}
            ]},
            {"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "c1", "toolName": "getWeather",
                 "output": {"type": "json", "value": {"celsius": 21}}},
                {"type": "tool-result", "toolCallId": "c2", "toolName": "clock",
                 "output": {"type": "error-text", "value": "no clock"}}
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "It is 21 degrees."}]},
            {"role": "user", "content": [{"type": "text", "text": "Thanks."}]}
        ]})
    );
}

#[test]
fn a_pending_call_is_kept_and_sent_as_text_until_its_result_comes() {
    let history = json!([
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "c9", "toolName": "ls", "input": {}}]}
    ]);
    let read = from_ai_sdk(&history).expect("valid");
    assert_eq!(read.state.chunks.len(), 2);
    let body = ai_sdk(&read.state, 10_000);
    let last = &messages(&body)[1];
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"][0]["type"], "text", "{body}");
    assert!(
        last["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("\"c9\""))
    );
}

#[test]
fn what_the_sdk_would_refuse_is_named_where_it_is() {
    let cases = [
        (json!({"messages": 3}), "messages", "expected an array"),
        (
            json!([{"role": "user"}]),
            "messages[0]",
            "`content` (a ModelMessage) or `parts`",
        ),
        (
            json!([{"role": "robot", "content": "x"}]),
            "messages[0].role",
            "unknown role \"robot\"",
        ),
        (
            json!([{"role": "assistant", "content": [{"type": "tool-call", "toolName": "x"}]}]),
            "messages[0].content[0].toolCallId",
            "expected a string",
        ),
        (
            json!([{"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a",
                "toolName": "x", "output": {"type": "yaml", "value": "x"}}]}]),
            "messages[0].content[0].output.type",
            "unknown output type \"yaml\"",
        ),
        (
            json!([{"role": "assistant", "parts": [{"type": "tool-x", "toolCallId": "a",
                "state": "done"}]}]),
            "messages[0].parts[0].state",
            "unknown tool state \"done\"",
        ),
        (
            json!([{"role": "system", "content": [{"type": "text", "text": "x"}]}]),
            "messages[0].content",
            "expected a string",
        ),
    ];
    for (input, field, needle) in cases {
        let error = from_ai_sdk(&input).expect_err("refused");
        let ErrorKind::Session {
            field: named,
            message,
        } = error.kind()
        else {
            panic!("{input}: {error}");
        };
        assert_eq!(named, field, "{input}");
        assert!(message.contains(needle), "{input}: {message}");
    }
}

#[test]
fn the_cli_reads_and_prints_the_sdk_messages() {
    let history = ui_history().to_string();
    let cli = run(
        &["build", "--input", "ai-sdk", "--output", "ai-sdk"],
        &history,
    );
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    assert!(
        cli.stderr.contains("warning: parts of the AI SDK messages"),
        "{}",
        cli.stderr
    );
    let read = from_ai_sdk(&ui_history()).expect("valid");
    let printed: Value = serde_json::from_str(&cli.stdout).expect("JSON");
    assert_eq!(printed, ai_sdk(&read.state, 128_000));
    // A report of the same input names the chunks the reading made.
    let report = run(&["build", "--input", "ai-sdk"], &history);
    let report: Value = serde_json::from_str(&report.stdout).expect("JSON");
    assert_eq!(report["decisions"][0]["id"], "u1.0");
    // Bad messages exit 2 with nothing on stdout.
    let bad = run(&["build", "--input", "ai-sdk"], r#"[{"role": "user"}]"#);
    assert_eq!((bad.code, bad.stdout.as_str()), (2, ""));
    assert!(bad.stderr.contains("messages[0]"), "{}", bad.stderr);
    // A session given as AI SDK messages is refused by its shape, not read.
    let session = run(&["build", "--input", "ai-sdk"], r#"{"chunks": []}"#);
    assert_eq!(session.code, 2, "{}", session.stderr);
}

#[test]
fn a_history_read_turn_by_turn_from_its_place_has_the_ids_of_a_whole_read() {
    let history = json!([
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "c1", "toolName": "ls", "input": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1",
            "toolName": "ls", "output": {"type": "text", "value": "a.rs"}}]},
        {"role": "assistant", "content": "One file."},
        {"role": "user", "content": "Read it."}
    ]);
    let whole = from_ai_sdk(&history).expect("valid").state;
    let messages = history.as_array().expect("an array");
    let mut chunks = Vec::new();
    for (first, turn) in [(0, &messages[..3]), (3, &messages[3..])] {
        let read = from_ai_sdk_at(&Value::Array(turn.to_vec()), first).expect("valid");
        chunks.extend(read.state.chunks);
    }
    assert_eq!(chunks, whole.chunks);
    let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["m0", "m1.0", "m2.0", "m3", "m4"]);
    // An error names the message by its place in what was given.
    let bad = json!([{"role": "user"}]);
    let error = from_ai_sdk_at(&bad, 7).expect_err("refused");
    assert!(error.to_string().contains("messages[0]"), "{error}");
}
