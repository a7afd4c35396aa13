//! Counting never panics or hangs on hostile text, and stays exact.

use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use agent_context::{ContextBuilder, MemoryChunk, MemoryState, Role};

fn counters() -> [TiktokenCounter; 2] {
    [
        TiktokenCounter::new(Encoding::O200kBase).unwrap(),
        TiktokenCounter::new(Encoding::Cl100kBase).unwrap(),
    ]
}

#[test]
fn a_million_spaces() {
    // tiktoken-rs's own encode_ordinary panics on this with o200k_base.
    let spaces = " ".repeat(1_000_000);
    let followed = format!("{spaces}x");
    for counter in counters() {
        let alone = counter.count(&spaces);
        assert!(alone > 0 && alone < 100_000, "{alone}");
        // A run before a word gives its last space to the word: one more piece at most.
        let with_word = counter.count(&followed);
        assert!(
            with_word >= alone && with_word <= alone + 2,
            "{alone} vs {with_word}"
        );
    }
}

#[test]
fn five_megabytes_of_minified_json() {
    let mut json = String::from("[");
    let mut i = 0;
    while json.len() < 5_000_000 {
        json.push_str(&format!(
            "{{\"id\":{i},\"name\":\"item-{i}\",\"ok\":true,\"tags\":[\"a\",\"b\"]}},"
        ));
        i += 1;
    }
    json.push(']');
    for counter in counters() {
        let tokens = counter.count(&json);
        assert!(tokens > json.len() / 8 && tokens < json.len(), "{tokens}");
    }
}

#[test]
fn a_two_megabyte_line_without_whitespace() {
    let line = "x".repeat(2_000_000);
    let base64ish: String = (0..2_000_000u32)
        .map(|i| char::from(b"AZaz09+/"[(i * 7 % 8) as usize]))
        .collect();
    for counter in counters() {
        assert!(counter.count(&line) > 0);
        assert!(counter.count(&base64ish) > 0);
    }
}

#[test]
fn hostile_tool_output_builds_within_budget_exactly() {
    let state = MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "list the directory"))
        .with_chunk(
            MemoryChunk::new("t1", agent_context::ChunkKind::Workflow)
                .with_call_id("k")
                .with_tool("ls"),
        )
        .with_chunk(
            MemoryChunk::new("r1", agent_context::ChunkKind::Environment)
                .with_call_id("k")
                .with_text(format!("start{}end", " \t".repeat(300_000))),
        );
    let result = ContextBuilder::new()
        .model("gpt-4o")
        .max_tokens(1_000_000)
        .build(&state)
        .unwrap();
    assert_eq!(result.warnings.len(), 1, "a budget above the window warns");
    let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
    let recount: usize = result
        .messages
        .iter()
        .map(|m| 3 + counter.count(m.role.as_str()) + counter.count(&m.content))
        .sum::<usize>()
        + 3;
    assert_eq!(result.token_count, recount);
}

#[test]
fn special_token_text_is_ordinary_text() {
    for counter in counters() {
        // As a special token it would be exactly 1.
        assert!(counter.count("<|endoftext|>") >= 5);
        let tokens = counter.encode("<|endoftext|>");
        assert!(tokens.iter().all(|&t| t < 100_256), "{tokens:?}");
    }
}
