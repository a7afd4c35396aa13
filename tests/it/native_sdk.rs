//! Every native request built from the bundled data, and from random
//! sessions, validates against the official OpenAI and Anthropic SDKs'
//! typed request params
//! (`tests/sdk/validate_requests.py`, run with the Python that
//! `.ci/with-sdk-python` provides).

use std::io::Write;
use std::process::Command;

use crate::common::native_sessions::case;
use agent_context::adapter::{
    NativeOptions, NativeRequest, anthropic_request, openai_chat_request, openai_responses_request,
};
use agent_context::render::Protocol;
use agent_context::{BuildResult, ContextBuilder, MemoryState};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::json;

/// The Python with the SDKs. Without one the test fails: request bodies
/// are checked against the real types or not at all.
fn sdk_python() -> String {
    std::env::var("AGENT_CONTEXT_SDK_PYTHON").unwrap_or_else(|_| {
        panic!(
            "AGENT_CONTEXT_SDK_PYTHON is not set: run the tests through \
             `.ci/with-sdk-python cargo test --features sdk-tests` (see tests/sdk/README.md)"
        )
    })
}

#[test]
fn bundled_requests_validate_against_the_official_sdks() {
    let python = sdk_python();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("data/") {
        let path = entry.expect("a data file").path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable data");
        let state = MemoryState::from_json_str(&text).expect("valid session");
        for model in ["gpt-4o", "o3", "claude-sonnet-4-5"] {
            for max_tokens in [2_000, 4_000, 200_000] {
                let mut builder = ContextBuilder::new();
                builder
                    .model(model)
                    .max_tokens(max_tokens)
                    .reserve_output(500)
                    .protocol(Protocol::Native)
                    .user_first(true);
                let Ok(result) = builder.build(&state) else {
                    continue;
                };
                let name = format!("{} {model} {max_tokens}", path.display());
                for (wire, request) in requests(&result) {
                    let request = request.unwrap_or_else(|e| panic!("{name} {wire}: {e}"));
                    lines.push(
                        json!({"wire": wire, "name": name, "body": request.body}).to_string(),
                    );
                }
            }
        }
    }
    assert!(lines.len() >= 18, "too few bodies: {}", lines.len());
    validate(&python, &lines);
}

#[test]
fn random_requests_validate_against_the_official_sdks() {
    // The sessions of the property tests (`tests/it/native.rs`), drawn from a
    // fixed seed: every body any wire sends is one its SDK accepts.
    let python = sdk_python();
    let mut runner = TestRunner::deterministic();
    let strategy = case();
    let mut lines = Vec::new();
    let mut every_wire = 0;
    for n in 0..RANDOM_CASES {
        let case = strategy
            .new_tree(&mut runner)
            .expect("a random case")
            .current();
        let Ok(result) = case.build().result else {
            continue;
        };
        // Anthropic refuses a build without a reserve or starting with the
        // assistant (`tests/it/native.rs` checks each refusal is one of those).
        let mut sent = 0;
        for (wire, request) in requests(&result) {
            if let Ok(request) = request {
                let name = format!("random case {n} ({})", case.model);
                lines.push(json!({"wire": wire, "name": name, "body": request.body}).to_string());
                sent += 1;
            }
        }
        every_wire += usize::from(sent == 3);
    }
    assert!(
        every_wire >= RANDOM_CASES / 2,
        "only {every_wire} of {RANDOM_CASES} cases made a body on every wire"
    );
    validate(&python, &lines);
}

/// How many random sessions are validated.
const RANDOM_CASES: usize = 300;

/// The request of every wire for `result`, with the validator's wire names.
fn requests(result: &BuildResult) -> [(&'static str, agent_context::Result<NativeRequest>); 3] {
    [
        ("openai-chat", openai_chat_request(result)),
        ("openai-responses", openai_responses_request(result)),
        (
            "anthropic-messages",
            anthropic_request(result, &NativeOptions::default()),
        ),
    ]
}

/// Runs the validator over `lines` (one `{wire, name, body}` each).
fn validate(python: &str, lines: &[String]) {
    let file = std::env::temp_dir().join(format!(
        "agent-context-sdk-{}-{}.jsonl",
        std::process::id(),
        lines.len()
    ));
    let mut out = std::fs::File::create(&file).expect("a temp file");
    writeln!(out, "{}", lines.join("\n")).expect("written");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/validate_requests.py"
    );
    let run = Command::new(python)
        .arg(script)
        .arg(&file)
        .output()
        .expect("run the validator");
    let _ = std::fs::remove_file(&file);
    assert!(
        run.status.success(),
        "the SDKs refused some bodies:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn compaction_items_round_trip_through_the_official_sdks() {
    // A compaction with Anthropic's block and OpenAI's item, either, or
    // neither, in a loop at several budgets: each provider gets its own
    // item verbatim where the span was (Anthropic's in the beta API), the
    // other the summary as text, and every body is one its SDK accepts.
    let python = sdk_python();
    let anthropic = json!({"type": "compaction", "content": "Read a.rs; add() subtracts.",
                           "encrypted_content": "RU5DUllQVEVE", "signature": "U0lHTkVE"});
    let openai = json!({"type": "compaction", "encrypted_content": "gAAAAABo", "id": "cmp_01"});
    let natives = [
        json!({"anthropic": anthropic, "openai": openai}),
        json!({"anthropic": anthropic}),
        json!({"openai": openai}),
        serde_json::Value::Null,
    ];
    let mut lines = Vec::new();
    for native in &natives {
        let state = compacted_loop(native);
        for model in ["gpt-4o", "claude-sonnet-4-5"] {
            for max_tokens in [3_000, 8_000, 200_000] {
                let mut builder = ContextBuilder::new();
                builder
                    .model(model)
                    .max_tokens(max_tokens)
                    .reserve_output(500)
                    .protocol(Protocol::Native)
                    .user_first(true);
                let result = builder.build(&state).expect("builds");
                let name = format!("compaction {native} {model} {max_tokens}");
                for (wire, request) in requests(&result) {
                    let request = request.unwrap_or_else(|e| panic!("{name} {wire}: {e}"));
                    let body = request.body.to_string();
                    let wire = match wire {
                        "anthropic-messages" if body.contains(r#""type":"compaction""#) => {
                            assert!(native.get("anthropic").is_some(), "{name}: {body}");
                            assert!(body.contains(&anthropic.to_string()), "verbatim: {body}");
                            "anthropic-beta-messages"
                        }
                        "openai-responses" if native.get("openai").is_some() => {
                            assert!(body.contains(&openai.to_string()), "verbatim: {body}");
                            wire
                        }
                        _ => {
                            assert!(body.contains("compaction_summary"), "{name} {wire}: {body}");
                            wire
                        }
                    };
                    lines.push(
                        json!({"wire": wire, "name": name, "body": request.body}).to_string(),
                    );
                }
            }
        }
    }
    validate(&python, &lines);
}

/// A tool loop of 30 steps whose first 20 a compaction folds, with the
/// providers' items `native` (or none).
fn compacted_loop(native: &serde_json::Value) -> MemoryState {
    let mut chunks =
        vec![json!({"id": "u1", "kind": "agent", "role": "user", "text": "Fix the failing test"})];
    for step in 0..30 {
        chunks.push(json!({"id": format!("c{step}"), "kind": "workflow", "tool": "read_file",
                           "call_id": format!("k{step}"), "data": {"path": format!("src/m{step}.rs")}}));
        chunks.push(json!({"id": format!("r{step}"), "kind": "environment", "tool": "read_file",
                           "call_id": format!("k{step}"), "text": "fn f() -> u32 { 41 }\n".repeat(20)}));
    }
    let mut compaction = json!({"id": "x1", "kind": "compaction", "covers": "r19",
                                "text": "Read src/m0..m19.rs; add() subtracts."});
    if !native.is_null() {
        compaction["native"] = native.clone();
    }
    chunks.push(compaction);
    let session = json!({"system_prompt": "You are a coding agent.", "chunks": chunks});
    MemoryState::from_json_value(session).expect("a valid session")
}
